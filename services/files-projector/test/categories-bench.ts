/*
 * What api-categories costs in embedded mode (the memory read store) with many categories in use
 * (not a test; numbers printed, never asserted):
 *   node services/files-projector/test/categories-bench.ts
 * For each size, N categories each get one file (of 500 owners), projected by the files handler;
 * then the first page of api-categories is read five times, each timed on its own (the event loop
 * is blocked for about that long: the query is synchronous work between two awaits).
 */
import { makeMemoryReadStore } from '@docshare/read-store';
import { makeHistory } from '@docshare/projection/testing';
import { filesHandler } from '../src/projection.ts';
import { makeFilesQueries } from '../src/queries.ts';

const sizes = (process.env['BENCH_SIZES'] ?? '1000,10000,50000').split(',').map(Number);
for (const n of sizes) {
  const h = makeHistory();
  for (let i = 1; i <= n; i += 1) {
    h.category(i, `C${i}`);
    h.upload(1_000_000 + i, 1 + (i % 500), `f${i}`, { categoryId: i });
  }
  const store = makeMemoryReadStore();
  const projectStart = performance.now();
  await filesHandler(store)(h.records);
  const projected = performance.now() - projectStart;
  const queries = makeFilesQueries(store, 'http://docshare.example');
  const reads: string[] = [];
  for (let r = 0; r < 5; r += 1) {
    const start = performance.now();
    const page = await queries.categories({ page: 1, perPage: 100 });
    reads.push((performance.now() - start).toFixed(1));
    if (page.total !== n) throw new Error(`expected ${n} categories in use, got ${page.total}`);
  }
  console.log(`${n} categories in use: projected in ${projected.toFixed(0)} ms; api-categories page 1: ${reads.join(', ')} ms`);
}
