/**
 * npm run bench:extract-visible — how long after an upload is acknowledged its metadata, and then
 * its content, become searchable, per format, beside the ceiling the content path approaches: the
 * same file's extraction alone in a warm sandbox (libs/extract), in the same run.
 *
 *   npm run bench:extract-visible                       # embedded (npm start), 8 files per format
 *   BENCH_VISIBLE_FILES=20 BENCH_VISIBLE_CLIENTS=4 npm run bench:extract-visible
 *   DOCSHARE_TARGET=distributed ... (with the servers' env, as the distributed tests run)
 *
 * Each client uploads one file at a time and polls api-search (every 10 ms) for a title word and
 * for a word only the document's body holds. Numbers are printed, never asserted.
 */
import { randomBytes } from 'node:crypto';
import { makeExtractor } from '@docshare/extract';
import { makeCsv, makeDocx, makeHtml, makeMarkdown, makeOdt, makePdf, makePptx } from '@docshare/extract/testing';
import { api, type Api } from '../tests/support/client.ts';
import { startServer, TARGET } from '../tests/support/server.ts';

const FILES = Number(process.env.BENCH_VISIBLE_FILES ?? 8);
const CLIENTS = Number(process.env.BENCH_VISIBLE_CLIENTS ?? 1);
const POLL_MS = 10;
const TIMEOUT_MS = 60_000;

const word = (): string => `w${randomBytes(6).toString('hex').replace(/\d/g, (d) => 'ghijklmnop'[Number(d)] as string)}`;
const body = (w: string): string[] => Array.from({ length: 30 }, (_, i) =>
  i === 15 ? `In this paragraph the ${w} figures appear once.` : `Paragraph ${i} of the report talks about the budget, the staff and the season ahead.`);

const FORMATS: { name: string; fileName: string; contentType: string; make: (w: string) => Promise<Uint8Array> | Uint8Array }[] = [
  { name: 'pdf', fileName: 'r.pdf', contentType: 'application/pdf', make: (w) => makePdf(body(w)) },
  { name: 'docx', fileName: 'r.docx', contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', make: (w) => makeDocx(body(w)) },
  { name: 'odt', fileName: 'r.odt', contentType: 'application/vnd.oasis.opendocument.text', make: (w) => makeOdt(body(w)) },
  { name: 'pptx', fileName: 'r.pptx', contentType: 'application/vnd.openxmlformats-officedocument.presentationml.presentation', make: (w) => makePptx([body(w).slice(0, 15), body(w).slice(15)]) },
  { name: 'html', fileName: 'r.html', contentType: 'text/html', make: (w) => makeHtml(body(w)) },
  { name: 'markdown', fileName: 'r.md', contentType: 'text/markdown', make: (w) => makeMarkdown(body(w)) },
  { name: 'csv', fileName: 'r.csv', contentType: 'text/csv', make: (w) => makeCsv(body(w).map((line, i) => [String(i), line])) },
];

const quantile = (values: number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
};

const found = async (c: Api, token: string, term: string, fileId: string): Promise<boolean> => {
  const res = await c.search(token, { search: term });
  return res.status === 200 && (res.body.results as { id: string }[]).some((r) => r.id === fileId);
};

/** Milliseconds from `t0` until `term` finds `fileId`. */
const until = async (c: Api, token: string, term: string, fileId: string, t0: number): Promise<number> => {
  while (performance.now() - t0 < TIMEOUT_MS) {
    if (await found(c, token, term, fileId)) return performance.now() - t0;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  throw new Error(`${term} not searchable after ${TIMEOUT_MS} ms`);
};

const server = await startServer({ RATE_LIMIT_POINTS: '100000000', LOG_LEVEL: 'warn' });
const extractor = makeExtractor({ timeoutMs: 30_000, memoryMb: 512, maxChars: 100_000, maxBytes: 50 * 1024 * 1024 });
try {
  const c = api(server);
  const users = await Promise.all(Array.from({ length: CLIENTS }, () => c.register()));
  console.log(`# write → visible, ${TARGET} mode, ${FILES} files per format, ${CLIENTS} client(s), Node ${process.version}\n`);
  console.log('| format | files | ack → metadata p50 / p95 ms | ack → content p50 / p95 / max ms | ceiling: extraction alone p50 / p95 ms |');
  console.log('|---|---:|---:|---:|---:|');
  for (const format of FORMATS) {
    const meta: number[] = [];
    const content: number[] = [];
    const alone: number[] = [];
    let next = 0;
    await Promise.all(users.map(async (user) => {
      while (next < FILES) {
        next++;
        const [titleWord, bodyWord] = [word(), word()];
        const bytes = await format.make(bodyWord);
        const { fileId } = await c.uploadOk(user.token, { title: `Report ${titleWord}`, description: 'Minutes' }, bytes, format.fileName, format.contentType);
        const t0 = performance.now();
        const [m, b] = await Promise.all([until(c, user.token, titleWord, fileId, t0), until(c, user.token, bodyWord, fileId, t0)]);
        meta.push(m);
        content.push(b);
      }
    }));
    for (let i = 0; i < Math.min(FILES, 8); i++) {
      const outcome = await extractor.extract(await format.make(word()), { fileName: format.fileName, contentType: format.contentType });
      if (!outcome.ok) throw new Error(`${format.name}: ${outcome.reason} ${outcome.detail}`);
      alone.push(outcome.durationMs);
    }
    const f = (n: number): string => n.toFixed(0);
    console.log(`| ${format.name} | ${meta.length} | ${f(quantile(meta, 0.5))} / ${f(quantile(meta, 0.95))} | ${f(quantile(content, 0.5))} / ${f(quantile(content, 0.95))} / ${f(Math.max(...content))} | ${f(quantile(alone, 0.5))} / ${f(quantile(alone, 0.95))} |`);
  }
} finally {
  await extractor.close();
  await server.dispose();
}
