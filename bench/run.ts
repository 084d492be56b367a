/**
 * npm run bench: start time and memory of `npm start` with a 10,000-event log, and request
 * throughput of the main endpoints, measured side by side in one run.
 *
 *   npm run bench                 # default: 10,000 events
 *   BENCH_EVENTS=50000 npm run bench
 *
 * Seeds a data dir through the public API (so the log is what real use writes), then restarts the
 * server several times on it and reports the median time to a ready /healthz and the resident
 * memory after start (VmRSS of the server process).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const TARGET_EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const RESTARTS = Number(process.env.BENCH_RESTARTS ?? 5);
const main = join(import.meta.dirname, '..', 'services', 'standalone', 'src', 'main.ts');

const freePort = (): Promise<number> => new Promise((resolve, reject) => {
  const srv = createServer();
  srv.listen(0, '127.0.0.1', () => {
    const address = srv.address();
    srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
  });
});

interface Started { child: ChildProcess; readyMs: number; events: number }

const start = async (dataDir: string, port: number): Promise<Started> => {
  const began = performance.now();
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, PORT: String(port), DATA_DIR: dataDir, RATE_LIMIT_POINTS: '100000000', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let events = NaN;
  let buffered = '';
  child.stdout.on('data', (chunk: Buffer) => {
    if (!Number.isNaN(events)) return;
    buffered += chunk.toString();
    const line = buffered.split('\n').find((l) => l.includes('docshare listening'));
    if (line) events = (JSON.parse(line) as { events: number }).events;
  });
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (res.ok && !Number.isNaN(events)) return { child, readyMs: performance.now() - began, events };
    } catch { /* not listening yet */ }
    if (child.exitCode !== null) throw new Error('server exited during start');
    await new Promise((r) => setTimeout(r, 10));
  }
};

const stop = (child: ChildProcess): Promise<void> => new Promise((resolve) => {
  child.once('exit', () => resolve());
  child.kill('SIGTERM');
});

const rssMiB = async (pid: number): Promise<number> => {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
};

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
};

/** Runs `count` requests with `concurrency` in flight; returns requests per second. */
const load = async (count: number, concurrency: number, request: (i: number) => Promise<Response>): Promise<number> => {
  let next = 0;
  const began = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const res = await request(next++);
      await res.arrayBuffer();
      if (!res.ok) throw new Error(`request failed: ${res.status}`);
    }
  }));
  return count / ((performance.now() - began) / 1000);
};

const dataDir = await mkdtemp(join(tmpdir(), 'docshare-bench-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const json = (path: string, token: string | null, body: unknown, method = 'POST') => fetch(`${base}${path}`, {
  method, headers: { 'content-type': 'application/json', ...(token ? { 'x-authorization': `Bearer ${token}` } : {}) },
  body: JSON.stringify(body),
});

try {
  let server = await start(dataDir, port);
  const users: { token: string }[] = [];
  for (let i = 0; i < 20; i++) {
    const res = await json('/api/V1/users/api-register', null, { name: `User ${i}`, email: `u${i}@bench.test`, password: 'benchpassword' });
    users.push((await res.json()) as { token: string });
  }
  const words = ['quantum', 'history', 'biology', 'poetry', 'algebra', 'castles', 'rivers', 'engines', 'music', 'painting'];
  const files: number[] = [];
  const uploads = Math.max(20, Math.round(TARGET_EVENTS / 20));
  for (let i = 0; i < uploads; i++) {
    const form = new FormData();
    form.set('file', new Blob([`file ${i} `.repeat(50)], { type: 'text/plain' }), `f${i}.txt`);
    form.set('title', `${words[i % 10]} notes ${i}`);
    form.set('description', `Notes about ${words[(i * 3) % 10]} and ${words[(i * 7) % 10]}`);
    form.set('tags', `${words[(i * 5) % 10]},bench`);
    form.set('cc_license', 'CC BY');
    form.set('new_category_name', `Category ${i % 8}`);
    const res = await fetch(`${base}/api/V1/docs/api-upload`, {
      method: 'POST', headers: { 'x-authorization': `Bearer ${users[i % users.length]!.token}` }, body: form,
    });
    const body = (await res.json()) as { file_id: string };
    files.push(Number(body.file_id));
  }
  // The rest of the log: comments and views, as real use writes them.
  const seeded = 20 + 8 + uploads;
  // The throughput phase below writes 2,000 more (comments and views).
  await load(Math.max(0, TARGET_EVENTS - seeded - 2000), 8, (n) => {
    const fileId = files[n % files.length]!;
    return n % 4 === 0
      ? json('/api/V1/docs/api-comment', users[n % users.length]!.token, { file_id: fileId, comment: `comment ${n}` })
      : fetch(`${base}/docs/${fileId}`);
  });

  const token = users[0]!.token;
  const throughput = {
    'POST api-stats': await load(2000, 16, () => json('/api/V1/stats/api-stats', token, {})),
    'GET api-files': await load(2000, 16, () => fetch(`${base}/api/V1/users/api-files?user_id=2`, { headers: { 'x-authorization': `Bearer ${token}` } })),
    'POST api-search (fuzzy)': await load(2000, 16, (n) => json('/api/V1/stats/api-search', token, { search: n % 2 ? 'quantm notes' : 'castels' })),
    'POST api-comment (fsync)': await load(1000, 16, (n) => json('/api/V1/docs/api-comment', token, { file_id: files[n % files.length], comment: 'bench' })),
    'GET /docs/:id (view, fsync)': await load(1000, 16, (n) => fetch(`${base}/docs/${files[n % files.length]}`)),
  };
  await stop(server.child);

  const readyMs: number[] = [];
  const rss: number[] = [];
  let events = 0;
  for (let r = 0; r < RESTARTS; r++) {
    server = await start(dataDir, port);
    readyMs.push(server.readyMs);
    events = server.events;
    rss.push(await rssMiB(server.child.pid!));
    await stop(server.child);
  }

  console.log(`\ndocshare bench (${process.version}, ${new Date().toISOString()})`);
  console.log(`log: ${events} events (replayed into the read models at every start)`);
  console.log(`\nnpm start with that log, ${RESTARTS} restarts:`);
  console.log(`  time to ready /healthz  median ${median(readyMs).toFixed(0)} ms   (all: ${readyMs.map((x) => x.toFixed(0)).join(', ')})`);
  console.log(`  resident memory (RSS)   median ${median(rss).toFixed(1)} MiB (all: ${rss.map((x) => x.toFixed(1)).join(', ')})`);
  console.log('\nthroughput, same run, same server, 16 concurrent clients:');
  const slowest = Math.min(...Object.values(throughput));
  for (const [name, rps] of Object.entries(throughput)) {
    console.log(`  ${name.padEnd(28)} ${rps.toFixed(0).padStart(6)} req/s   ${(rps / slowest).toFixed(2)}x the slowest`);
  }
} finally {
  await rm(dataDir, { recursive: true, force: true });
}
