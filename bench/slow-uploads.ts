/**
 * node bench/slow-uploads.ts — the slow-upload finding of issue 17, replayed against `npm start`:
 * BENCH_SLOW_N uploads (default 500) from BENCH_SLOW_USERS accounts open at once and trickle one
 * byte every BENCH_SLOW_EVERY_MS (2 s: far below the minimum pace), while another user asks
 * api-stats every 200 ms. Prints how each upload ended (its status, or closed unanswered), how the
 * other user's requests went, and the server's most open descriptors; uploads still open after
 * BENCH_SLOW_HOLD_S (90 s) are counted as such and closed. Run it under the finding's
 * descriptor limit, which the server inherits:
 *
 *   bash -c 'ulimit -n 1024; node bench/slow-uploads.ts'
 *
 * Numbers are printed, never asserted.
 */
import net from 'node:net';
import { api, type RegisteredUser } from '../tests/support/client.ts';
import { sampleOf, scrape } from '../tests/support/metrics.ts';
import { startServer } from '../tests/support/server.ts';

const N = Number(process.env.BENCH_SLOW_N ?? 500);
const USERS = Number(process.env.BENCH_SLOW_USERS ?? 100);
const EVERY_MS = Number(process.env.BENCH_SLOW_EVERY_MS ?? 2_000);
/** Uploads still open after this long are counted as such and closed (before the fix, none ever ended). */
const HOLD_S = Number(process.env.BENCH_SLOW_HOLD_S ?? 90);

const server = await startServer({ RATE_LIMIT_POINTS: '10000000', LOG_LEVEL: 'warn' });
try {
  const c = api(server);
  const users: RegisteredUser[] = [];
  for (let i = 0; i < USERS; i++) users.push(await c.register());
  const other = await c.register();

  const fields = Object.entries({ title: 't', description: 'd', tags: 'x', cc_license: 'CC BY', new_category_name: 'Slow' })
    .map(([name, value]) => `--B\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`).join('');
  const slowUpload = (user: RegisteredUser): Promise<string> => new Promise((resolve) => {
    const socket = net.connect(server.port, '127.0.0.1');
    let held = false;
    const bound = setTimeout(() => {
      held = true;
      socket.destroy();
    }, HOLD_S * 1000);
    let text = '';
    socket.on('data', (chunk: Buffer) => { text += chunk.toString('latin1'); });
    socket.on('error', () => {});
    const trickle = setInterval(() => { if (socket.writable) socket.write('A'); }, EVERY_MS);
    socket.on('close', () => {
      clearInterval(trickle);
      clearTimeout(bound);
      resolve(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? (held ? `still open after ${HOLD_S} s` : 'closed unanswered'));
    });
    socket.write(['POST /api/V1/docs/api-upload HTTP/1.1', 'Host: localhost', `X-Authorization: Bearer ${user.token}`,
      'Content-Type: multipart/form-data; boundary=B', 'Content-Length: 1000000', '', ''].join('\r\n')
      + `${fields}--B\r\nContent-Disposition: form-data; name="file"; filename="slow.bin"\r\n\r\nAAAA`);
  });

  let maxFds = 0;
  const others: Record<string, number> = {};
  let running = true;
  const sampling = (async () => {
    while (running) {
      const fds = sampleOf(await scrape(server, 'gateway').catch(() => ''), 'process_open_fds') ?? 0;
      maxFds = Math.max(maxFds, fds);
      const res = await c.stats(other.token).catch(() => ({ status: 'failed' }));
      others[res.status] = (others[res.status] ?? 0) + 1;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();

  const started = performance.now();
  const outcomes: Record<string, number> = {};
  await Promise.all(Array.from({ length: N }, async (_, i) => {
    const outcome = await slowUpload(users[i % users.length] as RegisteredUser);
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  }));
  const seconds = (performance.now() - started) / 1000;
  running = false;
  await sampling;
  const healthy = (await c.raw('GET', '/healthz')).status;
  console.log(JSON.stringify({ uploads: N, users: USERS, byteEveryMs: EVERY_MS, outcomes, lastEndedAfterS: Number(seconds.toFixed(1)),
    otherUsersStats: others, serverMaxOpenFds: maxFds, healthzAfter: healthy }, null, 2));
  const fatal = server.output().split('\n').filter((line) => /EMFILE|"level":(50|60)/.test(line));
  if (fatal.length > 0) console.log(`server errors: ${fatal.length}, the first: ${fatal[0]?.slice(0, 300)}`);
} finally {
  await server.dispose();
}
