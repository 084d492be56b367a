/**
 * Fair extraction, measured: user A uploads six ~12 KB "million-page" PDFs (each runs until the
 * time budget kills it), then user B uploads one small text file; how long after B's upload is
 * acknowledged is B's text searchable, and how many of A's PDFs had ended by then?
 *
 *   node services/text-extractor/test/fairness-bench.ts                 # embedded (npm start)
 *   EXTRACT_TIMEOUT_MS=10000 node services/text-extractor/test/fairness-bench.ts
 *   DOCSHARE_TARGET=distributed ... (with the servers' env, as the distributed tests run)
 *
 * The server runs with its default budgets and pool size unless EXTRACT_* variables are set here
 * (they are passed through). Numbers are printed, never asserted.
 */
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { millionPagePdf } from '@docshare/extract/testing';
import { api } from '../../../tests/support/client.ts';
import { sampleOf, scrape } from '../../../tests/support/metrics.ts';
import { startServer, TARGET } from '../../../tests/support/server.ts';

const HOSTILE = Number(process.env.BENCH_HOSTILE_FILES ?? 6);
const POLL_MS = 50;
const GIVE_UP_MS = 15 * 60_000;

const word = (): string => `w${randomBytes(6).toString('hex').replace(/\d/g, (d) => 'ghijklmnop'[Number(d)] as string)}`;
const extractVars = Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('EXTRACT_')));

/** A's PDFs whose extraction has ended (any outcome), from the extractor's counter. */
const pdfsEnded = async (server: Awaited<ReturnType<typeof startServer>>): Promise<number> => {
  const text = await scrape(server, 'text-extractor');
  let total = 0;
  for (const outcome of ['ok', 'timeout', 'memory', 'corrupt', 'error', 'encrypted', 'too_large', 'unsupported_type']) {
    total += sampleOf(text, 'docshare_extractions_total', { format: 'pdf', outcome }) ?? 0;
  }
  return total;
};

const server = await startServer({ RATE_LIMIT_POINTS: '100000000', LOG_LEVEL: 'warn', ...extractVars });
try {
  const c = api(server);
  const [a, b] = [await c.register(), await c.register()];
  const pdf = millionPagePdf();
  for (let i = 0; i < HOSTILE; i++) {
    await c.uploadOk(a.token, { title: `Huge ${i}`, description: 'A million pages' }, pdf, `huge-${i}.pdf`, 'application/pdf');
  }
  const secret = word();
  const { fileId } = await c.uploadOk(b.token, { title: 'Notes', description: 'Plain notes' }, new TextEncoder().encode(`The ${secret} is in the text.`), 'notes.txt', 'text/plain');
  const t0 = performance.now();
  for (;;) {
    const res = await c.search(b.token, { search: secret });
    if (res.status === 200 && (res.body.results as { id: string }[]).some((r) => r.id === fileId)) break;
    if (performance.now() - t0 > GIVE_UP_MS) throw new Error(`B's text not searchable after ${GIVE_UP_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  const waitedMs = performance.now() - t0;
  const ended = await pdfsEnded(server);
  console.log(`# fair extraction, ${TARGET} mode, Node ${process.version}, ${availableParallelism()} cores, ${JSON.stringify(extractVars)}`);
  console.log(`${HOSTILE} hostile PDFs (${pdf.length} bytes each) from A, then one text file from B:`);
  console.log(`B's text searchable ${(waitedMs / 1000).toFixed(1)} s after its upload was acknowledged; A's PDFs ended by then: ${ended} of ${HOSTILE}`);
} finally {
  await server.dispose();
}
