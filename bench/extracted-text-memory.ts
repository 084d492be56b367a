/**
 * What deleted files of big extracted text cost the embedded process after a restart (issue 17):
 * N cycles of upload → extraction → delete of a ~1.2 KB ODT that inflates to ~93,000 characters,
 * then a restart, then the process's memory (from its own /metrics) and the event log's size.
 *
 *   node bench/extracted-text-memory.ts                  # 200 files
 *   BENCH_FILES=450 BENCH_CLIENTS=4 node bench/extracted-text-memory.ts
 *
 * Memory is read after a full garbage collection (through the server's inspector), so what is
 * counted is what the process retains. Numbers are printed, never asserted.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { makeOdt } from '@docshare/extract/testing';
import { api, randomWord } from '../tests/support/client.ts';
import { startServer, type Server } from '../tests/support/server.ts';

const FILES = Number(process.env.BENCH_FILES ?? 200);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 4);
const SENTENCE = 'the committee reviewed the quarterly figures and the plans for next year';

/**
 * The server's memory once a full garbage collection has run: through its inspector (the server is
 * started with `--inspect=127.0.0.1:0`), `HeapProfiler.collectGarbage` then `process.memoryUsage()`.
 * Without the collection, garbage left by the start-up replay would count as retained.
 */
const memory = async (server: Server): Promise<Record<'rssMiB' | 'heapUsedMiB' | 'externalMiB', number>> => {
  const spawned = server.output().split('--- spawn').at(-1) ?? '';
  const url = /Debugger listening on (ws:\/\/\S+)/.exec(spawned)?.[1];
  if (!url) throw new Error('the server printed no inspector URL');
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.addEventListener('open', resolve, { once: true });
    socket.addEventListener('error', reject, { once: true });
  });
  let id = 0;
  type Answer = { id?: number; result?: { result?: { value?: string } } };
  const call = (method: string, params: object = {}): Promise<Answer> => new Promise((resolve) => {
    const mine = ++id;
    const onMessage = (message: MessageEvent): void => {
      const answer = JSON.parse(String(message.data)) as Answer;
      if (answer.id !== mine) return;
      socket.removeEventListener('message', onMessage);
      resolve(answer);
    };
    socket.addEventListener('message', onMessage);
    socket.send(JSON.stringify({ id: mine, method, params }));
  });
  try {
    await call('HeapProfiler.collectGarbage');
    await call('HeapProfiler.collectGarbage');
    const answer = await call('Runtime.evaluate', { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true });
    const usage = JSON.parse(answer.result?.result?.value ?? '{}') as NodeJS.MemoryUsage;
    const mib = (bytes: number): number => Math.round((bytes / 2 ** 20) * 10) / 10;
    return { rssMiB: mib(usage.rss), heapUsedMiB: mib(usage.heapUsed), externalMiB: mib(usage.external) };
  } finally {
    socket.close();
  }
};

/** Waits for the restarted server's replay and the extractor's catch-up to settle. */
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 3_000));

const logBytes = async (server: Server): Promise<number> => (await stat(path.join(server.dataDir, 'events', 'events.log'))).size;

const server = await startServer({ RATE_LIMIT_POINTS: '100000000', LOG_LEVEL: 'warn', NODE_OPTIONS: '--inspect=127.0.0.1:0' });
try {
  const c = api(server);
  const user = await c.register();
  await server.restart();
  await settle();
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
  await settle();
  const after = { ...(await memory(server)), logBytes: await logBytes(server) };
  const perFile = (a: number, b: number): number => Math.round((a - b) / FILES);
  console.log(JSON.stringify({
    files: FILES, odtBytes, charactersKeptPerFile: characters,
    baseline, afterRestart: after,
    perFileKiB: {
      rss: Math.round(((after.rssMiB - baseline.rssMiB) * 1024) / FILES * 10) / 10,
      heapUsed: Math.round(((after.heapUsedMiB - baseline.heapUsedMiB) * 1024) / FILES * 10) / 10,
      log: Math.round(perFile(after.logBytes, baseline.logBytes) / 102.4) / 10,
    },
  }, null, 2));
} finally {
  await server.dispose();
}
