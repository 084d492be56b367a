/**
 * npm run bench:idempotency — what an Idempotency-Key costs a write, beside its ceiling: the same
 * write without a key, in the same run, on the same server. Also what a replay costs (the answer
 * read back and, for an upload, the retried body hashed), and whether the cost grows with the
 * number of keys kept.
 *
 *   npm run bench:idempotency                                  # embedded (npm start)
 *   BENCH_IDEM_N=500 BENCH_IDEM_BYTES=262144 npm run bench:idempotency
 *   DOCSHARE_TARGET=distributed ... (with the servers' env, as the distributed tests run)
 *
 * One client, one request at a time (latency, not throughput). Numbers are printed, never asserted.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { api, DEFAULT_UPLOAD, type Res } from '../tests/support/client.ts';
import { startServer, TARGET } from '../tests/support/server.ts';

const N = Number(process.env.BENCH_IDEM_N ?? 200);
const BYTES = Number(process.env.BENCH_IDEM_BYTES ?? 64 * 1024);

const quantile = (values: number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
};

const server = await startServer({ RATE_LIMIT_POINTS: '10000000', LOG_LEVEL: 'warn' });
try {
  const c = api(server);
  const user = await c.register();
  const bytes = randomBytes(BYTES);
  const { fileId } = await c.uploadOk(user.token);

  /** Sends one request, adds its time to `into`; anything but a 201 ends the run. */
  const once = async (into: number[], label: string, send: () => Promise<Res>): Promise<void> => {
    const started = performance.now();
    const res = await send();
    into.push(performance.now() - started);
    if (res.status !== 201) throw new Error(`${label}: HTTP ${res.status} ${res.text}`);
  };
  const time = async (label: string, send: (i: number) => Promise<Res>): Promise<number[]> => {
    const ms: number[] = [];
    for (let i = 0; i < N; i++) await once(ms, label, () => send(i));
    return ms;
  };
  const row = (label: string, ms: number[], ceiling?: number[]): string => {
    const p50 = quantile(ms, 0.5);
    const delta = ceiling ? p50 - quantile(ceiling, 0.5) : 0;
    const vs = ceiling ? ` (${delta >= 0 ? '+' : '−'}${Math.abs(delta).toFixed(2)} ms against the ceiling's p50)` : '';
    return `${label.padEnd(44)} p50 ${p50.toFixed(2).padStart(7)} ms  p95 ${quantile(ms, 0.95).toFixed(2).padStart(7)} ms${vs}`;
  };
  const keyed = (key: string) => ({ headers: { 'Idempotency-Key': key } });

  // Warm both paths first.
  await time('warm', () => c.comment(user.token, { file_id: fileId, comment: 'warm' }));
  const keys: string[] = [];
  const uploadPlain = await time('upload', () => c.upload(user.token, DEFAULT_UPLOAD, bytes, 'b.bin', 'application/octet-stream'));
  const uploadKeyed = await time('upload+key', (i) => c.upload(user.token, DEFAULT_UPLOAD, bytes, 'b.bin', 'application/octet-stream', keyed((keys[i] = randomUUID()))));
  const uploadReplay = await time('upload replay', (i) => c.upload(user.token, DEFAULT_UPLOAD, bytes, 'b.bin', 'application/octet-stream', keyed(keys[i] ?? '')));
  const commentPlain = await time('comment', () => c.comment(user.token, { file_id: fileId, comment: 'plain' }));
  const commentKeys: string[] = [];
  const commentKeyed = await time('comment+key', (i) => c.json('POST', '/api/V1/docs/api-comment', user.token, { file_id: fileId, comment: 'keyed' }, keyed((commentKeys[i] = randomUUID()))));
  const commentReplay = await time('comment replay', (i) => c.json('POST', '/api/V1/docs/api-comment', user.token, { file_id: fileId, comment: 'keyed' }, keyed(commentKeys[i] ?? '')));
  // Again once 5 N more keys are kept (keyed comments on another file), on a fresh file, beside the
  // same write without a key: a cost that grew with the keys kept would show here.
  const { fileId: other } = await c.uploadOk(user.token);
  for (let i = 0; i < 5 * N; i++) await c.json('POST', '/api/V1/docs/api-comment', user.token, { file_id: other, comment: 'filler' }, keyed(randomUUID()));
  const { fileId: fresh } = await c.uploadOk(user.token);
  const laterPlain: number[] = [];
  const laterKeyed: number[] = [];
  for (let i = 0; i < N; i++) {
    // Interleaved, so both see the same file stream length.
    await once(laterPlain, 'comment', () => c.comment(user.token, { file_id: fresh, comment: 'plain' }));
    await once(laterKeyed, 'comment+key', () => c.json('POST', '/api/V1/docs/api-comment', user.token, { file_id: fresh, comment: 'keyed' }, keyed(randomUUID())));
  }
  console.log(`\nIdempotency-Key cost (${TARGET}, ${N} requests each, one at a time, uploads of ${BYTES} bytes)\n`);
  console.log(row('upload, no key (ceiling)', uploadPlain));
  console.log(row('upload, new key', uploadKeyed, uploadPlain));
  console.log(row('upload, replayed (body hashed, answer read)', uploadReplay, uploadPlain));
  console.log(row('comment, no key (ceiling)', commentPlain));
  console.log(row('comment, new key', commentKeyed, commentPlain));
  console.log(row('comment, replayed', commentReplay, commentPlain));
  console.log(row(`comment, no key, ${keys.length + 7 * N} keys kept`, laterPlain));
  console.log(row(`comment, new key, ${keys.length + 7 * N} keys kept`, laterKeyed, laterPlain));
} finally {
  await server.dispose();
}
