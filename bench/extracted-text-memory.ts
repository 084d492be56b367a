/**
 * What deleted files of big extracted text cost the embedded process after a restart (issue 17):
 * N cycles of upload → extraction → delete of a ~1.2 KB ODT that inflates to ~93,000 characters,
 * then a restart, then the process's memory (from its own /metrics) and the event log's size.
 *
 *   node bench/extracted-text-memory.ts                  # 200 files
 *   BENCH_FILES=450 BENCH_CLIENTS=4 node bench/extracted-text-memory.ts
 *
 * Memory is sampled 5 times a second apart after the restart's replay, the lowest kept (garbage of
 * the replay not yet collected inflates the others). Numbers are printed, never asserted.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { makeOdt } from '@docshare/extract/testing';
import { api, randomWord } from '../tests/support/client.ts';
import { startServer, type Server } from '../tests/support/server.ts';

const FILES = Number(process.env.BENCH_FILES ?? 200);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 4);
const SENTENCE = 'the committee reviewed the quarterly figures and the plans for next year';

/** The lowest of 5 samples of a gauge of the process's /metrics, in MiB. */
const memory = async (server: Server): Promise<{ rssMiB: number; heapMiB: number }> => {
  const read = async (): Promise<{ rss: number; heap: number }> => {
    const text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
    const gauge = (name: string): number => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    return { rss: gauge('process_resident_memory_bytes'), heap: gauge('nodejs_heap_size_used_bytes') };
  };
  let best = { rss: Infinity, heap: Infinity };
  for (let i = 0; i < 5; i++) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const { rss, heap } = await read();
    best = { rss: Math.min(best.rss, rss), heap: Math.min(best.heap, heap) };
  }
  const mib = (bytes: number): number => Math.round((bytes / 2 ** 20) * 10) / 10;
  return { rssMiB: mib(best.rss), heapMiB: mib(best.heap) };
};

const logBytes = async (server: Server): Promise<number> => (await stat(path.join(server.dataDir, 'events', 'events.log'))).size;

const server = await startServer({ RATE_LIMIT_POINTS: '100000000', LOG_LEVEL: 'warn' });
try {
  const c = api(server);
  const user = await c.register();
  await server.restart();
  const baseline = { ...(await memory(server)), logBytes: await logBytes(server) };

  let next = 0;
  let characters = 0;
  let odtBytes = 0;
  const client = async (): Promise<void> => {
    while (next < FILES) {
      next++;
      const odt = makeOdt([randomWord(12), ...Array.from({ length: 1_250 }, () => SENTENCE)]);
      odtBytes = odt.length;
      const { fileId } = await c.uploadOk(user.token, { title: 'Minutes' }, odt, 'minutes.odt', 'application/vnd.oasis.opendocument.text');
      for (;;) {
        const page = await c.view(fileId);
        const kept = /Status: <strong>extracted<\/strong> \((\d+) characters/.exec(page.text);
        if (kept) {
          characters = Number(kept[1]);
          break;
        }
        if (/Status: <strong>failed/.test(page.text)) throw new Error(`extraction of ${fileId} failed`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const deleted = await c.del(user.token, fileId);
      if (deleted.status !== 200) throw new Error(`delete of ${fileId}: ${deleted.status}`);
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, client));

  await server.restart();
  const after = { ...(await memory(server)), logBytes: await logBytes(server) };
  const perFile = (a: number, b: number): number => Math.round((a - b) / FILES);
  console.log(JSON.stringify({
    files: FILES, odtBytes, charactersKeptPerFile: characters,
    baseline, afterRestart: after,
    perFileKiB: {
      rss: Math.round(((after.rssMiB - baseline.rssMiB) * 1024) / FILES * 10) / 10,
      heap: Math.round(((after.heapMiB - baseline.heapMiB) * 1024) / FILES * 10) / 10,
      log: Math.round(perFile(after.logBytes, baseline.logBytes) / 102.4) / 10,
    },
  }, null, 2));
} finally {
  await server.dispose();
}
