/**
 * npm run bench:stack: the distributed counterpart of `npm run bench`. Starts real servers
 * (infra/local: Kafka, Elasticsearch, MinIO, Redis and the MongoDB stand-in, FerretDB 2 on
 * PostgreSQL + DocumentDB, run as one server named `ferretdb`; without containers, on the default
 * ports + BENCH_STACK_PORT_OFFSET under a temp dir) and one distributed docshare instance (six
 * services), seeds it through the public API, then measures, side by side in one run, each
 * docshare figure and the ceiling it should approach (the servers asked directly, with the clients
 * and queries the services use; the store named by its buildInfo):
 *
 *   1. sustained mixed writes (4 KiB uploads and comments)   vs  Kafka producer, the store's insert/upsert
 *   2. read-your-writes: ack → visible in search, file list and stats, under ~100 writes/s
 *   3. api-files req/s                                        vs  its query sent to the store
 *   4. api-stats req/s                                        vs  its query, a bare express, one proxy hop
 *   5. api-search req/s                                       vs  its query sent to Elasticsearch
 *   5b. views of one hot file                                 vs  the same views spread over 16 files
 *       (two docs-command replicas, each behind a gateway of its own: bench/stack/replica.ts; 5xx counted)
 *       366-day api-daily latency                             vs  its find of the 366 `daily_users` ids on the store
 *   6. big upload / download MiB/s                            vs  MinIO put / get
 *   6b. resumable upload (issue 22) of BENCH_STACK_RESUMABLE_MIB by the SDK through a docs-command with
 *       BLOB_PUBLIC_URL (presigned MinIO part URLs) behind a gateway of its own: MiB/s vs a
 *       minio-js multipart put (same parts, same parallelism); gateway and docs-command CPU
 *       meanwhile; `complete` p50/p99; RateLimit-Remaining drop for one upload; killed at 40% and
 *       resumed: bytes re-sent beyond the missing ones (bench/stack/resumable.ts)
 *   7. npm run rebuild -- stats|files|search events/s         vs  reading the event log
 *   8. what each operation costs, for sizing (docs/ops.md): upload, comment, view, download,
 *      api-stats, api-files and api-search, each alone at a steady rate for BENCH_STACK_COST_SECONDS;
 *      CPU time of every service and of every server's whole process tree (bench/stack/procs.ts:
 *      ferretdb = bash + PostgreSQL with its backends + FerretDB) from the first request until the
 *      pipeline (projectors and text extractor) caught up, the idle rate over the same span taken
 *      off; and each service's `docshare_store_commands_total` from /metrics (bench/stack/cost.ts)
 *   9. webhooks (issue 23), only with BENCH_STACK_ONLY=webhooks (bench/stack/webhooks.ts): event
 *      recorded → first delivery p50/p99 at BENCH_WEBHOOK_RATE events/s over BENCH_WEBHOOK_ENDPOINTS
 *      endpoints on a loopback receiver vs the bench's own signed POSTs to it; the others' p99 with
 *      one endpoint hanging; the dispatcher's RSS over a soak with an endpoint answering 500
 *
 *  10. leaving (issue 24), only with BENCH_STACK_ONLY=leaving (bench/stack/leaving.ts): the export of a
 *      user with BENCH_LEAVING_FILES (1000) files, 202 → ready, and that user's erasure with
 *      BENCH_LEAVING_COMMENTS (10000) comments written, 202 → done, as `npm run bench` measures embedded
 *
 * and the memory of each service (RSS) and server (PSS of its process tree). Prints a
 * `measure | docshare | ceiling | ratio` table (ratio = docshare ÷ ceiling), then section 8's
 * tables: CPU-s per 1,000 operations per process, what one core carries, store commands per
 * operation; nothing is asserted. Everything it started is stopped at the end, on failure and on
 * Ctrl-C.
 *
 *   npm run bench:stack
 *   BENCH_STACK_FILES=300 BENCH_STACK_WRITE_SECONDS=30 BENCH_STACK_READ_SECONDS=5 BENCH_STACK_BIG_MIB=64 npm run bench:stack
 *
 * Env (defaults): BENCH_STACK_FILES (10000 seeded 4 KiB files, plus a comment per 4 files),
 * BENCH_STACK_USERS (32), BENCH_STACK_CLIENTS (16 concurrent clients), BENCH_STACK_WRITE_SECONDS
 * (300), BENCH_STACK_READ_SECONDS (10, each read measure and each ceiling), BENCH_STACK_RYW_SECONDS
 * (3 × read seconds, at least 10), BENCH_STACK_VIEWS (4000 views of each kind in 5b), BENCH_STACK_DAILY_READS
 * (500 api-daily requests and as many store queries, one at a time), BENCH_STACK_RYW_RATE (100 background writes/s),
 * BENCH_STACK_RYW_PROBERS (4 authors probing at once), BENCH_STACK_RYW_TIMEOUT_SECONDS (30),
 * BENCH_STACK_POLL_MS (5), BENCH_STACK_BIG_MIB (512), BENCH_STACK_KAFKA_JAVA_RECORDS (50000; 0
 * skips Kafka's own perf test), BENCH_STACK_RESUMABLE_MIB (1024; 0 skips 6b), BENCH_STACK_RESUMABLE_UPLOADS (5
 * uploads and as many direct puts, plus the killed one), BENCH_STACK_RESUMABLE_PARALLEL (4 parts at
 * once), BENCH_STACK_ONLY=resumable (only 6b: the seeding, the reads, the writes, the costs, the big file and
 * the rebuilds skipped), BENCH_STACK_ONLY=webhooks (only section 9; the instance runs with
 * WEBHOOK_ALLOW_PRIVATE_NETWORKS=true, WEBHOOK_ALLOW_HTTP=true and WEBHOOK_RETRY_SCHEDULE=BENCH_WEBHOOK_RETRY_SCHEDULE
 * (1s,2s,4s,8s,16s); knobs BENCH_WEBHOOK_ENDPOINTS (1000 users, one endpoint each), BENCH_WEBHOOK_RATE (200
 * events/s), BENCH_WEBHOOK_LOAD_SECONDS (60, each of the two runs), BENCH_WEBHOOK_HANG_SECONDS (30),
 * BENCH_WEBHOOK_HANG_RATE (20 of the BENCH_WEBHOOK_RATE events/s go to the hanging endpoint), BENCH_WEBHOOK_SETTLE_SECONDS (60: longest wait
 * for a run's deliveries), BENCH_WEBHOOK_CEILING_SECONDS (10), BENCH_WEBHOOK_SOAK_SECONDS (3600; 0 skips the soak),
 * BENCH_WEBHOOK_SOAK_RATE (20/s to the others), BENCH_WEBHOOK_FAIL_RATE (5/s to the failing endpoint),
 * BENCH_WEBHOOK_SAMPLE_SECONDS (10), BENCH_WEBHOOK_RECEIVER_PORT (18240)), BENCH_STACK_CATCHUP_SECONDS (600: longest wait for the pipeline to
 * catch up after the seeding, the writes and the read-your-writes phase), BENCH_STACK_REBUILD_TIMEOUT_SECONDS
 * (1800, per model), BENCH_STACK_COST_SECONDS (30 per operation; 0 skips section 8),
 * BENCH_STACK_COST_IDLE_SECONDS (15), BENCH_STACK_COST_WRITE_RATE (50/s: uploads, comments, views,
 * downloads), BENCH_STACK_COST_READ_RATE (100/s: api-stats, api-files, api-search),
 * BENCH_STACK_COST_CATCHUP_SECONDS (600), BENCH_STACK_PORT_OFFSET (5000), BENCH_STACK_OUT (write the table
 * as JSON there), BENCH_STACK_LOG_LEVEL (services' LOG_LEVEL, warn), BENCH_STACK_KEEP=1 (keep the
 * temp dir with the logs), BENCH_STACK_REUSE=1 (servers already running: KAFKA_BROKERS, MONGO_URL,
 * ELASTICSEARCH_URL, MINIO_ENDPOINT, MINIO_ACCESS_KEY, MINIO_SECRET_KEY, REDIS_URL from the
 * environment or from BENCH_STACK_ENV_FILE=<stack.env>; the bench then removes what it created
 * on them).
 *
 * Exit: 0 done, 1 the stack did not start (or died), 2 done but some measure failed (see the table).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, openAsBlob } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as EsClient } from '@elastic/elasticsearch';
import { parseBrokers } from '@docshare/event-bus/kafka';
import { Api, SEARCH_TERMS, fileInput, type User } from './stack/api.ts';
import {
  connectMongo, directDailyQuery, directFilesQuery, directSearchQuery, directStatsQuery, drain, eventLogRead, kafkaJavaPerf, kafkaProducerCeiling,
  minioCeiling, mongoWriteCeiling, startHttpCeiling, type HttpCeilingServer,
} from './stack/ceilings.ts';
import {
  Instance, PIPELINE_GROUPS, Servers, SERVICE_NAMES, cpuSnapshot, cpuUsed, describeLag, makeLagProbe, minioClient, removeNamespace, reusedServerEnv,
  serverMemory, serviceRss, storeName, type CpuSnapshot, type PipelineLag,
} from './stack/infra.ts';
import {
  commandsByName, renderCapacityTable, renderCommandsTable, renderCpuTable, cpuPerThousand, commandsPerOp, type PhaseCost, type SpanCost,
} from './stack/cost.ts';
import { storeCommandsSnapshot, storeCommandsUsed, type StoreCommandsSnapshot } from './stack/metrics.ts';
import { closedLoop, expectOk, mapLimit, pacedLoad, percentile, request, sleep, summarizeErrors, windowRates, type LoadResult } from './stack/load.ts';
import { fmt, ratioOf, renderTable, rowsJson, type Row } from './stack/report.ts';
import { environOf, replicaEnv, startReplica, stopReplica, type Replica } from './stack/replica.ts';
import { hotVsSpread, utcDaysEnding } from './stack/views.ts';
import { resumableRows, runResumablePhase, writeRandomFile } from './stack/resumable.ts';
import { runWebhookPhase, webhookRows } from './stack/webhooks.ts';
import { leaving, type LeavingOptions } from './stack/leaving.ts';
import { readProcTable, treeCpuSeconds } from '../infra/stack/procs.ts';
import { freePort } from '../infra/stack/ports.ts';

const ROOT = join(import.meta.dirname, '..');
const env = process.env;
const num = (name: string, fallback: number): number => {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name}=${v} is not a non-negative number`);
  return n;
};
const readSeconds = num('BENCH_STACK_READ_SECONDS', 10);
const cfg = {
  files: Math.max(1, Math.round(num('BENCH_STACK_FILES', 10_000))),
  users: Math.max(2, Math.round(num('BENCH_STACK_USERS', 32))),
  clients: Math.max(1, Math.round(num('BENCH_STACK_CLIENTS', 16))),
  writeSeconds: num('BENCH_STACK_WRITE_SECONDS', 300),
  readSeconds,
  rywSeconds: num('BENCH_STACK_RYW_SECONDS', Math.max(10, 3 * readSeconds)),
  views: Math.max(2, Math.round(num('BENCH_STACK_VIEWS', 4000))),
  dailyReads: Math.max(1, Math.round(num('BENCH_STACK_DAILY_READS', 500))),
  rywRate: num('BENCH_STACK_RYW_RATE', 100),
  rywProbers: Math.max(1, Math.round(num('BENCH_STACK_RYW_PROBERS', 4))),
  rywTimeoutSeconds: num('BENCH_STACK_RYW_TIMEOUT_SECONDS', 30),
  pollMs: Math.max(1, num('BENCH_STACK_POLL_MS', 5)),
  bigMiB: num('BENCH_STACK_BIG_MIB', 512),
  resumableMiB: num('BENCH_STACK_RESUMABLE_MIB', 1024),
  resumableUploads: Math.max(1, Math.round(num('BENCH_STACK_RESUMABLE_UPLOADS', 5))),
  resumableParallel: Math.max(1, Math.round(num('BENCH_STACK_RESUMABLE_PARALLEL', 4))),
  kafkaJavaRecords: Math.round(num('BENCH_STACK_KAFKA_JAVA_RECORDS', 50_000)),
  catchUpSeconds: num('BENCH_STACK_CATCHUP_SECONDS', 600),
  rebuildTimeoutSeconds: num('BENCH_STACK_REBUILD_TIMEOUT_SECONDS', 1800),
  portOffset: Math.round(num('BENCH_STACK_PORT_OFFSET', 5000)),
  costSeconds: num('BENCH_STACK_COST_SECONDS', 30),
  costIdleSeconds: Math.max(1, num('BENCH_STACK_COST_IDLE_SECONDS', 15)),
  costWriteRate: Math.max(1, num('BENCH_STACK_COST_WRITE_RATE', 50)),
  costReadRate: Math.max(1, num('BENCH_STACK_COST_READ_RATE', 100)),
  costCatchUpSeconds: num('BENCH_STACK_COST_CATCHUP_SECONDS', 600),
  reuse: env.BENCH_STACK_REUSE === '1',
  keep: env.BENCH_STACK_KEEP === '1',
  out: env.BENCH_STACK_OUT,
  logLevel: env.BENCH_STACK_LOG_LEVEL ?? 'warn',
  only: env.BENCH_STACK_ONLY ?? '',
  webhooks: {
    endpoints: Math.max(1, Math.round(num('BENCH_WEBHOOK_ENDPOINTS', 1000))),
    rate: Math.max(1, num('BENCH_WEBHOOK_RATE', 200)),
    loadSeconds: Math.max(1, num('BENCH_WEBHOOK_LOAD_SECONDS', 60)),
    hangSeconds: num('BENCH_WEBHOOK_HANG_SECONDS', 30),
    hangRate: Math.max(1, num('BENCH_WEBHOOK_HANG_RATE', 20)),
    settleSeconds: num('BENCH_WEBHOOK_SETTLE_SECONDS', 60),
    ceilingSeconds: Math.max(1, num('BENCH_WEBHOOK_CEILING_SECONDS', 10)),
    soakSeconds: num('BENCH_WEBHOOK_SOAK_SECONDS', 3600),
    soakRate: Math.max(1, num('BENCH_WEBHOOK_SOAK_RATE', 20)),
    failRate: Math.max(1, num('BENCH_WEBHOOK_FAIL_RATE', 5)),
    sampleSeconds: Math.max(1, num('BENCH_WEBHOOK_SAMPLE_SECONDS', 10)),
    receiverPort: Math.round(num('BENCH_WEBHOOK_RECEIVER_PORT', 18240)),
    retrySchedule: env.BENCH_WEBHOOK_RETRY_SCHEDULE ?? '1s,2s,4s,8s,16s',
  },
};
if (!['', 'resumable', 'webhooks', 'leaving'].includes(cfg.only)) throw new Error(`BENCH_STACK_ONLY=${cfg.only}: the phases that run alone are resumable, webhooks and leaving`);
/** BENCH_STACK_ONLY=resumable: the servers, the instance and 6b, nothing else. */
const onlyResumable = cfg.only === 'resumable';
/** BENCH_STACK_ONLY=webhooks: the servers, the instance (webhooks to loopback allowed) and section 9. */
const onlyWebhooks = cfg.only === 'webhooks';
/** BENCH_STACK_ONLY=leaving: the servers, the instance and section 10. */
const onlyLeaving = cfg.only === 'leaving';
const MiB = 1024 * 1024;

const began = performance.now();
const secs = (ms: number): string => (ms / 1000).toFixed(1);
const log = (line: string): void => console.log(`[bench:stack ${secs(performance.now() - began).padStart(6)}s] ${line}`);
const message = (error: unknown): string => (error instanceof Error ? error.message : String(error));
const ms = (x: number): string => `${fmt(x)} ms`;
const brief = (r: LoadResult): string =>
  `${fmt(r.rate)}/s (${r.ok} in ${r.seconds.toFixed(1)} s), p50 ${ms(percentile(r.latencies, 50))}, p99 ${ms(percentile(r.latencies, 99))}`
  + (r.errors > 0 ? `, ${r.errors} errors: ${summarizeErrors(r.errorKinds)}` : '');
const summary = (r: LoadResult) => ({
  ok: r.ok, errors: r.errors, seconds: Number(r.seconds.toFixed(2)), rate: Number(r.rate.toFixed(2)),
  p50Ms: Number(percentile(r.latencies, 50).toFixed(2)), p99Ms: Number(percentile(r.latencies, 99).toFixed(2)), errorKinds: r.errorKinds,
});

// ---- state and cleanup ------------------------------------------------------------------------
const work = await mkdtemp(join(tmpdir(), 'docshare-bench-stack-'));
const runId = randomBytes(3).toString('hex');
const servers = cfg.reuse ? undefined : new Servers(join(work, 'infra'), cfg.portOffset);
let serverEnv: Record<string, string> = {};
let instance: Instance | undefined;
let instanceLost: string | null = null;
const children = new Set<ChildProcess>();
const track = (child: ChildProcess): void => {
  children.add(child);
  child.once('exit', () => children.delete(child));
};
const ceilingNames = { databases: [] as string[], topics: [] as string[], buckets: [] as string[] };

let cleaning: Promise<void> | undefined;
const cleanup = (): Promise<void> => {
  cleaning ??= (async () => {
    for (const child of children) child.kill('SIGKILL');
    if (instance) {
      log('stopping the instance');
      await instance.close().catch((e: unknown) => log(`stopping the instance: ${message(e)}`));
    }
    if (servers) {
      log('stopping the servers');
      await servers.stopAll();
    } else if (instance && Object.keys(serverEnv).length > 0) {
      const problems = await removeNamespace(serverEnv, instance.ns, ceilingNames);
      for (const p of problems) log(`cleanup on the reused servers: ${p}`);
    }
    if (cfg.keep) log(`kept ${work}`);
    else await rm(work, { recursive: true, force: true }).catch(() => undefined);
  })();
  return cleaning;
};
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping everything`);
    void cleanup().finally(() => process.exit(130));
  });
}

/**
 * docs-command's "read models lag behind a command" warnings so far: commands it acknowledged
 * only after READ_YOUR_WRITES_TIMEOUT_MS, without the read models showing them (a diagnostic; 0
 * if the message changes).
 */
const lagWarnings = async (): Promise<number> =>
  (await readFile(join(work, 'instance.log'), 'utf8').catch(() => '')).split('read models lag behind').length - 1;

const logTail = async (path: string, lines = 40): Promise<string> =>
  (await readFile(path, 'utf8').catch(() => '(no log)')).split('\n').slice(-lines).join('\n');

// ---- results ----------------------------------------------------------------------------------
const rows: Row[] = [];
/** The cost phases (section 8), printed as tables of their own after the main one. */
const costPhases: PhaseCost[] = [];
let costIdle: SpanCost | undefined;
const details: Record<string, unknown> = {};
const failures: string[] = [];
/** Runs one measure; a failure is reported and the bench goes on. */
const attempt = async <T>(name: string, fn: () => Promise<T>): Promise<T | undefined> => {
  if (instanceLost) {
    failures.push(`${name}: skipped, the instance stopped (${instanceLost})`);
    return undefined;
  }
  try {
    return await fn();
  } catch (error) {
    failures.push(`${name}: ${message(error)}`);
    log(`FAILED ${name}: ${message(error)}`);
    return undefined;
  }
};
const failedRow = (measure: string): Row => ({ measure, docshareText: 'failed', ceilingText: '', ratioText: '' });

let exitCode = 0;
try {
  // ---- 0. the stack -----------------------------------------------------------------------------
  let t = performance.now();
  if (servers) {
    log(`servers: starting kafka, ferretdb, elasticsearch, minio, redis (ports = infra/local defaults + ${cfg.portOffset}) under ${work}/infra`);
    try {
      await servers.start();
    } catch (error) {
      const text = message(error);
      throw new Error(/already in use/.test(text)
        ? `${text}\nA port is taken: set BENCH_STACK_PORT_OFFSET to another offset (ports = infra/local defaults + offset), or use BENCH_STACK_REUSE=1 with running servers`
        : text);
    }
    serverEnv = await servers.stackEnv();
  } else {
    serverEnv = await reusedServerEnv(env);
    log(`servers: reusing ${serverEnv.KAFKA_BROKERS}, ${serverEnv.MONGO_URL}, ${serverEnv.ELASTICSEARCH_URL}, ${serverEnv.MINIO_ENDPOINT}, ${serverEnv.REDIS_URL}`);
  }
  const serversSeconds = (performance.now() - t) / 1000;
  log(`servers: ready in ${serversSeconds.toFixed(1)} s`);

  const port = await freePort();
  const bigBytes = Math.round(cfg.bigMiB * MiB);
  const inst = new Instance({
    port, dataDir: join(work, 'instance'), jwtSecret: randomBytes(30).toString('base64'), serverEnv, logFile: join(work, 'instance.log'),
    extraEnv: {
      LOG_LEVEL: cfg.logLevel,
      RATE_LIMIT_POINTS: '1000000000',
      RATE_LIMIT_WINDOW_SECONDS: '60',
      MAX_UPLOAD_BYTES: String(Math.max(100 * MiB, bigBytes + MiB)),
      STORAGE_QUOTA_BYTES: '0',
      // the gateway's metrics listener (the other services get theirs from the instance), for the store commands
      METRICS_PORT: String(await freePort()),
      // Section 9's receivers are on loopback, over http; its failing endpoint runs a whole retry schedule in seconds.
      ...(onlyWebhooks ? {
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_RETRY_SCHEDULE: cfg.webhooks.retrySchedule,
        WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
      } : {}),
    },
  });
  instance = inst;
  inst.onUnexpectedExit((info) => {
    instanceLost = info;
    log(`the instance stopped: ${info}`);
  });
  t = performance.now();
  if (servers) {
    // A fresh Elasticsearch's first index creation is slow, and on a loaded machine it outlasted a
    // search projector's start (request timed out: the service exits, and with it the instance's
    // start): create and drop one index first.
    const warm = new EsClient({ node: serverEnv.ELASTICSEARCH_URL!, requestTimeout: 180_000 });
    await warm.indices.create({ index: `bench-warmup-${runId}` }).then(() => warm.indices.delete({ index: `bench-warmup-${runId}` }))
      .catch((e: unknown) => log(`elasticsearch warm-up: ${message(e)}`))
      .finally(() => warm.close());
  }
  // A service that exits during start ends the instance's start; on a loaded machine that can be a
  // server's slow first answer: once more before giving up.
  for (let attempt = 1; ; attempt += 1) {
    try {
      await inst.start();
      break;
    } catch (error) {
      if (attempt >= 2) throw new Error(`${message(error)}\nlast lines of ${join(work, 'instance.log')}:\n${await logTail(join(work, 'instance.log'))}`);
      log(`instance: start failed (${message(error)}); stopping it and starting once more`);
      await inst.stop();
      instanceLost = null;
    }
  }
  const instanceSeconds = (performance.now() - t) / 1000;
  log(`instance ${inst.ns}: ready on ${inst.baseUrl} in ${instanceSeconds.toFixed(1)} s`);
  details.startup = { serversSeconds, instanceSeconds, ns: inst.ns, reuse: cfg.reuse };
  const rss: Record<string, Record<string, number>> = { start: await serviceRss(inst) };
  /** CPU each process tree used between two snapshots, in % of one core. */
  const cpuPercent = (before: CpuSnapshot, after: CpuSnapshot, seconds: number): Record<string, string> =>
    Object.fromEntries(Object.entries(cpuUsed(before, after)).map(([name, used]) => [
      name, Number.isFinite(used) ? `${((used / seconds) * 100).toFixed(0)}%` : 'n/a (restarted?)',
    ]));
  const cpuRow = (measure: string, cpu: Record<string, string>): Row => ({
    measure,
    docshareText: SERVICE_NAMES.map((n) => `${n.replace(/-projector$/, '')} ${cpu[n]}`).join(', '),
    ceilingText: Object.entries(cpu).filter(([n]) => !(SERVICE_NAMES as readonly string[]).includes(n)).map(([n, v]) => `${n} ${v}`).join(', '),
    ratioText: '',
  });
  // What the system costs doing nothing (pollers, heartbeats), before any load.
  const idleSeconds = 5;
  const idleBefore = await cpuSnapshot(inst, servers);
  await sleep(idleSeconds * 1000);
  const idleCpu = cpuPercent(idleBefore, await cpuSnapshot(inst, servers), idleSeconds);
  log(`idle: CPU used in ${idleSeconds} s (of one core): ${Object.entries(idleCpu).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  details.idleCpuPercentOfOneCore = idleCpu;

  const api = new Api(inst.baseUrl);
  const mongo = await connectMongo(serverEnv.MONGO_URL!);
  // What answers MONGO_URL, by its buildInfo (FerretDB 2 names itself in `ferretdb.version`).
  const store = await storeName(mongo);
  log(`store: ${store} at ${serverEnv.MONGO_URL}`);
  details.store = store;
  const es = new EsClient({ node: serverEnv.ELASTICSEARCH_URL!, requestTimeout: 30_000 });
  const commandDb = mongo.db(inst.commandDb);
  const readDb = mongo.db(inst.readDb);
  const ceilingDb = `bench_ceiling_${inst.ns}`;
  ceilingNames.databases.push(ceilingDb);
  const lagProbe = await makeLagProbe(parseBrokers(serverEnv.KAFKA_BROKERS), commandDb, inst.ns);

  interface CatchUp { seconds: number; caughtUp: boolean; start: PipelineLag; end: PipelineLag; drainRates: Record<string, number> }
  /**
   * Waits until the pipeline has caught up with the event log (outbox published, every projector
   * group and the text extractor's committed up to the topic's end, twice in a row), at most
   * BENCH_STACK_CATCHUP_SECONDS; reports how long that took and, per group, the rate at which it
   * drained its backlog. The extractor counts: each text it records is an event the projectors
   * read next (with only the projectors, a seed of 4,000 files "caught up" while 1,200 files
   * waited for extraction, and the next measures ran beside that work).
   */
  const catchUp = async (label: string, groups: readonly string[] = PIPELINE_GROUPS, timeoutSeconds = cfg.catchUpSeconds): Promise<CatchUp> => {
    const t0 = performance.now();
    const start = await lagProbe.lag(groups);
    const drainedAt: Record<string, number> = {};
    let lag = start;
    let zeros = 0;
    let lastLog = t0;
    for (;;) {
      const now = performance.now();
      for (const [group, behind] of Object.entries(lag.groups)) if (behind === 0 && drainedAt[group] === undefined) drainedAt[group] = now - t0;
      zeros = lag.total === 0 ? zeros + 1 : 0;
      if (zeros >= 2 || now - t0 > timeoutSeconds * 1000) break;
      if (now - lastLog > 10_000) {
        log(`${label}: waiting for the pipeline to catch up: ${describeLag(lag)}`);
        lastLog = now;
      }
      await sleep(500);
      lag = await lagProbe.lag(groups);
    }
    const seconds = (performance.now() - t0) / 1000;
    const drainRates = Object.fromEntries(Object.entries(start.groups).filter(([, n]) => n > 0)
      .map(([group, n]) => [group, n / Math.max(0.5, (drainedAt[group] ?? seconds * 1000) / 1000)]));
    const caughtUp = lag.total === 0;
    log(`${label}: pipeline ${caughtUp ? `caught up in ${seconds.toFixed(1)} s` : `NOT caught up after ${seconds.toFixed(0)} s (${describeLag(lag)})`}; behind at the start: ${describeLag(start)}`);
    return { seconds, caughtUp, start, end: lag, drainRates };
  };
  const catchUpRows = (what: string, c: CatchUp | undefined): Row[] => {
    if (!c) return [failedRow(`pipeline catch-up ${what}`)];
    const out: Row[] = [{
      measure: `pipeline behind ${what} (events)`, docshareText: describeLag(c.start), ceilingText: '0', ratioText: '',
    }, {
      measure: `pipeline caught up ${what} in`,
      docshareText: c.caughtUp ? `${c.seconds.toFixed(1)} s` : `not in ${c.seconds.toFixed(0)} s (${describeLag(c.end)})`, ceilingText: '0 s', ratioText: '',
    }];
    if (Object.keys(c.drainRates).length > 0) {
      out.push({
        measure: `projector backlog drain ${what} (events/s)`,
        docshareText: Object.entries(c.drainRates).map(([g, r]) => `${g.replace(/-projector$/, '')} ${fmt(r)}`).join(', '), ceilingText: '', ratioText: '',
      });
    }
    return out;
  };

  // ---- 6b. a resumable upload (issue 22), run in its place below (or alone: BENCH_STACK_ONLY=resumable) --
  // A docs-command with BLOB_PUBLIC_URL (part URLs presigned by MinIO) behind a gateway of its own
  // (a window of an hour, so the budget read before and after one upload is one window's): the
  // instance's own keep streaming their downloads, and these two processes' CPU is the uploads'.
  const resumablePhase = async (): Promise<void> => {
    if (cfg.resumableMiB <= 0) return;
    const resumableBytes = Math.round(cfg.resumableMiB * MiB);
    rows.push({ section: `resumable upload (${cfg.resumableMiB} MiB, presigned part URLs: BLOB_PUBLIC_URL)` });
    const path = join(work, 'resumable.bin');
    const started: Replica[] = [];
    const result = await attempt('resumable upload', async () => {
      const commandPid = await inst.servicePid('docs-command');
      const gatewayPid = await inst.servicePid('gateway');
      if (commandPid === null || gatewayPid === null) throw new Error('no pid for the instance\'s docs-command or gateway');
      const command = await startReplica('docs-command', replicaEnv(await environOf(commandPid), await freePort(), {
        BLOB_PUBLIC_URL: serverEnv.MINIO_ENDPOINT!, STORAGE_QUOTA_BYTES: '0', MAX_RESUMABLE_BYTES: String(Math.max(5 * 1024 * MiB, resumableBytes)),
      }), join(work, 'resumable-docs-command.log'));
      started.push(command);
      track(command.child);
      const gateway = await startReplica('gateway', replicaEnv(await environOf(gatewayPid), await freePort(), {
        DOCS_COMMAND_URL: command.url, RATE_LIMIT_WINDOW_SECONDS: '3600',
      }), join(work, 'resumable-gateway.log'));
      started.push(gateway);
      track(gateway.child);
      const user = await api.register('Bench Resumable', `resumable-${runId}@bench.test`);
      await writeRandomFile(path, resumableBytes);
      const bucket = `bench-resumable-${inst.ns}`;
      ceilingNames.buckets.push(bucket);
      const minio = minioClient(serverEnv);
      if (!(await minio.bucketExists(bucket))) await minio.makeBucket(bucket);
      const minioPid = servers ? await servers.pid('minio') : null;
      const cpu = async (): Promise<Record<string, number>> => {
        const table = await readProcTable();
        const out: Record<string, number> = { gateway: treeCpuSeconds(table, gateway.child.pid!), 'docs-command': treeCpuSeconds(table, command.child.pid!) };
        if (minioPid !== null) out.minio = treeCpuSeconds(table, minioPid);
        return out;
      };
      log(`resumable: ${cfg.resumableUploads} uploads of ${cfg.resumableMiB} MiB (${cfg.resumableParallel} parts at once) through ${gateway.url} → ${command.url}, each beside a direct MinIO multipart put; then one killed at 40% and resumed`);
      return runResumablePhase({
        baseUrl: gateway.url, token: user.token, stateDir: join(work, 'resumable-state'), minio, bucket, path, size: resumableBytes,
        uploads: cfg.resumableUploads, parallel: cfg.resumableParallel, cpu, log, killAt: 0.4,
      });
    }).finally(async () => {
      for (const replica of started.reverse()) await stopReplica(replica);
      await rm(path, { force: true });
    });
    details.resumable = result ?? null;
    if (result) rows.push(...resumableRows(result, resumableBytes, cfg.resumableParallel));
    else rows.push(failedRow('resumable upload'));
  };

  // BENCH_STACK_ONLY=resumable: the stack, 6b and the memory, the sections in between skipped.
  sections: {
  if (onlyResumable) {
    await resumablePhase();
    break sections;
  }
  // ---- 9. webhooks (issue 23): only with BENCH_STACK_ONLY=webhooks ---------------------------------
  if (onlyWebhooks) {
    const result = await attempt('webhooks', () => runWebhookPhase({
      ...cfg.webhooks, api, runId, log, lost: () => instanceLost,
      dispatcherPid: () => inst.servicePid('webhook-dispatcher'),
      catchUp: (label) => catchUp(label),
      probe: { cpu: () => cpuSnapshot(inst, servers), lag: () => lagProbe.lag(PIPELINE_GROUPS) },
    }));
    details.webhooks = result ? { ...result, soak: result.soak && { ...result.soak, samples: result.soak.samples.map((s) => [Number(s.t.toFixed(1)), Number(s.mib.toFixed(1))]) } } : null;
    rows.push(...(result ? webhookRows(result, cfg.webhooks) : [failedRow('webhooks')]));
    break sections;
  }

  // ---- 10. leaving (issue 24): only with BENCH_STACK_ONLY=leaving -----------------------------------
  if (onlyLeaving) {
    const options: LeavingOptions = {
      files: Math.round(num('BENCH_LEAVING_FILES', 1000)), comments: Math.round(num('BENCH_LEAVING_COMMENTS', 10_000)),
      clients: 8, timeoutMs: 600_000, tag: runId,
    };
    log(`leaving: ${options.files} files and ${options.comments} comments of one user, then its export and its erasure`);
    const result = await attempt('leaving', () => leaving(api, options));
    details.leaving = result ?? null;
    rows.push({ section: `leaving (issue 24): one user with ${options.files} files who wrote ${options.comments} comments` });
    if (result) {
      rows.push({ measure: 'export: 202 → ready', docshare: result.export.readyMs / 1000, unit: 's', ceilingText: 'goal ≤ 30 s', ratioText: result.export.sha256Matches ? 'sha256 ok' : 'SHA256 MISMATCH' });
      rows.push({ measure: 'erasure: 202 → done', docshare: result.erasure.doneMs / 1000, unit: 's', ceilingText: 'goal ≤ 60 s', ratioText: `${result.erasure.filesDeleted} files, ${result.erasure.commentsRedacted} comments` });
      rows.push({ measure: 'neighbour\'s stats after it', docshareText: result.erasure.neighbourStatsUnchanged ? 'unchanged' : 'CHANGED', ceilingText: '', ratioText: result.erasure.tokenRefused ? 'token refused' : 'TOKEN NOT REFUSED' });
    } else rows.push(failedRow('leaving'));
    break sections;
  }

  // ---- seeding ----------------------------------------------------------------------------------
  log(`seed: registering ${cfg.users} users`);
  t = performance.now();
  const users: User[] = await mapLimit(cfg.users, 4, (i) => api.register(`Bench User ${i}`, `u${i}-${runId}@bench.test`));
  const probers = await mapLimit(cfg.rywProbers, 4, (i) => api.register(`Bench Prober ${i}`, `probe${i}-${runId}@bench.test`));
  const bigUser = await api.register('Bench Big', `big-${runId}@bench.test`);
  log(`seed: ${users.length + probers.length + 1} users in ${secs(performance.now() - t)} s`);
  const files: number[] = [];
  let uploadIndex = 0;
  const upload = async (client: number): Promise<void> => {
    const i = uploadIndex++;
    files.push(await api.upload(users[(client + i) % users.length]!.token, fileInput(i)));
  };
  const comment = async (client: number, n: number): Promise<void> => {
    while (files.length === 0) await sleep(50);
    const fileId = files[Math.floor(Math.random() * files.length)]!;
    await api.comment(users[(client * 7 + n) % users.length]!.token, fileId, `comment ${n} on ${fileId}: ${SEARCH_TERMS[n % SEARCH_TERMS.length]}`);
  };
  const seedComments = Math.floor(cfg.files / 4);
  const lagBeforeSeed = await lagWarnings();
  log(`seed: ${cfg.files} uploads of 4 KiB and ${seedComments} comments, ${cfg.clients} clients`);
  const seed = await closedLoop({
    clients: cfg.clients, count: cfg.files + seedComments,
    op: (client, n) => (n % 5 === 4 && n < 5 * seedComments ? comment(client, n) : upload(client)),
    progress: (done, errors, elapsed) => log(`seed: ${done}/${cfg.files + seedComments} (${fmt(done / elapsed)}/s, ${errors} errors)`),
  });
  const seedUploadRate = (files.length / seed.seconds) * 60;
  log(`seed: done, ${files.length} files; ${brief(seed)}`);
  details.seed = { ...summary(seed), files: files.length, filesPerMinute: seedUploadRate, commandsPerMinute: seed.rate * 60 };
  if (files.length === 0) throw new Error(`seeding failed: no upload succeeded (${summarizeErrors(seed.errorKinds)})`);
  rss.seeded = await serviceRss(inst);
  // The reads below measure the read models, not their catch-up: wait until they reflect the seed.
  const seedCatchUp = await attempt('catch-up after the seeding', () => catchUp('seed'));
  details.seedCatchUp = seedCatchUp ?? null;
  rows.push({ section: `seeding (${files.length} files of 4 KiB + ${seed.ok - files.length} comments, ${cfg.users} users, ${cfg.clients} clients)` });
  rows.push({ measure: 'seed uploads per minute', docshare: seedUploadRate, unit: '/min', ceilingText: '', ratioText: '' });
  rows.push({ measure: `seed commands per minute${seed.errors ? ` (${seed.errors} errors)` : ''}`, docshare: seed.rate * 60, unit: '/min', ceilingText: '', ratioText: '' });
  const seedLag = (await lagWarnings()) - lagBeforeSeed;
  rows.push(...catchUpRows('after the seeding', seedCatchUp));
  if (seedLag > 0) rows.push({ measure: 'seed commands acked after the RYW timeout', docshareText: `${seedLag} of ${seed.ok}`, ceilingText: '0', ratioText: '' });
  details.seed = { ...(details.seed as object), ackedAfterRywTimeout: seedLag };

  // ---- reads at the seeded size (3, 4, 5) -------------------------------------------------------
  const viewer = users[0]!;
  const userIds = users.map((u) => u.userId);
  const warmup = Math.min(2, cfg.readSeconds / 5);
  const readLoop = async (name: string, op: (n: number) => Promise<unknown>): Promise<LoadResult> => {
    await closedLoop({ clients: cfg.clients, seconds: warmup, op: (_c, n) => op(n).then(() => undefined) });
    const r = await closedLoop({ clients: cfg.clients, seconds: cfg.readSeconds, op: (_c, n) => op(n).then(() => undefined) });
    log(`${name}: ${brief(r)}`);
    details[name] = summary(r);
    return r;
  };
  const rateRows = (measure: string, docshare: LoadResult | undefined, ceiling: LoadResult | undefined, ceilingName: string): Row[] => {
    if (!docshare) return [failedRow(`${measure} req/s`)];
    const errs = docshare.errors > 0 ? ` (${docshare.errors} errors)` : '';
    return [
      { measure: `${measure} req/s${errs}`, docshare: docshare.rate, ...(ceiling ? { ceiling: ceiling.rate } : { ceilingText: 'failed' }), unit: 'req/s', ceilingName },
      { measure: `${measure} p50 latency`, docshare: percentile(docshare.latencies, 50), ...(ceiling ? { ceiling: percentile(ceiling.latencies, 50) } : { ceilingText: 'failed' }), unit: 'ms', ceilingName },
    ];
  };

  const filesNow = files.length;
  rows.push({ section: `reads at the seeded size (${filesNow} files, ${cfg.clients} clients, ${cfg.readSeconds} s each)` });
  const apiFiles = await attempt('api-files', () => readLoop('api-files', async (n) => expectOk(await api.rawFiles(viewer.token, userIds[n % userIds.length]!), 'api-files')));
  const directFiles = await attempt('api-files direct', async () => {
    const query = await directFilesQuery(readDb, viewer.userId);
    return readLoop(`api-files direct (${store})`, (n) => query(userIds[n % userIds.length]!));
  });
  rows.push(...rateRows('api-files', apiFiles, directFiles, `its query on ${store}`));

  const apiStats = await attempt('api-stats', () => readLoop('api-stats', async (n) => expectOk(await api.rawStats(users[n % users.length]!.token), 'api-stats')));
  const directStats = await attempt('api-stats direct', async () => {
    const query = await directStatsQuery(readDb);
    return readLoop(`api-stats direct (${store})`, (n) => query(userIds[n % userIds.length]!));
  });
  rows.push(...rateRows('api-stats', apiStats, directStats, `its query on ${store}`));
  // HTTP ceilings: a bare express answering api-stats, and the gateway's proxy in front of it.
  const httpServers: HttpCeilingServer[] = [];
  try {
    const bare = await startHttpCeiling('bare', await freePort());
    httpServers.push(bare);
    track(bare.child);
    const proxy = await startHttpCeiling('proxy', await freePort(), bare.url);
    httpServers.push(proxy);
    track(proxy.child);
    const post = (url: string, n: number) => request('POST', `${url}/api/V1/stats/api-stats`, {
      'content-type': 'application/json', 'x-authorization': `Bearer ${users[n % users.length]!.token}`,
    }, '{}');
    const bareRun = await attempt('bare express', () => readLoop('bare express', async (n) => expectOk(await post(bare.url, n), 'bare')));
    const proxyRun = await attempt('express proxy hop', () => readLoop('express + one proxy hop', async (n) => expectOk(await post(proxy.url, n), 'proxy')));
    if (apiStats && bareRun) rows.push({ measure: 'api-stats req/s vs bare express', docshare: apiStats.rate, ceiling: bareRun.rate, unit: 'req/s', ceilingName: 'express, JSON answer' });
    if (apiStats && proxyRun) rows.push({ measure: 'api-stats req/s vs one proxy hop', docshare: apiStats.rate, ceiling: proxyRun.rate, unit: 'req/s', ceilingName: 'express → gateway proxy → express' });
  } catch (error) {
    failures.push(`http ceilings: ${message(error)}`);
    rows.push({ measure: 'api-stats vs bare express / proxy hop', docshareText: '', ceilingText: 'failed', ratioText: '' });
  } finally {
    for (const s of httpServers) s.child.kill('SIGTERM');
  }

  const alias = `docshare-files-${inst.ns}`;
  const apiSearch = await attempt('api-search', () => readLoop('api-search', async (n) => {
    const answer = await api.rawSearch(viewer.token, SEARCH_TERMS[n % SEARCH_TERMS.length]!);
    // 404 is the spec's "no results": an answer like any other.
    if (answer.status !== 404) expectOk(answer, 'api-search');
  }));
  const searchQuery = directSearchQuery(es, alias);
  const directSearch = await attempt('api-search direct', () => readLoop('api-search direct (Elasticsearch _search)', (n) => searchQuery(SEARCH_TERMS[n % SEARCH_TERMS.length]!)));
  rows.push(...rateRows('api-search', apiSearch, directSearch, 'its query on ES _search'));

  // ---- 5b. one hot file against the same views spread, two docs-command replicas (issue 21) ------
  const spreadFiles = files.slice(0, 16);
  rows.push({ section: `views: one hot file vs the same views over ${spreadFiles.length} files (2 docs-command replicas, each behind its own gateway, ${cfg.clients} clients, ${cfg.views} views each)` });
  const replicas: Replica[] = [];
  try {
    const views = await attempt('hot vs spread views', async () => {
      const commandPid = await inst.servicePid('docs-command');
      const gatewayPid = await inst.servicePid('gateway');
      if (commandPid === null || gatewayPid === null) throw new Error('no pid for the instance\'s docs-command or gateway');
      const commandPort = await freePort();
      const second = await startReplica('docs-command', replicaEnv(await environOf(commandPid), commandPort), join(work, 'replica-docs-command.log'));
      replicas.push(second);
      track(second.child);
      const secondGateway = await startReplica('gateway', replicaEnv(await environOf(gatewayPid), await freePort(), { DOCS_COMMAND_URL: second.url }), join(work, 'replica-gateway.log'));
      replicas.push(secondGateway);
      track(secondGateway.child);
      log(`views: second docs-command on ${second.url} behind a second gateway on ${secondGateway.url}`);
      // The n-th view goes to one gateway or the other: both replicas serve both loads at once.
      const gateways = [inst.baseUrl, secondGateway.url];
      const view = (n: number, fileId: number) => request('GET', `${gateways[n % 2]}/docs/${fileId}`);
      return hotVsSpread({ clients: cfg.clients, count: cfg.views, hot: (n) => view(n, spreadFiles[0]!), spread: (n) => view(n, spreadFiles[n % spreadFiles.length]!) });
    });
    if (views) {
      for (const [name, r] of [['hot', views.hot], ['spread', views.spread]] as const) {
        log(`views ${name}: ${brief(r)}; ${r.serverErrors} 5xx`);
        details[`views ${name}`] = { ...summary(r), serverErrors: r.serverErrors };
      }
      const errs = (r: typeof views.hot): string => (r.errors > 0 ? ` (${r.errors} errors)` : '');
      rows.push({ measure: `views/s, one file${errs(views.hot)}`, docshare: views.hot.rate, ceiling: views.spread.rate, unit: 'views/s', ceilingName: `over ${spreadFiles.length} files${errs(views.spread)}` });
      rows.push({ measure: 'view p50 latency, one file', docshare: percentile(views.hot.latencies, 50), ceiling: percentile(views.spread.latencies, 50), unit: 'ms', ceilingName: `over ${spreadFiles.length} files` });
      rows.push({ measure: 'view p99 latency, one file', docshare: percentile(views.hot.latencies, 99), ceiling: percentile(views.spread.latencies, 99), unit: 'ms', ceilingName: `over ${spreadFiles.length} files` });
      rows.push({ measure: '5xx answers (one file + spread)', docshareText: `${views.hot.serverErrors} + ${views.spread.serverErrors}`, ceilingText: '0', ratioText: '' });
    } else {
      rows.push(failedRow('views/s, one file vs spread'));
    }
  } finally {
    for (const replica of replicas.reverse()) await stopReplica(replica);
  }

  // A 366-day api-daily, one request at a time, beside its own read sent to the store.
  const year = utcDaysEnding(new Date(), 366);
  const oneAtATime = async (name: string, op: () => Promise<unknown>): Promise<LoadResult> => {
    await closedLoop({ clients: 1, count: Math.ceil(cfg.dailyReads / 10), op: () => op().then(() => undefined) });
    const r = await closedLoop({ clients: 1, count: cfg.dailyReads, op: () => op().then(() => undefined) });
    if (r.errors > 0) throw new Error(`${r.errors} of ${cfg.dailyReads} failed: ${summarizeErrors(r.errorKinds)}`);
    log(`${name}: ${brief(r)}`);
    details[name] = summary(r);
    return r;
  };
  const dailyOwner = users[1 % users.length]!;
  const apiDaily = await attempt('api-daily 366 days', () => oneAtATime('api-daily 366 days', async () => expectOk(await api.rawDaily(dailyOwner.token, year[0]!, year.at(-1)!), 'api-daily')));
  const directDaily = await attempt('api-daily direct', async () => {
    const query = await directDailyQuery(readDb);
    return oneAtATime(`api-daily 366 days direct (${store})`, () => query(dailyOwner.userId, year));
  });
  for (const p of [50, 99]) {
    rows.push(apiDaily
      ? { measure: `api-daily (366 days) p${p} latency, 1 client`, docshare: percentile(apiDaily.latencies, p), ...(directDaily ? { ceiling: percentile(directDaily.latencies, p) } : { ceilingText: 'failed' }), unit: 'ms', ceilingName: `find of 366 daily_users ids on ${store}` }
      : failedRow(`api-daily (366 days) p${p} latency`));
  }

  // ---- 8. what each operation costs, for sizing (docs/ops.md) ------------------------------------
  // Each operation alone at a steady rate; CPU of every process tree and the services' store
  // commands from before its first request to the pipeline caught up with it, idle taken off
  // (bench/stack/cost.ts).
  if (cfg.costSeconds > 0) {
    interface Mark { at: number; cpu: CpuSnapshot; commands: StoreCommandsSnapshot }
    const mark = async (): Promise<Mark> => {
      const [cpu, commands] = await Promise.all([cpuSnapshot(inst, servers), storeCommandsSnapshot(inst.dataDir, SERVICE_NAMES)]);
      return { at: performance.now(), cpu, commands };
    };
    const spanOf = (a: Mark, b: Mark): SpanCost => ({ seconds: (b.at - a.at) / 1000, cpu: cpuUsed(a.cpu, b.cpu), commands: storeCommandsUsed(a.commands, b.commands) });
    await attempt('cost: pipeline caught up before', () => catchUp('cost', PIPELINE_GROUPS, cfg.costCatchUpSeconds));
    const idleSpan = async (): Promise<SpanCost> => {
      const a = await mark();
      await sleep(cfg.costIdleSeconds * 1000);
      return spanOf(a, await mark());
    };
    const idleBefore = await attempt('cost: idle', idleSpan);
    const someFile = (): number => files[Math.floor(Math.random() * files.length)]!;
    const someUser = (n: number): User => users[n % users.length]!;
    const w = cfg.costWriteRate;
    const r = cfg.costReadRate;
    const operations: { operation: string; rate: number; op: (n: number) => Promise<void> }[] = [
      { operation: 'upload (4 KiB)', rate: w, op: (n) => upload(n % cfg.clients) },
      { operation: 'comment', rate: w, op: (n) => comment(n % cfg.clients, n) },
      {
        operation: 'view (GET /docs/<id>)', rate: w,
        op: async () => { expectOk(await request('GET', `${inst.baseUrl}/docs/${someFile()}`), 'view page'); },
      },
      {
        operation: 'download (api-download + the 4 KiB)', rate: w,
        op: async (n) => {
          const url = await api.downloadUrl(someUser(n).token, someFile());
          const res = await fetch(url);
          if (!res.ok || !res.body) throw new Error(`download: ${res.status}`);
          await drain(res.body);
        },
      },
      { operation: 'api-stats', rate: r, op: async (n) => { expectOk(await api.rawStats(someUser(n).token), 'api-stats'); } },
      { operation: 'api-files', rate: r, op: async (n) => { expectOk(await api.rawFiles(viewer.token, userIds[n % userIds.length]!), 'api-files'); } },
      {
        operation: 'api-search', rate: r,
        op: async (n) => {
          const answer = await api.rawSearch(viewer.token, SEARCH_TERMS[n % SEARCH_TERMS.length]!);
          if (answer.status !== 404) expectOk(answer, 'api-search');
        },
      },
    ];
    if (idleBefore) {
      costIdle = idleBefore;
      for (const { operation, rate, op } of operations) {
        const phase = await attempt(`cost: ${operation}`, async (): Promise<PhaseCost> => {
          const a = await mark();
          const stop = pacedLoad(rate, 64, op);
          await sleep(cfg.costSeconds * 1000);
          const load = await stop();
          const settled = await catchUp(`cost: ${operation}`, PIPELINE_GROUPS, cfg.costCatchUpSeconds);
          const span = spanOf(a, await mark());
          if (!settled.caughtUp) failures.push(`cost: ${operation}: the pipeline had not caught up after ${cfg.costCatchUpSeconds} s (its figures miss the rest)`);
          log(`cost: ${operation}: ${brief(load)}; span ${span.seconds.toFixed(1)} s`);
          // a phase the pipeline had not caught up with misses part of its cost, and the next one carries it
          return { operation: settled.caughtUp ? operation : `${operation} (NOT caught up)`, ok: load.ok, errors: load.errors, rate: load.rate, errorKinds: load.errorKinds, ...span };
        });
        if (phase) costPhases.push(phase);
      }
      // Idle again after the phases: the idle rate taken off is both spans' (a server's background
      // work, Elasticsearch's above all, comes and goes).
      const idleAfter = await attempt('cost: idle after', idleSpan);
      if (idleAfter) {
        const sum = (a: Record<string, number>, b: Record<string, number>): Record<string, number> =>
          Object.fromEntries(Object.keys(a).map((k) => [k, a[k]! + (b[k] ?? NaN)]));
        const commands = Object.fromEntries(Object.keys(idleBefore.commands).map((k) => {
          const a = idleBefore.commands[k];
          const b = idleAfter.commands[k];
          if (!a || !b) return [k, null];
          const byCommand = { ...a.byCommand };
          for (const [c, n] of Object.entries(b.byCommand)) byCommand[c] = (byCommand[c] ?? 0) + n;
          return [k, { total: a.total + b.total, byCommand }];
        }));
        costIdle = { seconds: idleBefore.seconds + idleAfter.seconds, cpu: sum(idleBefore.cpu, idleAfter.cpu), commands };
      }
    }
    details.cost = {
      idle: costIdle ?? null,
      phases: costPhases.map((p) => ({
        ...p,
        cpuSecondsPer1000: cpuPerThousand(p, costIdle!),
        storeCommandsPerOp: commandsPerOp(p, costIdle!),
        storeCommandsPerOpByName: Object.fromEntries(SERVICE_NAMES.map((name) => [name, commandsByName(p, costIdle!, name)])),
      })),
    };
  }

  // ---- 1. sustained writes and their ceilings --------------------------------------------------
  rows.push({ section: `sustained mixed writes (4 KiB uploads and comments, ${cfg.clients} clients, ${cfg.writeSeconds} s)` });
  const ceilingSeconds = Math.max(2, cfg.readSeconds);
  const brokers = parseBrokers(serverEnv.KAFKA_BROKERS);
  const kafkaTopic = `bench-ceiling-${inst.ns}`;
  ceilingNames.topics.push(kafkaTopic);
  const kafka = await attempt('kafka producer ceiling', () => kafkaProducerCeiling(brokers, kafkaTopic, ceilingSeconds, cfg.clients));
  if (kafka) {
    log(`kafka (kafkajs, 1 message per send): ${brief(kafka.single)}`);
    log(`kafka (kafkajs, ${kafka.batchSize} per send): ${fmt(kafka.batched.rate * kafka.batchSize)} messages/s, p50 ${ms(percentile(kafka.batched.latencies, 50))} per send`);
    details.kafkaSingle = summary(kafka.single);
    details.kafkaBatched = { ...summary(kafka.batched), messagesPerSecond: kafka.batched.rate * kafka.batchSize };
  }
  const java = cfg.kafkaJavaRecords > 0
    ? await attempt('kafka-producer-perf-test', () => kafkaJavaPerf(brokers.join(','), kafkaTopic, cfg.kafkaJavaRecords, { ...env, ...(servers?.env ?? {}) }, track))
    : undefined;
  if (java) {
    log(`kafka (Java ProducerPerformance): ${java.line}`);
    details.kafkaJava = java;
  }
  const mongoCeiling = await attempt('store write ceiling', () => mongoWriteCeiling(mongo.db(ceilingDb), ceilingSeconds, cfg.clients));
  if (mongoCeiling) {
    log(`${store} insertOne (event-log document): ${brief(mongoCeiling.insert)}`);
    log(`${store} guarded upsert ($inc): ${brief(mongoCeiling.upsert)}`);
    details.storeInsert = summary(mongoCeiling.insert);
    details.storeUpsert = summary(mongoCeiling.upsert);
  }
  await mongo.db(ceilingDb).dropDatabase().catch(() => undefined);

  const writeLags: (PipelineLag & { at: number })[] = [];
  const uploadLatencies: number[] = [];
  const commentLatencies: number[] = [];
  const cpuBefore = await cpuSnapshot(inst, servers);
  const lagBeforeWrites = await lagWarnings();
  log(`writes: ${cfg.clients} clients for ${cfg.writeSeconds} s (uploads and comments alternating)`);
  const writes = await attempt('sustained writes', () => closedLoop({
    clients: cfg.clients, seconds: cfg.writeSeconds,
    op: async (client, n) => {
      const t0 = performance.now();
      if (n % 2 === 0) {
        await upload(client);
        uploadLatencies.push(performance.now() - t0);
      } else {
        await comment(client, n);
        commentLatencies.push(performance.now() - t0);
      }
    },
    progress: (done, errors, elapsed) => {
      void lagProbe.lag().then((lag) => {
        writeLags.push({ at: elapsed, ...lag });
        log(`writes: ${done} (${fmt(done / elapsed)}/s, ${errors} errors, ${files.length} files); pipeline behind: ${describeLag(lag)}`);
      }, () => log(`writes: ${done} (${fmt(done / elapsed)}/s, ${errors} errors, ${files.length} files)`));
    },
  }));
  const cpuAfter = await cpuSnapshot(inst, servers);
  const writesLag = (await lagWarnings()) - lagBeforeWrites;
  if (writes) {
    log(`writes: ${brief(writes)}`);
    const cpu = cpuPercent(cpuBefore, cpuAfter, writes.seconds);
    log(`writes: CPU used meanwhile (of one core): ${Object.entries(cpu).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    const windowSeconds = cfg.writeSeconds >= 120 ? 60 : Math.max(1, cfg.writeSeconds / 4);
    // Over the configured duration: after it no new command starts, and the last ones only drain.
    const span = Math.min(writes.seconds, cfg.writeSeconds);
    const windows = windowRates(writes.completions.filter((c) => c <= span * 1000), span, windowSeconds);
    const first = windows[0] ?? NaN;
    const last = windows.at(-1) ?? NaN;
    log(`writes: per ${windowSeconds} s window: ${windows.map((w) => fmt(w)).join(', ')} commands/s`);
    details.writes = {
      ...summary(writes), windowSeconds, windows, cpuPercentOfOneCore: cpu, files: files.length, ackedAfterRywTimeout: writesLag,
      upload: { p50Ms: percentile(uploadLatencies, 50), p99Ms: percentile(uploadLatencies, 99), count: uploadLatencies.length },
      comment: { p50Ms: percentile(commentLatencies, 50), p99Ms: percentile(commentLatencies, 99), count: commentLatencies.length },
    };
    const errs = writes.errors > 0 ? ` (${writes.errors} errors)` : '';
    rows.push(
      kafka
        ? { measure: `commands/s${errs}`, docshare: writes.rate, ceiling: kafka.single.rate, unit: '/s', ceilingName: 'kafkajs send, 1 msg, acks=all' }
        : { measure: `commands/s${errs}`, docshare: writes.rate, unit: '/s', ceilingText: 'kafka: failed' },
    );
    if (kafka) rows.push({ measure: 'commands/s vs Kafka batched', docshare: writes.rate, ceiling: kafka.batched.rate * kafka.batchSize, unit: '/s', ceilingName: `kafkajs, ${kafka.batchSize} msgs per send` });
    if (java) rows.push({ measure: 'commands/s vs Kafka perf-test', docshare: writes.rate, ceiling: java.recordsPerSecond, unit: '/s', ceilingName: 'Java producer, 1 KiB, acks=all' });
    if (mongoCeiling) {
      rows.push({ measure: 'commands/s vs store insert', docshare: writes.rate, ceiling: mongoCeiling.insert.rate, unit: '/s', ceilingName: `insertOne of an append, ${store}` });
      rows.push({ measure: 'commands/s vs store upsert', docshare: writes.rate, ceiling: mongoCeiling.upsert.rate, unit: '/s', ceilingName: `guarded upsert $inc, ${store}` });
    }
    rows.push(cpuRow('CPU during the writes (% of one core)', cpu));
    rows.push(cpuRow('CPU idle, before seeding (% of one core)', idleCpu));
    rows.push({ measure: 'write latency p50', docshare: percentile(writes.latencies, 50), ...(kafka ? { ceiling: percentile(kafka.single.latencies, 50) } : {}), unit: 'ms', ceilingName: 'kafkajs send' });
    rows.push({ measure: 'write latency p99', docshare: percentile(writes.latencies, 99), ...(kafka ? { ceiling: percentile(kafka.single.latencies, 99) } : {}), unit: 'ms', ceilingName: 'kafkajs send' });
    if (mongoCeiling) rows.push({ measure: 'write latency p50 vs store insert', docshare: percentile(writes.latencies, 50), ceiling: percentile(mongoCeiling.insert.latencies, 50), unit: 'ms', ceilingName: 'insertOne' });
    if (writesLag > 0) rows.push({ measure: 'commands acked after the RYW timeout', docshareText: `${writesLag} of ${writes.ok}`, ceilingText: '0', ratioText: '' });
    rows.push({ measure: `upload p50 / p99 (${uploadLatencies.length})`, docshareText: `${ms(percentile(uploadLatencies, 50))} / ${ms(percentile(uploadLatencies, 99))}`, ceilingText: '', ratioText: '' });
    rows.push({ measure: `comment p50 / p99 (${commentLatencies.length})`, docshareText: `${ms(percentile(commentLatencies, 50))} / ${ms(percentile(commentLatencies, 99))}`, ceilingText: '', ratioText: '' });
    rows.push({
      measure: `rate per ${windowSeconds} s, first → last`, docshareText: `${fmt(first)} → ${fmt(last)} /s`,
      ceilingText: windows.length > 1 ? `${windows.length} windows: ${windows.map((w) => fmt(w)).join(' ')}` : '', ratioText: `${fmt(last / first)}x last/first`,
    });
  } else {
    rows.push(failedRow('commands/s'));
  }

  // Commands answered: how far behind are the read models, and how long until they reflect them?
  const writesCatchUp = await attempt('catch-up after the writes', () => catchUp('writes'));
  details.writesCatchUp = writesCatchUp ?? null;
  details.writeLags = writeLags;
  if (writes) rows.push(...catchUpRows('after the writes', writesCatchUp));

  // ---- 2. read-your-writes ----------------------------------------------------------------------
  rows.push({ section: `read-your-writes (ack → visible to its author, ${cfg.rywProbers} authors, ~${cfg.rywRate} writes/s in the background, poll every ${cfg.pollMs} ms)` });
  const lagBeforeRyw = await lagWarnings();
  // The floor of "ack → visible": one read by one client on an idle system (the first poll can be no faster).
  const oneRead: Record<'search' | 'files' | 'stats', number[]> = { search: [], files: [], stats: [] };
  await attempt('read-your-writes floor', async () => {
    const reader = probers[0]!;
    for (let i = 0; i < 20; i++) {
      let t0 = performance.now();
      await api.search(reader.token, SEARCH_TERMS[i % SEARCH_TERMS.length]!, 100);
      oneRead.search.push(performance.now() - t0);
      t0 = performance.now();
      await api.files(reader.token, reader.userId);
      oneRead.files.push(performance.now() - t0);
      t0 = performance.now();
      await api.stats(reader.token);
      oneRead.stats.push(performance.now() - t0);
    }
  });
  const ryw = await attempt('read-your-writes', async () => {
    const stopBackground = pacedLoad(cfg.rywRate, 64, (n) => (n % 2 === 0 ? upload(n % cfg.clients) : comment(n % cfg.clients, n)));
    const visible = { search: [] as number[], files: [] as number[], stats: [] as number[] };
    const firstPoll = { search: 0, files: 0, stats: 0 };
    const notVisible = { search: 0, files: 0, stats: 0 };
    const acks: number[] = [];
    let uploaded = 0;
    const deadline = performance.now() + cfg.rywSeconds * 1000;
    const letters = (): string => Array.from(randomBytes(10), (b) => String.fromCharCode(97 + (b % 26))).join('');
    /** One author: uploads a file with a word nobody else uses, then polls until each read model shows it; again until the deadline. */
    const probe = async (prober: User): Promise<void> => {
      let mine = 0;
      while (performance.now() < deadline && !instanceLost) {
        const word = `ryw${letters()}`;
        const input = { ...fileInput(uploaded), title: `${word} probe`, description: `read-your-writes probe ${word}` };
        const t0 = performance.now();
        const fileId = await api.upload(prober.token, input);
        const acked = performance.now();
        acks.push(acked - t0);
        uploaded += 1;
        mine += 1;
        const expectFiles = mine;
        const until = async (kind: keyof typeof visible, check: () => Promise<boolean>): Promise<void> => {
          let polls = 0;
          for (;;) {
            polls += 1;
            const seen = await check();
            const now = performance.now();
            if (seen) {
              visible[kind].push(now - acked);
              if (polls === 1) firstPoll[kind] += 1;
              return;
            }
            if (now - acked > cfg.rywTimeoutSeconds * 1000) {
              notVisible[kind] += 1;
              return;
            }
            await sleep(cfg.pollMs);
          }
        };
        await Promise.all([
          until('search', async () => (await api.search(prober.token, word, 100)).some((r) => Number(r.id) === fileId)),
          until('files', async () => (await api.files(prober.token, prober.userId)).files.some((f) => f.file_id === fileId)),
          until('stats', async () => (await api.stats(prober.token)).total_files === expectFiles),
        ]);
      }
    };
    try {
      await Promise.all(probers.map(probe));
    } finally {
      const background = await stopBackground();
      details.rywBackground = summary(background);
      log(`read-your-writes: background writes ${brief(background)}`);
    }
    return { visible, firstPoll, notVisible, acks, uploaded };
  });
  if (ryw) {
    const bg = details.rywBackground as { rate: number };
    for (const kind of ['search', 'files', 'stats'] as const) {
      const v = ryw.visible[kind];
      log(`read-your-writes ${kind}: p50 ${ms(percentile(v, 50))}, p99 ${ms(percentile(v, 99))}, max ${ms(Math.max(...v))}; visible at the first poll ${ryw.firstPoll[kind]}/${ryw.uploaded}, not within ${cfg.rywTimeoutSeconds} s ${ryw.notVisible[kind]}`);
      const floor = oneRead[kind];
      rows.push({
        measure: `${kind === 'search' ? 'api-search' : kind === 'files' ? 'api-files' : 'api-stats'} ack → visible p50 / p99`,
        docshareText: `${ms(percentile(v, 50))} / ${ms(percentile(v, 99))}`,
        ceilingText: floor.length > 0 ? `${ms(percentile(floor, 50))} / ${ms(percentile(floor, 99))} (one read, idle)` : 'failed',
        ratioText: `${floor.length > 0 ? `${ratioOf(percentile(v, 50), percentile(floor, 50))} p50; ` : ''}${ryw.firstPoll[kind]}/${ryw.uploaded} at 1st poll`
          + (ryw.notVisible[kind] ? `, ${ryw.notVisible[kind]} not in ${cfg.rywTimeoutSeconds} s` : ''),
      });
    }
    rows.push({ measure: `probe upload ack p50 / p99 (${ryw.uploaded})`, docshareText: `${ms(percentile(ryw.acks, 50))} / ${ms(percentile(ryw.acks, 99))}`, ceilingText: '', ratioText: '' });
    const rywLag = (await lagWarnings()) - lagBeforeRyw;
    const bgOk = (details.rywBackground as { ok: number }).ok + ryw.uploaded;
    if (rywLag > 0) rows.push({ measure: 'commands acked after the RYW timeout', docshareText: `${rywLag} of ${bgOk}`, ceilingText: '0', ratioText: '' });
    (details.rywBackground as Record<string, unknown>).ackedAfterRywTimeout = rywLag;
    rows.push({ measure: 'background writes achieved', docshare: bg.rate, ceiling: cfg.rywRate, unit: '/s', ceilingName: 'offered' });
    details.ryw = {
      uploads: ryw.uploaded,
      ackP50Ms: percentile(ryw.acks, 50), ackP99Ms: percentile(ryw.acks, 99),
      ...Object.fromEntries((['search', 'files', 'stats'] as const).map((k) => [k, {
        p50Ms: percentile(ryw.visible[k], 50), p99Ms: percentile(ryw.visible[k], 99), firstPoll: ryw.firstPoll[k], neverVisible: ryw.notVisible[k],
        oneReadIdleP50Ms: percentile(oneRead[k], 50), oneReadIdleP99Ms: percentile(oneRead[k], 99),
      }])),
    };
  } else {
    rows.push(failedRow('ack → visible'));
  }

  const rywCatchUp = await attempt('catch-up after read-your-writes', () => catchUp('read-your-writes'));
  details.rywCatchUp = rywCatchUp ?? null;
  if (ryw) rows.push(...catchUpRows('after this phase', rywCatchUp));

  // ---- 6. a big upload and download --------------------------------------------------------------
  if (cfg.bigMiB > 0) {
    rows.push({ section: `big file (${cfg.bigMiB} MiB)` });
    const bigPath = join(work, 'big.bin');
    await attempt('big file', async () => {
      const chunk = randomBytes(MiB);
      const out = createWriteStream(bigPath);
      for (let written = 0; written < bigBytes; written += MiB) {
        chunk.writeUInt32BE(written / MiB, 0);
        if (!out.write(chunk.subarray(0, Math.min(MiB, bigBytes - written)))) await new Promise<void>((r) => out.once('drain', () => r()));
      }
      await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
      const size = (await stat(bigPath)).size;
      log(`big: uploading ${cfg.bigMiB} MiB`);
      const lagBefore = await lagWarnings();
      let t0 = performance.now();
      const fileId = await api.upload(bigUser.token, {
        title: 'big bench file', description: 'a large upload', tags: 'bench,big', category: 'Big files',
        body: await openAsBlob(bigPath, { type: 'application/octet-stream' }), fileName: 'big.bin',
      }, 3_600_000);
      const upSeconds = (performance.now() - t0) / 1000;
      const lagged = (await lagWarnings()) > lagBefore;
      const url = await api.downloadUrl(bigUser.token, fileId);
      t0 = performance.now();
      const res = await fetch(url);
      if (!res.ok || !res.body) throw new Error(`big download: ${res.status}`);
      const got = await drain(res.body);
      const downSeconds = (performance.now() - t0) / 1000;
      if (got !== size) throw new Error(`big download: ${got} bytes, expected ${size}`);
      log(`big: upload ${fmt(cfg.bigMiB / upSeconds)} MiB/s (${upSeconds.toFixed(1)} s), download ${fmt(cfg.bigMiB / downSeconds)} MiB/s (${downSeconds.toFixed(1)} s)`);
      const bucket = `bench-ceiling-${inst.ns}`;
      ceilingNames.buckets.push(bucket);
      const direct = await attempt('minio ceiling', () => minioCeiling(serverEnv, bucket, bigPath, size));
      if (direct) log(`big: MinIO put ${fmt(cfg.bigMiB / direct.putSeconds)} MiB/s, get ${fmt(cfg.bigMiB / direct.getSeconds)} MiB/s`);
      details.big = { mib: cfg.bigMiB, upSeconds, ackedAfterRywTimeout: lagged, downSeconds, minioPutSeconds: direct?.putSeconds ?? null, minioGetSeconds: direct?.getSeconds ?? null };
      rows.push({ measure: `upload MiB/s${lagged ? ' (acked after the RYW timeout)' : ''}`, docshare: cfg.bigMiB / upSeconds, ...(direct ? { ceiling: cfg.bigMiB / direct.putSeconds } : { ceilingText: 'failed' }), unit: 'MiB/s', ceilingName: 'minio-js putObject' });
      rows.push({ measure: 'download MiB/s', docshare: cfg.bigMiB / downSeconds, ...(direct ? { ceiling: cfg.bigMiB / direct.getSeconds } : { ceilingText: 'failed' }), unit: 'MiB/s', ceilingName: 'minio-js getObject' });
    }).finally(() => rm(bigPath, { force: true }));
    if (!details.big) rows.push(failedRow('upload / download MiB/s'));
  }

  // ---- 6b. a resumable upload (issue 22) ------------------------------------------------------------
  await resumablePhase();

  // ---- 7. rebuilds ---------------------------------------------------------------------------------
  rows.push({ section: 'rebuild (npm run rebuild -- <model>, projectors running)' });
  const logRead = await attempt('event log read', () => eventLogRead(commandDb));
  if (logRead) log(`event log read (pages of 1,000 appends): ${logRead.events} events in ${logRead.seconds.toFixed(2)} s, ${fmt(logRead.rate)} events/s`);
  details.eventLogRead = logRead;
  for (const model of ['stats', 'files', 'search'] as const) {
    const result = await attempt(`rebuild ${model}`, async () => {
      const child = spawn(process.execPath, [join(ROOT, 'infra', 'rebuild.ts'), model], {
        cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          // The instance's KEK (kept in its DATA_DIR unless DATA_KEK is given), to open the log.
          DATA_KEK_FILE: join(inst.dataDir, 'secrets', 'data-kek'),
          ...env, ...serverEnv, MONGO_COMMAND_DB: inst.commandDb, MONGO_READ_DB: inst.readDb, ELASTICSEARCH_ALIAS: alias, LOG_LEVEL: cfg.logLevel,
        },
      });
      track(child);
      let output = '';
      child.stdout.on('data', (c: Buffer) => { output += c.toString(); });
      child.stderr.on('data', (c: Buffer) => { output += c.toString(); });
      const t0 = performance.now();
      const timer = setTimeout(() => {
        output += `\n(killed: still running after BENCH_STACK_REBUILD_TIMEOUT_SECONDS=${cfg.rebuildTimeoutSeconds})`;
        child.kill('SIGKILL');
      }, cfg.rebuildTimeoutSeconds * 1000);
      const code = await new Promise<number>((resolve) => child.once('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
      clearTimeout(timer);
      const wall = (performance.now() - t0) / 1000;
      const line = output.split('\n').find((l) => l.startsWith(`${model}:`)) ?? '';
      const events = Number(/(\d+) events replayed/.exec(line)?.[1] ?? NaN);
      const own = Number(/([\d.]+) s\s*$/.exec(line)?.[1] ?? NaN);
      if (code !== 0 || !Number.isFinite(events)) {
        // the lines that name the error (a stack trace ends with "Node.js v…", which says nothing)
        const lines = output.trim().split('\n').map((l) => l.trim()).filter(Boolean);
        const named = lines.filter((l) => /error|failed|refused|timed out/i.test(l)).slice(0, 3);
        throw new Error(`exit ${code}: ${(named.length > 0 ? named : lines.slice(-3)).join(' | ').slice(0, 600)}`);
      }
      log(`rebuild ${model}: ${line.trim()} (process ${wall.toFixed(1)} s)`);
      // The tool's own time (without the process start); it includes its fixed waits for readers' pointer caches.
      const seconds = Number.isFinite(own) ? own : wall;
      return { events, wall, seconds, rate: events / Math.max(0.001, seconds), line: line.trim() };
    });
    details[`rebuild ${model}`] = result ?? null;
    rows.push(result
      ? {
        measure: `rebuild ${model} events/s (${result.events} events in ${result.seconds.toFixed(1)} s, fixed waits included)`,
        docshare: result.rate, ...(logRead ? { ceiling: logRead.rate } : { ceilingText: 'failed' }), unit: 'ev/s', ceilingName: 'reading the event log',
      }
      : failedRow(`rebuild ${model} events/s`));
  }

  } // sections

  // ---- memory ------------------------------------------------------------------------------------
  rss.end = await serviceRss(inst);
  const serversMemory = servers ? await serverMemory(servers) : {};
  details.rssMiB = { services: rss, servers: serversMemory };
  rows.push({ section: 'memory (RSS)' });
  for (const name of SERVICE_NAMES) {
    rows.push({
      measure: `${name} RSS (start → seeded → end)`,
      docshareText: `${fmt(rss.start?.[name])} → ${fmt(rss.seeded?.[name])} → ${fmt(rss.end[name])} MiB`, ceilingText: '', ratioText: '',
    });
  }
  for (const [name, mib] of Object.entries(serversMemory)) rows.push({ measure: `server ${name} memory (PSS of its process tree)`, docshareText: `${fmt(mib)} MiB`, ceilingText: '', ratioText: '' });

  await lagProbe.close();
  await es.close();
  await mongo.close();
  if (instanceLost) throw new Error(`the instance stopped during the run: ${instanceLost}`);
} catch (error) {
  exitCode = 1;
  console.error(`\nbench:stack FAILED: ${message(error)}`);
} finally {
  await cleanup();
}

if (rows.length > 0) {
  const title = `docshare bench:stack (${process.version}, ${new Date().toISOString()}, ${cfg.reuse ? 'reused servers' : `own servers, ports +${cfg.portOffset}`})`;
  console.log(`\n${title}\nratio = docshare ÷ ceiling (a rate below 1x is slower than the ceiling; a latency above 1x is slower)\n`);
  console.log(renderTable(rows));
  if (costIdle && costPhases.length > 0) {
    console.log(`\nCPU-seconds per 1,000 operations (each operation alone at a steady rate for ${cfg.costSeconds} s, until the pipeline caught up; `
      + `idle over the same span taken off; process trees: ferretdb(+postgres) = FerretDB, PostgreSQL and its backends)\n`);
    console.log(renderCpuTable(costPhases, costIdle));
    console.log('\nOne core carries (ops/s of that operation alone = 1,000 ÷ CPU-s per 1,000 ops; - : under 0.05 CPU-s per 1,000 ops)\n');
    console.log(renderCapacityTable(costPhases, costIdle));
    console.log(`\nStore commands per operation (${'docshare_store_commands_total'} of each service, idle rate taken off; n/a: the service exports no such counter)\n`);
    console.log(renderCommandsTable(costPhases, costIdle));
  }
  if (failures.length > 0) console.log(`\nfailed measures:\n${failures.map((f) => `  - ${f}`).join('\n')}`);
  if (cfg.out) {
    await writeFile(cfg.out, `${JSON.stringify({ title, config: cfg, rows: rowsJson(rows), failures, details }, null, 2)}\n`);
    console.log(`\nJSON written to ${cfg.out}`);
  }
}
if (exitCode === 0 && failures.length > 0) exitCode = 2;
process.exit(exitCode);
