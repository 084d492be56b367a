/**
 * npm run bench:store-commands: the MongoDB commands each API call costs, counted by the services
 * themselves (docshare_store_commands_total{command,collection}, the driver's command monitoring),
 * against a running distributed stack (`npm run stack`).
 *
 * Phases, each at a steady rate (RATE per second for SECONDS): comments, 4 KiB uploads, then reads
 * (api-files, api-stats, api-search, a view page, api-download). Each phase scrapes every service's
 * /metrics before, drives the calls, waits until the outbox and every projector have caught up
 * (docshare_outbox_backlog_events and docshare_consumer_lag at 0), scrapes again, and prints the
 * commands per call by service and by command/collection. Amortised: everything the services sent
 * while the phase ran counts (batches, watermarks, checkpoints, the relay's polls, the scrapes);
 * the idle rate measured first says how much of that is time rather than calls.
 *
 * Env: GATEWAY_URL (http://127.0.0.1:$PORT, 8080), SERVICE_URLS (comma-separated service base URLs
 * serving /metrics; default STACK_SERVICE_PORT..+4, 18081), RATE (20), SECONDS (30), READS (300),
 * USERS (20), IDLE_SECONDS (10). The gateway's rate limit must allow RATE per second from one address.
 */
import { Api, fileInput, SEARCH_TERMS, type User } from './stack/api.ts';
import { expectOk, pacedLoad, request, sleep, summarizeErrors } from './stack/load.ts';

const env = process.env;
const num = (name: string, fallback: number): number => {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!(value > 0)) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
};
const gateway = env.GATEWAY_URL ?? `http://127.0.0.1:${env.PORT ?? 8080}`;
const firstServicePort = num('STACK_SERVICE_PORT', 18081);
const services = env.SERVICE_URLS
  ? env.SERVICE_URLS.split(',').map((u) => u.trim()).filter(Boolean)
  : [0, 1, 2, 3, 4].map((i) => `http://127.0.0.1:${firstServicePort + i}`);
const rate = num('RATE', 20);
const seconds = num('SECONDS', 30);
const reads = num('READS', 300);
const userCount = num('USERS', 20);
const idleSeconds = num('IDLE_SECONDS', 10);
const METRIC = 'docshare_store_commands_total';

/** One scrape: service → "command collection" → count, plus the lags. */
interface Scrape { commands: Map<string, Map<string, number>>; lag: number; at: number }

const labelsOf = (text: string): Record<string, string> =>
  Object.fromEntries([...text.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]));

const scrape = async (): Promise<Scrape> => {
  const commands = new Map<string, Map<string, number>>();
  let lag = 0;
  await Promise.all(services.map(async (base) => {
    const answer = expectOk(await request('GET', `${base}/metrics`), `${base}/metrics`);
    const counts = new Map<string, number>();
    for (const line of answer.text.split('\n')) {
      const match = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) continue;
      const [, name, labelText = '', value] = match;
      const labels = labelsOf(labelText);
      if (name === METRIC) counts.set(`${labels.command} ${labels.collection || '-'}`, Number(value));
      if (name === 'docshare_consumer_lag' || name === 'docshare_outbox_backlog_events') lag += Number(value);
    }
    commands.set(base, counts);
  }));
  return { commands, lag, at: performance.now() };
};

/** What each service calls itself (/healthz), else its URL. */
const names = new Map<string, string>();
const nameServices = async (): Promise<void> => {
  await Promise.all(services.map(async (base) => {
    const health = await request('GET', `${base}/healthz`).catch(() => null);
    const parsed = health ? (JSON.parse(health.text || '{}') as { service?: unknown }) : {};
    names.set(base, typeof parsed.service === 'string' ? parsed.service : base);
  }));
};

/** after − before, per service and command/collection (only what moved). */
const delta = (before: Scrape, after: Scrape): Map<string, Map<string, number>> => {
  const out = new Map<string, Map<string, number>>();
  for (const [base, counts] of after.commands) {
    const was = before.commands.get(base) ?? new Map<string, number>();
    const moved = new Map<string, number>();
    for (const [key, value] of counts) if (value - (was.get(key) ?? 0) > 0) moved.set(key, value - (was.get(key) ?? 0));
    out.set(base, moved);
  }
  return out;
};

const sum = (counts: Map<string, number>): number => [...counts.values()].reduce((a, b) => a + b, 0);

/** Waits until nothing is left to publish or project (the lags are 0 twice in a row), then a little more. */
const settle = async (): Promise<void> => {
  let zeros = 0;
  for (let i = 0; i < 240 && zeros < 2; i++) {
    await sleep(500);
    zeros = (await scrape()).lag === 0 ? zeros + 1 : 0;
  }
  await sleep(1_000);
};

interface PhaseResult { name: string; calls: number; seconds: number; perCall: Map<string, Map<string, number>>; idle: Map<string, number> }
const results: PhaseResult[] = [];
let idlePerSecond = new Map<string, number>();

const phase = async (name: string, calls: number, perSecond: number, op: (n: number) => Promise<void>): Promise<void> => {
  const before = await scrape();
  const stop = pacedLoad(perSecond, 64, op);
  await sleep((calls / perSecond) * 1000);
  const load = await stop();
  await settle();
  const after = await scrape();
  if (Object.keys(load.errorKinds).length > 0) console.log(`  ${name}: ${load.errors} errors (${summarizeErrors(load.errorKinds)})`);
  const elapsed = (after.at - before.at) / 1000;
  const moved = delta(before, after);
  const perCall = new Map([...moved].map(([base, counts]) => [base, new Map([...counts].map(([k, v]) => [k, v / Math.max(1, load.ok)]))]));
  const idle = new Map([...idlePerSecond].map(([base, r]) => [base, (r * elapsed) / Math.max(1, load.ok)]));
  results.push({ name, calls: load.ok, seconds: elapsed, perCall, idle });
  print(results.at(-1)!);
};

const fmt = (n: number): string => (n >= 10 ? n.toFixed(1) : n.toFixed(2));

const print = ({ name, calls, seconds: s, perCall, idle }: PhaseResult): void => {
  const total = sum(new Map([...perCall].map(([base, c]) => [base, sum(c)])));
  const idleTotal = [...idle.values()].reduce((a, b) => a + b, 0);
  console.log(`\n${name}: ${calls} calls in ${s.toFixed(1)} s — ${fmt(total)} store commands per call (of which the idle rate would give ${fmt(idleTotal)})`);
  for (const base of services) {
    const counts = perCall.get(base) ?? new Map<string, number>();
    if (counts.size === 0) continue;
    console.log(`  ${names.get(base) ?? base}: ${fmt(sum(counts))} (idle ${fmt(idle.get(base) ?? 0)})`);
    for (const [key, v] of [...counts].sort((a, b) => b[1] - a[1])) if (v >= 0.005) console.log(`    ${fmt(v).padStart(6)}  ${key}`);
  }
};

// ---- run ------------------------------------------------------------------------------------------

const api = new Api(gateway);
await nameServices();
console.log(`store commands per API call: gateway ${gateway}, services ${[...names.values()].join(', ')}; ${rate}/s for ${seconds} s per write phase, ${reads} reads each`);
const run = Date.now().toString(36);
const users: User[] = [];
for (let i = 0; i < userCount; i++) users.push(await api.register(`sc${run}u${i}`, `sc${run}u${i}@bench.example`));
const user = (n: number): User => users[n % users.length]!;
// A file of each user's to comment on, and to read.
const seedFiles: number[] = [];
for (let i = 0; i < users.length; i++) seedFiles.push(await api.upload(user(i).token, fileInput(i)));
await settle();

{
  const before = await scrape();
  await sleep(idleSeconds * 1000);
  const after = await scrape();
  const s = (after.at - before.at) / 1000;
  const moved = delta(before, after);
  idlePerSecond = new Map([...moved].map(([base, counts]) => [base, sum(counts) / s]));
  console.log(`\nidle: ${fmt([...idlePerSecond.values()].reduce((a, b) => a + b, 0))} store commands per second (${s.toFixed(1)} s, 2 scrapes)`);
  for (const [base, counts] of moved) {
    if (counts.size === 0) continue;
    console.log(`  ${names.get(base) ?? base}: ${fmt(idlePerSecond.get(base) ?? 0)}/s — ${[...counts].map(([k, v]) => `${k} ${fmt(v / s)}`).join(', ')}`);
  }
}

const writes = Math.round(rate * seconds);
await phase('comment', writes, rate, async (n) => {
  await api.comment(user(n).token, seedFiles[(n + 1) % seedFiles.length]!, `comment ${n} on ${run}`);
});
const uploaded: number[] = [];
await phase('upload (4 KiB)', writes, rate, async (n) => {
  uploaded.push(await api.upload(user(n).token, fileInput(1_000 + n)));
});
await phase('api-files', reads, rate, async (n) => {
  expectOk(await api.rawFiles(user(n).token, user(n + 1).userId), 'api-files');
});
await phase('api-stats', reads, rate, async (n) => {
  expectOk(await api.rawStats(user(n).token), 'api-stats');
});
await phase('api-search', reads, rate, async (n) => {
  await api.search(user(n).token, SEARCH_TERMS[n % SEARCH_TERMS.length]!);
});
await phase('view page', reads, rate, async (n) => {
  expectOk(await request('GET', `${gateway}/docs/${uploaded[n % uploaded.length] ?? seedFiles[0]}`), 'view page');
});
await phase('api-download', reads, rate, async (n) => {
  const owner = n % users.length;
  await api.downloadUrl(user(owner).token, seedFiles[owner]!);
});

console.log('\nsummary: store commands per call (amortised, all services)');
console.log(`  ${'call'.padEnd(16)} ${'total'.padStart(7)} ${services.map((base) => (names.get(base) ?? base).padStart(17)).join('')}`);
for (const r of results) {
  const per = services.map((base) => sum(r.perCall.get(base) ?? new Map<string, number>()));
  console.log(`  ${r.name.padEnd(16)} ${fmt(per.reduce((a, b) => a + b, 0)).padStart(7)} ${per.map((v) => fmt(v).padStart(17)).join('')}`);
}
