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
 *
 * Each start also reports how long the replay took (`replayedMs` of its "docshare listening" line:
 * the log replayed into fresh, empty read models, what a rebuild does): the rebuild time issue 24
 * compares before and after encryption, without the HTTP listener's start around it. Beside the
 * wall-clock figures, the server's CPU time (to ready; per request in each throughput measure):
 * on a shared machine the neighbours' load moves rates far more than it moves CPU per request.
 *
 * Then, on one more start, the view measures of issue 21 (bench/stack/views.ts): BENCH_VIEWS
 * (4000) views of one file against as many spread over 16 files, 16 clients, alternating in two
 * rounds (views/s, p50/p99, hot ÷ spread); views paced at BENCH_VIEW_RATE (500/s) for
 * BENCH_VIEW_SECONDS (4) and the lag until `api-stats` total_views and today's `api-daily` views
 * count each acknowledged view (p50/p99); and a 366-day `api-daily`, BENCH_DAILY_READS (500)
 * requests one at a time, beside `api-stats` read the same way on the same server (its ceiling:
 * one document of the same read model behind the same auth; embedded, the store cannot be asked
 * directly).
 *
 * Then the measures of issue 24 (bench/stack/leaving.ts) on a start of their own: the export of a
 * user with BENCH_LEAVING_FILES (1000) files, 202 → ready, and that user's erasure with
 * BENCH_LEAVING_COMMENTS (10000) comments written, 202 → done. BENCH_ONLY=leaving runs only those
 * (no seeding, no restarts); BENCH_LEAVING_FILES=0 skips them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Api, fileInput } from './stack/api.ts';
import { closedLoop, expectOk, percentile, summarizeErrors, type LoadResult } from './stack/load.ts';
import { leaving, leavingLines, type LeavingOptions, type LeavingResult } from './stack/leaving.ts';
import { ackedToCounted, hotVsSpread, utcDaysEnding, type AckedToCounted, type ViewLoad } from './stack/views.ts';

const TARGET_EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const RESTARTS = Number(process.env.BENCH_RESTARTS ?? 5);
const VIEWS = Number(process.env.BENCH_VIEWS ?? 4000);
const VIEW_RATE = Number(process.env.BENCH_VIEW_RATE ?? 500);
const VIEW_SECONDS = Number(process.env.BENCH_VIEW_SECONDS ?? 4);
const DAILY_READS = Number(process.env.BENCH_DAILY_READS ?? 500);
const LEAVING_FILES = Number(process.env.BENCH_LEAVING_FILES ?? 1000);
const LEAVING_COMMENTS = Number(process.env.BENCH_LEAVING_COMMENTS ?? 10_000);
const ONLY = process.env.BENCH_ONLY ?? '';
if (!['', 'leaving'].includes(ONLY)) throw new Error(`BENCH_ONLY=${ONLY}: the measure that runs alone is leaving`);
const main = join(import.meta.dirname, '..', 'services', 'standalone', 'src', 'main.ts');

const freePort = (): Promise<number> => new Promise((resolve, reject) => {
  const srv = createServer();
  srv.listen(0, '127.0.0.1', () => {
    const address = srv.address();
    srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
  });
});

interface Started { child: ChildProcess; readyMs: number; events: number; replayedMs: number }

const start = async (dataDir: string, port: number): Promise<Started> => {
  const began = performance.now();
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, PORT: String(port), DATA_DIR: dataDir, RATE_LIMIT_POINTS: '100000000', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let events = NaN;
  let replayedMs = NaN;
  let buffered = '';
  child.stdout.on('data', (chunk: Buffer) => {
    if (!Number.isNaN(events)) return;
    buffered += chunk.toString();
    const line = buffered.split('\n').find((l) => l.includes('docshare listening'));
    if (!line) return;
    const listening = JSON.parse(line) as { events: number; replayedMs: number };
    events = listening.events;
    replayedMs = listening.replayedMs;
  });
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (res.ok && !Number.isNaN(events)) return { child, readyMs: performance.now() - began, events, replayedMs };
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

/**
 * CPU time (user + system, ms) the process has used, its reaped children included: on a shared,
 * loaded machine wall-clock rates move with the neighbours' load, CPU per request much less, so
 * before/after comparisons (issue 24: encryption's cost) read this column.
 */
const cpuMs = async (pid: number): Promise<number> => {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces), from field 3: utime is 14, stime 15, cutime 16, cstime 17.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
  return ticks * 10; // USER_HZ is 100 on Linux
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

/** Throughput, start and view measures: everything but issue 24's. */
const coreMeasures = async () => {
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
  // The throughput phase below writes 2,500 more (uploads, comments and views).
  await load(Math.max(0, TARGET_EVENTS - seeded - 2500), 8, (n) => {
    const fileId = files[n % files.length]!;
    return n % 4 === 0
      ? json('/api/V1/docs/api-comment', users[n % users.length]!.token, { file_id: fileId, comment: `comment ${n}` })
      : fetch(`${base}/docs/${fileId}`);
  });

  const token = users[0]!.token;
  const pid = server.child.pid!;
  /** A load's req/s and the server's CPU ms per request meanwhile. */
  const measured = async (count: number, concurrency: number, request: (i: number) => Promise<Response>) => {
    const before = await cpuMs(pid);
    const rps = await load(count, concurrency, request);
    return { rps, cpu: (await cpuMs(pid) - before) / count };
  };
  const throughput = {
    'POST api-stats': await measured(2000, 16, () => json('/api/V1/stats/api-stats', token, {})),
    'GET api-files': await measured(2000, 16, () => fetch(`${base}/api/V1/users/api-files?user_id=2`, { headers: { 'x-authorization': `Bearer ${token}` } })),
    'POST api-search (fuzzy)': await measured(2000, 16, (n) => json('/api/V1/stats/api-search', token, { search: n % 2 ? 'quantm notes' : 'castels' })),
    // Spread over the 20 users: one user may have 8 uploads in flight (HTTP_MAX_UPLOADS_PER_USER).
    'POST api-upload (fsync)': await measured(500, 16, (n) => {
      const form = new FormData();
      form.set('file', new Blob([`throughput ${n} `.repeat(50)], { type: 'text/plain' }), `t${n}.txt`);
      form.set('title', `${words[n % 10]} throughput ${n}`);
      form.set('description', `Throughput file about ${words[(n * 3) % 10]}`);
      form.set('tags', `${words[(n * 5) % 10]},bench`);
      form.set('cc_license', 'CC BY');
      form.set('new_category_name', `Category ${n % 8}`);
      return fetch(`${base}/api/V1/docs/api-upload`, { method: 'POST', headers: { 'x-authorization': `Bearer ${users[n % users.length]!.token}` }, body: form });
    }),
    'POST api-comment (fsync)': await measured(1000, 16, (n) => json('/api/V1/docs/api-comment', token, { file_id: files[n % files.length], comment: 'bench' })),
    'GET /docs/:id (view, fsync)': await measured(1000, 16, (n) => fetch(`${base}/docs/${files[n % files.length]}`)),
  };
  await stop(server.child);

  const readyMs: number[] = [];
  const replayedMs: number[] = [];
  const startCpuMs: number[] = [];
  const rss: number[] = [];
  let events = 0;
  for (let r = 0; r < RESTARTS; r++) {
    server = await start(dataDir, port);
    readyMs.push(server.readyMs);
    replayedMs.push(server.replayedMs);
    startCpuMs.push(await cpuMs(server.child.pid!));
    events = server.events;
    rss.push(await rssMiB(server.child.pid!));
    await stop(server.child);
  }

  // The view measures (issue 21) write thousands of views: after the restarts, so the log they
  // replayed is the one seeded above.
  server = await start(dataDir, port);
  const api = new Api(base);
  const failed: string[] = [];
  const attempt = async <T>(name: string, fn: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await fn();
    } catch (error) {
      failed.push(`${name}: ${error instanceof Error ? error.message : String(error)}`);
      return undefined;
    }
  };
  // Owners of their own: nothing else views their files during these measures.
  const viewOwner = await api.register('View Owner', 'views@bench.test');
  const spreadFiles: number[] = [];
  for (let i = 0; i < 16; i++) spreadFiles.push(await api.upload(viewOwner.token, fileInput(i)));
  const hotFile = spreadFiles[0]!;
  const views = await attempt('hot vs spread', () => hotVsSpread({
    clients: 16, count: VIEWS, hot: () => api.viewPage(hotFile), spread: (n) => api.viewPage(spreadFiles[n % spreadFiles.length]!),
  }));
  const lagOwner = await api.register('Lag Owner', 'lag@bench.test');
  const lagFile = await api.upload(lagOwner.token, fileInput(16));
  const today = utcDaysEnding(new Date(), 1)[0]!;
  const counted = await attempt('view acknowledged → counted', () => ackedToCounted({
    rate: VIEW_RATE, seconds: VIEW_SECONDS, pollMs: 5, timeoutMs: 30_000,
    view: async () => { expectOk(await api.viewPage(lagFile), 'view page'); },
    reads: {
      'api-stats total_views': async () => Number((await api.stats(lagOwner.token)).total_views),
      'api-daily views (today)': async () => Number((await api.daily(lagOwner.token, today, today)).totals.views),
    },
  }));
  const year = utcDaysEnding(new Date(), 366);
  const oneAtATime = async (what: string, send: () => Promise<{ status: number; text: string }>): Promise<LoadResult> => {
    await closedLoop({ clients: 1, count: Math.ceil(DAILY_READS / 10), op: async () => { expectOk(await send(), what); } });
    const r = await closedLoop({ clients: 1, count: DAILY_READS, op: async () => { expectOk(await send(), what); } });
    if (r.errors > 0) throw new Error(`${r.errors} of ${DAILY_READS} failed: ${summarizeErrors(r.errorKinds)}`);
    return r;
  };
  const daily = await attempt('api-daily 366 days', () => oneAtATime('api-daily', () => api.rawDaily(viewOwner.token, year[0]!, year.at(-1)!)));
  const dailyCeiling = await attempt('api-stats (ceiling)', () => oneAtATime('api-stats', () => api.rawStats(viewOwner.token)));
  await stop(server.child);

  console.log(`\ndocshare bench (${process.version}, ${new Date().toISOString()})`);
  console.log(`log: ${events} events (replayed into the read models at every start)`);
  console.log(`\nnpm start with that log, ${RESTARTS} restarts:`);
  console.log(`  time to ready /healthz  median ${median(readyMs).toFixed(0)} ms   (all: ${readyMs.map((x) => x.toFixed(0)).join(', ')})`);
  console.log(`  rebuild (log replayed)  median ${median(replayedMs).toFixed(0)} ms   (all: ${replayedMs.map((x) => x.toFixed(0)).join(', ')}; fresh read models, before the listener)`);
  console.log(`  CPU used to ready       median ${median(startCpuMs).toFixed(0)} ms   (all: ${startCpuMs.map((x) => x.toFixed(0)).join(', ')}; the server process, loading its code included)`);
  console.log(`  resident memory (RSS)   median ${median(rss).toFixed(1)} MiB (all: ${rss.map((x) => x.toFixed(1)).join(', ')})`);
  console.log('\nthroughput, same run, same server, 16 concurrent clients:');
  const slowest = Math.min(...Object.values(throughput).map((t) => t.rps));
  for (const [name, { rps, cpu }] of Object.entries(throughput)) {
    console.log(`  ${name.padEnd(28)} ${rps.toFixed(0).padStart(6)} req/s   ${(rps / slowest).toFixed(2)}x the slowest   server CPU ${cpu.toFixed(2)} ms/request`);
  }
  const ms = (latencies: number[], p: number): string => `${percentile(latencies, p).toFixed(1).padStart(6)} ms`;
  const viewLine = (name: string, r: ViewLoad): string =>
    `  ${name.padEnd(28)} ${r.rate.toFixed(0).padStart(6)} views/s   p50 ${ms(r.latencies, 50)}   p99 ${ms(r.latencies, 99)}`
    + (r.errors > 0 ? `   ${r.errors} errors (${r.serverErrors} 5xx): ${summarizeErrors(r.errorKinds)}` : '');
  console.log(`\nviews, one hot file vs the same views spread over 16 files (same run, 16 concurrent clients, ${VIEWS} views each, alternating in 2 rounds):`);
  if (views) {
    console.log(viewLine('GET /docs/:id one file', views.hot));
    console.log(viewLine('GET /docs/:id over 16 files', views.spread));
    console.log(`  ${'hot ÷ spread'.padEnd(28)} ${(views.hot.rate / views.spread.rate).toFixed(2).padStart(6)}x        (goal: ≥ 0.8x, and ≥ 1,000 views/s on one file)`);
  }
  const countedLines = (c: AckedToCounted): void => {
    console.log(`\nview acknowledged → counted (${c.acked} views of one file paced at ${VIEW_RATE}/s for ${VIEW_SECONDS} s, achieved ${c.rate.toFixed(0)}/s; each read polled every 5 ms):`);
    for (const [name, r] of Object.entries(c.counted)) {
      console.log(`  ${name.padEnd(28)} p50 ${ms(r.lags, 50)}   p99 ${ms(r.lags, 99)}   max ${ms(r.lags, 100)}`
        + `${r.unseen > 0 ? `   ${r.unseen} never counted within 30 s` : ''}   (goal: p99 ≤ 1 s)`);
    }
    if (c.failed > 0 || Object.keys(c.errorKinds).length > 0) console.log(`  ${c.failed} views failed; ${summarizeErrors(c.errorKinds, 5)}`);
  };
  if (counted) countedLines(counted);
  console.log(`\napi-daily over 366 days, ${DAILY_READS} requests one at a time, beside api-stats read the same way (its ceiling: one document of the same read model):`);
  if (daily) console.log(`  ${'GET api-daily (366 days)'.padEnd(28)} p50 ${ms(daily.latencies, 50)}   p99 ${ms(daily.latencies, 99)}   (goal: p99 ≤ 20 ms)`);
  if (dailyCeiling) console.log(`  ${'POST api-stats (ceiling)'.padEnd(28)} p50 ${ms(dailyCeiling.latencies, 50)}   p99 ${ms(dailyCeiling.latencies, 99)}`);
  if (daily && dailyCeiling) {
    console.log(`  ${'api-daily ÷ api-stats'.padEnd(28)} p50 ${(percentile(daily.latencies, 50) / percentile(dailyCeiling.latencies, 50)).toFixed(2)}x   p99 ${(percentile(daily.latencies, 99) / percentile(dailyCeiling.latencies, 99)).toFixed(2)}x`);
  }
  if (failed.length > 0) console.log(`\nfailed measures:\n${failed.map((f) => `  - ${f}`).join('\n')}`);
};

/** Issue 24: an export and an erasure (bench/stack/leaving.ts), on a start of their own. */
const leavingMeasures = async () => {
  const server = await start(dataDir, port);
  const options: LeavingOptions = { files: LEAVING_FILES, comments: LEAVING_COMMENTS, clients: 8, timeoutMs: 300_000, tag: String(Date.now()) };
  let result: LeavingResult | undefined;
  let failure = '';
  try {
    result = await leaving(new Api(base), options);
  } catch (error) {
    failure = error instanceof Error ? error.message : String(error);
  } finally {
    await stop(server.child);
  }
  console.log(`\nleaving (issue 24): one user with ${LEAVING_FILES} files who wrote ${LEAVING_COMMENTS} comments, exported then erased:`);
  if (result) for (const line of leavingLines(options, result)) console.log(line);
  else console.log(`  failed: ${failure}`);
};

try {
  if (ONLY === '') await coreMeasures();
  if (LEAVING_FILES > 0) await leavingMeasures();
} finally {
  await rm(dataDir, { recursive: true, force: true });
}
