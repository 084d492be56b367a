/**
 * Index rate of the search projector's write paths, one document at a time against batches (not a test):
 *   set -a; . ~/.cache/docshare/data/stack.env; set +a
 *   node libs/search-index/test/bulk-bench.ts [docs=5000] [batch=200] [rounds=3]
 * (a) the old per-event path: get, then upsert (refreshOnWrite: true, the default), one document at a time;
 * (b) upsertMany in batches plus one refresh() per batch; (b+) the same with the getMany the batch
 * projector does first; (c) the ceiling: raw `_bulk` requests of the same sources through the
 * Elasticsearch client, batched alike, one refresh per batch; (c1) one `_bulk` of every document, one refresh.
 * Each run fills a fresh index behind its own alias `docshare-bulkbench-<hex>-<n>`; all are deleted at the end.
 */
import { randomBytes } from 'node:crypto';
import { Client } from '@elastic/elasticsearch';
import { makeElasticsearchSearchIndex, toSource } from '../src/elasticsearch-search-index.ts';
import type { ElasticsearchSearchIndex } from '../src/elasticsearch-search-index.ts';
import type { SearchDoc } from '../src/port.ts';

const url = process.env.ELASTICSEARCH_URL;
if (!url) throw new Error('ELASTICSEARCH_URL is not set; e.g. set -a; . ~/.cache/docshare/data/stack.env; set +a');
const node = url;
const DOCS = Number(process.argv[2] ?? 5000);
const BATCH = Number(process.argv[3] ?? 200);
const ROUNDS = Number(process.argv[4] ?? 3);

// A deterministic corpus: pseudo-random words over a 400-word vocabulary (as elasticsearch-bench.ts).
let seed = 42;
const next = (n: number): number => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed % n;
};
const LETTERS = 'bcdfghjklmnpqrstvwxz';
const VOWELS = 'aeiou';
const vocabulary = Array.from({ length: 400 }, () =>
  Array.from({ length: 4 + next(6) }, (_, i) => (i % 2 === 0 ? LETTERS[next(20)] : VOWELS[next(5)])).join(''));
const words = (n: number): string => Array.from({ length: n }, () => vocabulary[next(vocabulary.length)]).join(' ');
const corpus: SearchDoc[] = Array.from({ length: DOCS }, (_, i) => ({
  id: `b${i}`,
  title: words(3 + next(4)),
  description: words(10 + next(20)),
  tags: Array.from({ length: 1 + next(4) }, () => words(1)),
  category: ['Science', 'Arts', 'Law', 'Medicine', 'Engineering', 'History', 'Music', 'Sport'][next(8)] as string,
  categoryId: 1 + (i % 8),
  license: 'CC BY',
  content: '',
  ownerId: 1 + next(50),
  visible: next(20) !== 0,
  uploadedAt: new Date(Date.UTC(2024, 0, 1) + i * 3_600_000).toISOString(),
}));
const batches: SearchDoc[][] = [];
for (let i = 0; i < corpus.length; i += BATCH) batches.push(corpus.slice(i, i + BATCH));

const admin = new Client({ node });
const prefix = `docshare-bulkbench-${randomBytes(4).toString('hex')}`;
const opened: ElasticsearchSearchIndex[] = [];
let count = 0;

async function fresh(): Promise<{ index: ElasticsearchSearchIndex; alias: string }> {
  const alias = `${prefix}-${++count}`;
  const index = await makeElasticsearchSearchIndex({ node, alias });
  opened.push(index);
  return { index, alias };
}

async function timed(run: (index: ElasticsearchSearchIndex, alias: string) => Promise<void>): Promise<number> {
  const { index, alias } = await fresh();
  const began = performance.now();
  await run(index, alias);
  const ms = performance.now() - began;
  // Every run must have stored and made searchable the whole corpus.
  const { count: stored } = await admin.count({ index: alias });
  if (stored !== DOCS) throw new Error(`${alias}: ${stored} documents searchable, expected ${DOCS}`);
  return ms;
}

const rate = (ms: number): number => Math.round((DOCS * 1000) / ms);

async function report(label: string, rounds: number, run: (index: ElasticsearchSearchIndex, alias: string) => Promise<void>): Promise<void> {
  const rates: number[] = [];
  for (let i = 0; i < rounds; i++) rates.push(rate(await timed(run)));
  rates.sort((a, b) => a - b);
  const median = rates[Math.floor(rates.length / 2)] as number;
  console.log(`${label}: ${median} docs/s${rounds > 1 ? ` (median of ${rounds}: ${rates.join(', ')})` : ''}`);
}

try {
  console.log(`${DOCS} documents, batches of ${BATCH}, Elasticsearch at ${node}`);
  await report('(a) get + upsert per document, refreshOnWrite true (old path)', 1, async (index) => {
    for (const doc of corpus) {
      const current = await index.get(doc.id);
      if (!current || current.version < 1) await index.upsert(doc, 1);
    }
  });
  await report(`(b) upsertMany per ${BATCH} + refresh() per batch`, ROUNDS, async (index) => {
    for (const batch of batches) {
      await index.upsertMany(batch.map((doc) => ({ doc, version: 1 })));
      await index.refresh();
    }
  });
  await report(`(b+) getMany + upsertMany per ${BATCH} + refresh() per batch (batch projector)`, ROUNDS, async (index) => {
    for (const batch of batches) {
      const current = await index.getMany(batch.map((doc) => doc.id));
      await index.upsertMany(batch.filter((doc) => !current.has(doc.id)).map((doc) => ({ doc, version: 1 })));
      await index.refresh();
    }
  });
  await report(`(c) raw _bulk per ${BATCH} (client directly) + _refresh per batch`, ROUNDS, async (_, alias) => {
    for (const batch of batches) {
      const response = await admin.bulk({
        index: alias,
        operations: batch.flatMap((doc) => [{ index: { _id: doc.id, version: 1, version_type: 'external' as const } }, toSource(doc)]),
      });
      if (response.errors) throw new Error('raw _bulk: some items failed');
      await admin.indices.refresh({ index: alias });
    }
  });
  await report(`(c1) one raw _bulk of all ${DOCS} + one _refresh`, ROUNDS, async (_, alias) => {
    const response = await admin.bulk({
      index: alias,
      operations: corpus.flatMap((doc) => [{ index: { _id: doc.id, version: 1, version_type: 'external' as const } }, toSource(doc)]),
    });
    if (response.errors) throw new Error('raw _bulk: some items failed');
    await admin.indices.refresh({ index: alias });
  });
} finally {
  for (const index of opened) await index.close();
  const found = await admin.indices.get({ index: `${prefix}-*`, expand_wildcards: 'all' });
  const names = Object.keys(found);
  if (names.length > 0) await admin.indices.delete({ index: names });
  await admin.close();
}
