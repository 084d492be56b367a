/**
 * The three reads of issue 18 item 5 against a running `npm run stack`, each beside its ceiling
 * from bench/stack/ceilings.ts in the same run (ratio = docshare ÷ ceiling):
 *
 *   stats     api-stats req/s                  vs  directStatsQuery (its findOne on the store)
 *   download  a signed link's bytes, MiB/s     vs  minioCeiling's getObject of the same file
 *   rebuild   npm run rebuild -- <model> ev/s  vs  eventLogRead (the event log read in pages)
 *
 *   DATA_DIR=<the stack's> PORT=<its gateway> node bench/reads.ts seed|stats|download|rebuild ...
 *
 * `seed` registers users and uploads files (READS_FILES, 2000; READS_BIG_MIB, 512, for the
 * download) and keeps what the others need in DATA_DIR/reads-seed.json. Env: READS_CLIENTS (16),
 * READS_SECONDS (10), READS_ROUNDS (3: stats alternates docshare and the ceiling that many times).
 */
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { createWriteStream, openAsBlob } from 'node:fs';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Api, SEARCH_TERMS, fileInput, type User } from './stack/api.ts';
import { connectMongo, directStatsQuery, drain, eventLogRead, minioCeiling } from './stack/ceilings.ts';
import { closedLoop, expectOk, percentile, type LoadResult } from './stack/load.ts';
import { parseEnvFile } from '../infra/stack/services.ts';

const ROOT = join(import.meta.dirname, '..');
const dataDir = resolve(process.env.DATA_DIR ?? './data');
const base = `http://127.0.0.1:${process.env.PORT ?? 8080}`;
const serverEnv = await parseEnvFile(join(dataDir, 'infra', 'stack.env'));
const seedFile = join(dataDir, 'reads-seed.json');
const clients = Number(process.env.READS_CLIENTS ?? 16);
const seconds = Number(process.env.READS_SECONDS ?? 10);
const rounds = Number(process.env.READS_ROUNDS ?? 3);
const api = new Api(base);
/** Another gateway of the same stack to measure beside (e.g. the previous version's: READS_COMPARE=http://127.0.0.1:<port>). */
const compare = process.env.READS_COMPARE ? new Api(process.env.READS_COMPARE) : undefined;
const MiB = 1024 * 1024;

interface Seed { users: User[]; bigFileId: number; bigMiB: number; bigPath: string }

const brief = (name: string, r: LoadResult): string =>
  `${name}: ${r.rate.toFixed(0)}/s (${r.ok} in ${r.seconds.toFixed(1)} s), p50 ${percentile(r.latencies, 50).toFixed(2)} ms, p99 ${percentile(r.latencies, 99).toFixed(2)} ms${r.errors ? `, ${r.errors} errors ${JSON.stringify(r.errorKinds)}` : ''}`;

const loop = async (op: (n: number) => Promise<unknown>): Promise<LoadResult> => {
  await closedLoop({ clients, seconds: 2, op: (_c, n) => op(n).then(() => undefined) });
  return closedLoop({ clients, seconds, op: (_c, n) => op(n).then(() => undefined) });
};

const seed = async (): Promise<void> => {
  const runId = randomBytes(3).toString('hex');
  const users: User[] = [];
  for (let i = 0; i < 32; i++) users.push(await api.register(`Reads ${i}`, `r${i}-${runId}@bench.test`));
  const files = Number(process.env.READS_FILES ?? 2000);
  const ids: number[] = [];
  const r = await closedLoop({
    clients, count: files + files / 4,
    op: async (c, n) => {
      const user = users[(c + n) % users.length]!;
      if (n % 5 === 4 && ids.length > 0) await api.comment(user.token, ids[n % ids.length]!, `comment ${n}: ${SEARCH_TERMS[n % SEARCH_TERMS.length]}`);
      else ids.push(await api.upload(user.token, fileInput(n)));
    },
    progress: (done, errors) => console.log(`seed: ${done} (${errors} errors)`),
  });
  console.log(brief('seed writes', r));
  const bigMiB = Number(process.env.READS_BIG_MIB ?? 512);
  const bigPath = join(dataDir, 'reads-big.bin');
  const out = createWriteStream(bigPath);
  for (let i = 0; i < bigMiB; i++) if (!out.write(randomBytes(MiB))) await new Promise<void>((r) => out.once('drain', () => r()));
  await new Promise<void>((r) => out.end(() => r()));
  const bigFileId = await api.upload(users[0]!.token, {
    title: 'big reads file', description: 'a large upload', tags: 'bench,big', category: 'Big files',
    body: await openAsBlob(bigPath, { type: 'application/octet-stream' }), fileName: 'big.bin',
  }, 3_600_000);
  await writeFile(seedFile, JSON.stringify({ users, bigFileId, bigMiB, bigPath } satisfies Seed));
  console.log(`seeded: ${ids.length} files, big file ${bigFileId}`);
};

const load = async (): Promise<Seed> => JSON.parse(await readFile(seedFile, 'utf8')) as Seed;

const statsRun = async (): Promise<void> => {
  const { users } = await load();
  const mongo = await connectMongo(serverEnv.MONGO_URL!);
  const query = await directStatsQuery(mongo.db(process.env.MONGO_READ_DB ?? 'docshare_read'));
  const ratios: number[] = [];
  for (let i = 0; i < rounds; i++) {
    if (compare) console.log(brief(`api-stats via ${compare.base}`, await loop(async (n) => expectOk(await compare.rawStats(users[n % users.length]!.token), 'api-stats'))));
    const viaApi = await loop(async (n) => expectOk(await api.rawStats(users[n % users.length]!.token), 'api-stats'));
    const direct = await loop((n) => query(users[n % users.length]!.userId));
    console.log(brief('api-stats', viaApi));
    console.log(brief('directStatsQuery', direct));
    ratios.push(viaApi.rate / direct.rate);
    console.log(`ratio ${ (viaApi.rate / direct.rate).toFixed(2)}`);
  }
  console.log(`api-stats ÷ its store query: ${ratios.map((r) => r.toFixed(2)).join(', ')}`);
  await mongo.close();
};

const downloadRun = async (): Promise<void> => {
  const { users, bigFileId, bigMiB, bigPath } = await load();
  const size = (await stat(bigPath)).size;
  const fetchAll = async (url: string): Promise<number> => {
    const t0 = performance.now();
    const res = await fetch(url);
    if (!res.ok || !res.body) throw new Error(`download: ${res.status}`);
    const got = await drain(res.body);
    if (got !== size) throw new Error(`download: ${got} bytes, expected ${size}`);
    return (performance.now() - t0) / 1000;
  };
  for (let i = 0; i < rounds; i++) {
    const url = await api.downloadUrl(users[0]!.token, bigFileId);
    if (compare) {
      const old = await fetchAll(url.replace(new URL(url).origin, compare.base));
      console.log(`download via ${compare.base} ${(bigMiB / old).toFixed(0)} MiB/s (${old.toFixed(2)} s)`);
    }
    let t0 = performance.now();
    const res = await fetch(url);
    if (!res.ok || !res.body) throw new Error(`download: ${res.status}`);
    const got = await drain(res.body);
    const down = (performance.now() - t0) / 1000;
    if (got !== size) throw new Error(`download: ${got} bytes, expected ${size}`);
    t0 = performance.now();
    const direct = await minioCeiling(serverEnv, `reads-ceiling-${randomBytes(3).toString('hex')}`, bigPath, size);
    console.log(`download ${(bigMiB / down).toFixed(0)} MiB/s (${down.toFixed(2)} s); MinIO get ${(bigMiB / direct.getSeconds).toFixed(0)} MiB/s (${direct.getSeconds.toFixed(2)} s); ratio ${(direct.getSeconds / down).toFixed(2)}`);
  }
};

const rebuildRun = async (models: string[]): Promise<void> => {
  const mongo = await connectMongo(serverEnv.MONGO_URL!);
  const log = await eventLogRead(mongo.db(process.env.MONGO_COMMAND_DB ?? 'docshare'));
  console.log(`eventLogRead: ${log.events} events in ${log.seconds.toFixed(2)} s, ${log.rate.toFixed(0)} events/s`);
  await mongo.close();
  for (const model of models) {
    const child = spawn(process.execPath, [join(ROOT, 'infra', 'rebuild.ts'), model], { cwd: ROOT, env: { ...process.env, DATA_DIR: dataDir }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => { out += c.toString(); });
    const t0 = performance.now();
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    const line = out.split('\n').find((l) => l.startsWith(`${model}:`)) ?? out;
    const events = Number(/(\d+) events replayed/.exec(line)?.[1] ?? NaN);
    const own = Number(/([\d.]+) s\s*$/.exec(line)?.[1] ?? NaN);
    console.log(`rebuild ${model} (exit ${code}, process ${((performance.now() - t0) / 1000).toFixed(1)} s): ${line.trim()}`);
    console.log(`  ${(events / own).toFixed(0)} events/s vs the log read ${log.rate.toFixed(0)}: ratio ${(events / own / log.rate).toFixed(2)}`);
  }
};

const [what = '', ...rest] = process.argv.slice(2);
if (what === 'seed') await seed();
else if (what === 'stats') await statsRun();
else if (what === 'download') await downloadRun();
else if (what === 'rebuild') await rebuildRun(rest.length ? rest : ['stats', 'files', 'search']);
else if (what === 'clean') await rm(seedFile, { force: true });
else {
  console.error('usage: node bench/reads.ts seed|stats|download|rebuild [models]');
  process.exit(2);
}
process.exit(0);
