/**
 * npm run test:chaos: faults on the real distributed stack, under a recording load.
 *
 * 1. Starts its own servers (infra/local: Kafka, FerretDB, Elasticsearch, MinIO, Redis) on its own
 *    ports (defaults + CHAOS_PORT_OFFSET) and data dir, and one distributed instance on them.
 * 2. Runs CHAOS_CLIENTS (8) clients: register (and a webhook endpoint on the suite's receiver, every
 *    event type), upload random bytes (sha256 known), comment, view
 *    pages, authorize downloads (and fetch the bytes), sell, buy, delete, read; every request has
 *    its own X-Request-Id and is recorded with its answer. Beside them, CHAOS_VIEWERS (4) viewers
 *    view pages (half on one hot file; signed in and anonymous).
 * 3. Under that load, one fault at a time: kill -9 and restart of each server, kill -9 of each
 *    service (the instance's supervisor restarts it), a SIGSTOP of Elasticsearch. After each, a
 *    probe round-trips every route; the time until one whole round succeeds is its recovery.
 * 4. Stops the load and proves, from the record and the event store: no acknowledged write lost,
 *    none recorded twice, no event nobody asked for, only clean JSON 503s during outages, exact
 *    counters, file lists, comment lists and search equal to the events, the statistics over time
 *    (api-daily of each user and file) equal to the events day by day, each file's views and
 *    downloads between what was acknowledged and that plus what failed in flight, and every
 *    user's days adding up to api-stats' totals, a rebuild (infra/rebuild.ts all) answering the
 *    same, every surviving upload's bytes intact, and every webhook message the final event store
 *    makes received by its owner's endpoint, signed, and by no one else (infra/chaos/webhooks.ts;
 *    distinct webhook-ids: a re-send after the dispatcher's kill counts once).
 * 5. Prints requests by status, the fault table and every violation; exits 1 on any violation.
 * Servers, instance and temp dirs are always removed; on failure the record and logs are kept
 * (their path is printed).
 *
 * Env: CHAOS_ROUNDS (1: each fault once), CHAOS_FAULTS (comma list, default all, in order:
 * kafka,ferretdb,elasticsearch,minio,redis, then every service of the registry in start order
 * (libs/contracts/src/services.ts), then elasticsearch-pause), CHAOS_FAULT_SECONDS (5: how long a killed server
 * stays down), CHAOS_PAUSE_SECONDS (20), CHAOS_CALM_SECONDS (2: load between faults),
 * CHAOS_WARMUP_SECONDS (5), CHAOS_CLIENTS (8), CHAOS_VIEWERS (4), CHAOS_THINK_MS (100), CHAOS_REQUEST_TIMEOUT_MS
 * (30000), CHAOS_RECOVERY_TIMEOUT_SECONDS (120: "never recovered"), CHAOS_PORT_OFFSET (3000),
 * CHAOS_WEBHOOK_TIMEOUT_SECONDS (420: how long the check waits for the last webhook messages; a
 * killed dispatcher's leased deliveries wait out their lease), CHAOS_WEBHOOK_RETRY_SCHEDULE
 * (the instance's WEBHOOK_RETRY_SCHEDULE, 1s,2s,5s,10s,30s,1m,2m,5m),
 * CHAOS_KEEP=1 (keep the temp dir), CHAOS_ARTIFACTS (where to keep record and logs on failure),
 * CHAOS_LOG_LEVEL (services' LOG_LEVEL, warn).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { sleep, type CloudEvent } from '@docshare/contracts';
import { makePersonalData, parseKek } from '@docshare/personal-data';
import { openMongoKeyStore } from '@docshare/personal-data/mongo';
import { GATEWAY_SERVICE } from '@docshare/contracts/services';
import { Instance, SERVICE_NAMES, type ServiceName } from './instance.ts';
import { Recorder, runClient, runViewer, type Rec, type User } from './load.ts';
import { Probe } from './probe.ts';
import { SERVER_NAMES, Servers, type ServerName } from './servers.ts';
import { checkDailyCounts, checkRecord, modelOf, type AnalyticsAnswers, type DailyAnswer, type Event, type Window } from './verify.ts';
import { allReceived, checkWebhookDeliveries, expectedWebhookMessages, registerWebhook, WebhookReceiver } from './webhooks.ts';
import { freePort } from '../stack/ports.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const env = process.env;
const num = (name: string, fallback: number): number => {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name}=${v} is not a number`);
  return n;
};
const ALL_FAULTS = [...SERVER_NAMES, ...SERVICE_NAMES, 'elasticsearch-pause'] as const;
type FaultName = typeof ALL_FAULTS[number];
const cfg = {
  rounds: num('CHAOS_ROUNDS', 1),
  faults: (env.CHAOS_FAULTS ? env.CHAOS_FAULTS.split(',').map((s) => s.trim()) : [...ALL_FAULTS]) as FaultName[],
  faultSeconds: num('CHAOS_FAULT_SECONDS', 5),
  pauseSeconds: num('CHAOS_PAUSE_SECONDS', 20),
  calmSeconds: num('CHAOS_CALM_SECONDS', 2),
  warmupSeconds: num('CHAOS_WARMUP_SECONDS', 5),
  clients: num('CHAOS_CLIENTS', 8),
  viewers: num('CHAOS_VIEWERS', 4),
  thinkMs: num('CHAOS_THINK_MS', 100),
  requestTimeoutMs: num('CHAOS_REQUEST_TIMEOUT_MS', 30_000),
  recoveryTimeoutMs: num('CHAOS_RECOVERY_TIMEOUT_SECONDS', 120) * 1000,
  portOffset: num('CHAOS_PORT_OFFSET', 3000),
  webhookTimeoutMs: num('CHAOS_WEBHOOK_TIMEOUT_SECONDS', 420) * 1000,
  webhookRetrySchedule: env.CHAOS_WEBHOOK_RETRY_SCHEDULE ?? '1s,2s,5s,10s,30s,1m,2m,5m',
  keep: env.CHAOS_KEEP === '1',
};
for (const f of cfg.faults) if (!(ALL_FAULTS as readonly string[]).includes(f)) throw new Error(`CHAOS_FAULTS: unknown fault ${f} (known: ${ALL_FAULTS.join(', ')})`);

const secs = (ms: number | undefined): string => ms === undefined ? '-' : (ms / 1000).toFixed(1);
const began = performance.now();
const log = (line: string): void => console.log(`[chaos ${secs(performance.now() - began).padStart(6)}s] ${line}`);

const violations: string[] = [];
const violation = (text: string): void => {
  violations.push(text);
  log(`VIOLATION: ${text}`);
};

interface FaultResult {
  fault: string;
  /** recorder times (ms) */
  injectedAt: number;
  restartedAt?: number;
  recoveredAt?: number;
  probeRounds: number;
  lastFailure: string;
  notes: string[];
}

// ---- set-up -----------------------------------------------------------------------------------
const work = await mkdtemp(join(tmpdir(), 'docshare-chaos-'));
const servers = new Servers(join(work, 'infra'), cfg.portOffset);
const receiver = new WebhookReceiver();
let instance: Instance | undefined;
let cleaning: Promise<void> | undefined;
const cleanup = (): Promise<void> => {
  cleaning ??= (async () => {
    await instance?.close().catch((e: unknown) => log(`stopping the instance: ${String(e)}`));
    await receiver.stop();
    await servers.stopAll();
    if (!cfg.keep) await rm(work, { recursive: true, force: true }).catch(() => undefined);
  })();
  return cleaning;
};
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    log(`${signal}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}

const results: FaultResult[] = [];
const gatewayDown: Window[] = [];
let recorder: Recorder | undefined;
let exitCode = 1;
let instanceLost: string | null = null;
let instanceLostAt = 0;

const keepArtifacts = async (reason: string): Promise<void> => {
  const dir = env.CHAOS_ARTIFACTS ?? join(tmpdir(), `docshare-chaos-artifacts-${Date.now()}`);
  await mkdir(dir, { recursive: true });
  if (recorder) await writeFile(join(dir, 'record.jsonl'), recorder.records.map((r) => JSON.stringify(r)).join('\n'));
  await writeFile(join(dir, 'violations.txt'), `${reason}\n\n${violations.join('\n')}\n`);
  await cp(join(work, 'instance.log'), join(dir, 'instance.log')).catch(() => undefined);
  for (const s of SERVER_NAMES) await writeFile(join(dir, `${s}.log.tail`), await servers.logTail(s, 200));
  log(`record, violations and logs kept in ${dir}`);
};

try {
  log(`servers: starting kafka, ferretdb, elasticsearch, minio, redis (ports = defaults + ${cfg.portOffset}) in ${work}/infra`);
  let t = performance.now();
  await servers.start().catch((error: unknown) => {
    const text = String(error);
    throw new Error(/already in use/.test(text)
      ? `${text}\nA port of the chaos servers is taken: set CHAOS_PORT_OFFSET to another offset (ports = infra/local defaults + offset), or stop what holds it (a killed chaos run leaves its servers under ${tmpdir()}/docshare-chaos-*/infra: DOCSHARE_INFRA_DATA=<that dir> infra/local/stop.sh)`
      : text);
  });
  log(`servers: ready in ${secs(performance.now() - t)} s`);
  const serverEnv = await servers.stackEnv();
  const port = await freePort();
  await receiver.start();
  instance = new Instance({
    port, dataDir: join(work, 'instance'), jwtSecret: randomBytes(48).toString('base64'), serverEnv, logFile: join(work, 'instance.log'),
    // The receiver is on loopback over http: the SSRF opt-in is for tests like this one (docs/ops.md: Webhooks).
    extraEnv: { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_SCHEDULE: cfg.webhookRetrySchedule },
  });
  const inst = instance;
  inst.onUnexpectedExit((info) => {
    instanceLost = info;
    instanceLostAt = recorder?.now() ?? 0;
    log(`the instance stopped: ${info}`);
  });
  t = performance.now();
  await inst.start();
  log(`instance ${inst.ns}: ready on ${inst.baseUrl} in ${secs(performance.now() - t)} s`);

  // The statistics over time are read over the UTC days of the run (the servers share this clock).
  const firstDay = new Date().toISOString().slice(0, 10);
  const runId = randomBytes(4).toString('hex');
  const runTag = `chaos${runId}`;
  const rec = new Recorder(inst.baseUrl, runId, cfg.requestTimeoutMs);
  recorder = rec;
  rec.afterRegister = (client, user) => registerWebhook(rec, client, user, receiver, rec.now() + 120_000);
  const probeUser: User = await rec.register('probe', 60_000);
  const probe = new Probe(rec, probeUser, runTag);

  let stopLoad = false;
  const clients = [
    ...Array.from({ length: cfg.clients }, (_, i) => runClient(rec, `c${i}`, runTag, () => stopLoad, cfg.thinkMs)
      .catch((e: unknown) => violation(`client c${i} stopped: ${String(e)}`))),
    ...Array.from({ length: cfg.viewers }, (_, i) => runViewer(rec, `v${i}`, () => stopLoad, cfg.thinkMs / 2)
      .catch((e: unknown) => violation(`viewer v${i} stopped: ${String(e)}`))),
  ];
  log(`load: ${cfg.clients} clients, ${cfg.viewers} viewers`);
  await sleep(cfg.warmupSeconds * 1000);
  const baseline = await probe.untilRecovered(cfg.recoveryTimeoutMs);
  if (!baseline.recovered) throw new Error(`the probe never succeeded before any fault: ${baseline.lastFailure}`);
  log(`baseline probe ok; ${rec.records.length} requests so far`);

  /** If the instance died (a service exit stopped it), the suite starts it again. */
  const reviveInstance = async (result: FaultResult): Promise<void> => {
    if (!instanceLost) return;
    violation(`${result.fault}: ${instanceLost}; the API was down until the suite restarted the instance (services must be supervised)`);
    // Its gateway went down with it, possibly as early as the fault itself.
    const from = Math.min(instanceLostAt, result.injectedAt);
    instanceLost = null;
    await inst.stop();
    await inst.start();
    gatewayDown.push({ from, to: rec.now(), label: 'instance restart' });
    result.notes.push(`instance restarted by the suite (${secs(rec.now() - from)} s)`);
  };

  const awaitRecovery = async (result: FaultResult): Promise<void> => {
    for (;;) {
      const outcome = await probe.untilRecovered(cfg.recoveryTimeoutMs, () => instanceLost !== null);
      if (instanceLost) {
        await reviveInstance(result);
        continue;
      }
      result.probeRounds += outcome.rounds;
      result.lastFailure = outcome.lastFailure;
      if (outcome.recovered) {
        result.recoveredAt = outcome.at;
        result.notes.push(outcome.lastRound);
      }
      else violation(`${result.fault}: never recovered: no probe round succeeded within ${cfg.recoveryTimeoutMs / 1000} s; last failure: ${outcome.lastFailure}`);
      return;
    }
  };

  const runFault = async (fault: FaultName): Promise<FaultResult> => {
    const result: FaultResult = { fault, injectedAt: rec.now(), probeRounds: 0, lastFailure: '', notes: [] };
    if ((SERVER_NAMES as readonly string[]).includes(fault)) {
      const name = fault as ServerName;
      await servers.kill(name);
      result.injectedAt = rec.now();
      await sleep(cfg.faultSeconds * 1000);
      const t0 = rec.now();
      await servers.start([name]);
      result.restartedAt = rec.now();
      result.notes.push(`server restart ${secs(result.restartedAt - t0)} s`);
    } else if (fault === 'elasticsearch-pause') {
      await servers.pause('elasticsearch');
      result.injectedAt = rec.now();
      await sleep(cfg.pauseSeconds * 1000);
      await servers.resume('elasticsearch');
      result.restartedAt = rec.now();
    } else {
      const name = fault as ServiceName;
      const pid = await inst.servicePid(name);
      if (pid === null) {
        violation(`${fault}: cannot find the service's pid (no ${join(inst.dataDir, 'run', `${name}.pid`)}, nothing in /proc)`);
        return result;
      }
      process.kill(pid, 'SIGKILL');
      result.injectedAt = rec.now();
      result.notes.push(`killed pid ${pid}`);
      await awaitRecovery(result);
      if (name === GATEWAY_SERVICE.name) gatewayDown.push({ from: result.injectedAt, to: result.recoveredAt ?? rec.now(), label: 'gateway kill' });
      const now = await inst.servicePid(name);
      result.notes.push(now === null ? 'no running process afterwards' : now === pid ? 'same pid afterwards?' : `restarted as pid ${now}`);
      return result;
    }
    await awaitRecovery(result);
    return result;
  };

  for (let round = 1; round <= cfg.rounds; round += 1) {
    for (const fault of cfg.faults) {
      log(`round ${round}: ${fault} …`);
      const r = await runFault(fault);
      results.push(r);
      log(`round ${round}: ${fault}: recovered ${secs(r.recoveredAt === undefined ? undefined : r.recoveredAt - r.injectedAt)} s after the fault` +
        `${r.restartedAt === undefined ? '' : `, ${secs(r.recoveredAt === undefined ? undefined : r.recoveredAt - r.restartedAt)} s after the restart/resume`}` +
        ` (${r.probeRounds} probe rounds${r.lastFailure ? `; it failed with: ${r.lastFailure.slice(0, 200)}` : ''}) ${r.notes.join('; ')}`);
      await sleep(cfg.calmSeconds * 1000);
    }
  }

  stopLoad = true;
  await Promise.all(clients);
  log(`load stopped: ${rec.records.length} requests`);

  // ---- verification ---------------------------------------------------------------------------
  /** A service that died with no fault injected is a violation; start the instance again so the checks can go on. */
  const ensureInstance = async (phase: string): Promise<void> => {
    if (!instanceLost) return;
    violation(`${phase}: ${instanceLost} with no fault injected`);
    const from = instanceLostAt;
    instanceLost = null;
    await inst.stop();
    await inst.start();
    gatewayDown.push({ from, to: rec.now(), label: `instance restart (${phase})` });
  };
  await ensureInstance('while the load stopped');
  const users = [...rec.users.values()];
  const mongo = new MongoClient(serverEnv.MONGO_URL ?? '', { serverSelectionTimeoutMS: 10_000 });
  await mongo.connect();
  const keyStore = await openMongoKeyStore(mongo.db(inst.commandDb));
  const kekText = process.env['DATA_KEK'] ?? (await readFile(join(inst.dataDir, 'secrets', 'data-kek'), 'utf8')).trim();
  const personal = makePersonalData({ store: keyStore, kek: parseKek(kekText) });
  const readEvents = async (): Promise<Event[]> => {
    const out: Event[] = [];
    let next = 1;
    const docs = await mongo.db(inst.commandDb).collection<{ position: number; count: number; events: unknown[] | string }>('events').find({}).sort({ position: 1 }).toArray();
    for (const doc of docs) {
      if (doc.position !== next && out.length > 0) violation(`event store: position ${doc.position} follows ${next - 1} (a gap)`);
      next = doc.position + doc.count;
      // Events are documents; appends stored before that keep them as JSON text.
      const events = (typeof doc.events === 'string' ? JSON.parse(doc.events) : doc.events) as Array<Omit<Event, 'position'>>;
      events.forEach((e, i) => out.push({ ...e, position: doc.position + i }));
    }
    // Personal fields are sealed in the store (issue 24): opened with the instance's KEK, as every consumer opens them.
    const opened = await personal.open(out.map((e) => ({ position: e.position, event: e as unknown as CloudEvent })));
    return opened.map(({ position, event }) => ({ ...(event as unknown as Omit<Event, 'position'>), position }));
  };
  const events = await readEvents();
  log(`event store: ${events.length} events`);
  const model = modelOf(events, users.map((u) => u.userId));

  const ok = (r: Rec): boolean => r.status === 200 || r.status === 201;
  const pages = async (op: 'files' | 'comments' | 'search', user: User): Promise<unknown[] | string> => {
    const all: unknown[] = [];
    for (let page = 1; page <= 100; page += 1) {
      const r = op === 'files'
        ? await rec.send('verify', 'files', 'GET', `/api/V1/users/api-files?user_id=${user.userId}&page=${page}&per_page=100`, { token: user.token })
        : op === 'comments'
          ? await rec.send('verify', 'comments', 'POST', `/api/V1/users/api-comments?page=${page}&per_page=100`, { token: user.token, json: { page, per_page: 100 } })
          : await rec.send('verify', 'search', 'POST', '/api/V1/stats/api-search', { token: user.token, json: { search: runTag, page, per_page: 100 } });
      if (op === 'search' && r.status === 404 && page === 1) return [];
      if (!ok(r) || !r.json) return `${op} page ${page}: ${r.status || r.error} ${r.body ?? ''}`;
      const items = (op === 'files' ? r.json.files : op === 'comments' ? r.json.data : r.json.results) as unknown[];
      all.push(...items);
      const total = typeof r.json.total === 'number' ? r.json.total : undefined;
      if (total === undefined && op === 'comments') return all; // an unpaged list is whole
      if (items.length < 100 || (total !== undefined && all.length >= total)) return all;
    }
    return all;
  };

  /** api-stats and api-daily over the run's days of every user, and api-daily of every file still there. */
  const dailyAnswers = async (): Promise<AnalyticsAnswers> => {
    const range = `from=${firstDay}&to=${new Date().toISOString().slice(0, 10)}`;
    const dailyOf = async (user: User, fileId?: string): Promise<DailyAnswer | string> => {
      const r = await rec.send('verify', 'daily', 'GET', `/api/V1/stats/api-daily?${range}${fileId === undefined ? '' : `&file_id=${fileId}`}`, { token: user.token }, fileId === undefined ? {} : { fileId });
      return ok(r) && r.json ? r.json as unknown as DailyAnswer : `api-daily${fileId === undefined ? '' : ` of file ${fileId}`}: ${r.status || r.error} ${r.body ?? ''}`;
    };
    const out: AnalyticsAnswers = { users: new Map(), files: new Map() };
    for (const u of users) {
      const stats = await rec.send('verify', 'stats', 'POST', '/api/V1/stats/api-stats', { token: u.token });
      const data = stats.json?.data as { total_views: number; total_downloads: number } | undefined;
      out.users.set(u.userId, { stats: data ?? `api-stats: ${stats.status || stats.error} ${stats.body ?? ''}`, daily: await dailyOf(u) });
    }
    for (const [fileId, f] of model.alive) {
      const owner = rec.users.get(f.ownerId);
      if (owner) out.files.set(fileId, await dailyOf(owner, fileId));
    }
    return out;
  };

  /** Differences between the API's answers and the model; empty when equal. */
  const compare = async (): Promise<{ diffs: string[]; answers: unknown }> => {
    const diffs: string[] = [];
    const answers: Record<string, unknown> = {};
    for (const u of users) {
      const m = model.users.get(u.userId);
      if (!m) continue;
      const stats = await rec.send('verify', 'stats', 'POST', '/api/V1/stats/api-stats', { token: u.token });
      const data = stats.json?.data as Record<string, number> | undefined;
      const got = data ? Object.fromEntries(Object.keys(m.stats).map((k) => [k, data[k]])) : null;
      if (JSON.stringify(got) !== JSON.stringify(m.stats)) diffs.push(`stats of user ${u.userId}: API ${JSON.stringify(got ?? stats.body)} ≠ events ${JSON.stringify(m.stats)}`);
      const files = await pages('files', u);
      if (typeof files === 'string') diffs.push(`files of user ${u.userId}: ${files}`);
      else {
        const listed = new Map((files as Array<{ file_id: unknown; title: string }>).map((f) => [String(f.file_id), f.title]));
        const missing = [...m.files.keys()].filter((id) => !listed.has(id));
        const extra = [...listed.keys()].filter((id) => !m.files.has(id));
        const retitled = [...m.files].filter(([id, title]) => listed.has(id) && listed.get(id) !== title);
        if (files.length !== listed.size) diffs.push(`files of user ${u.userId}: duplicates in the list`);
        if (missing.length + extra.length + retitled.length > 0) diffs.push(`files of user ${u.userId}: missing ${missing.join(',') || '-'}; not in the events ${extra.join(',') || '-'}; titles differ ${retitled.map(([id]) => id).join(',') || '-'}`);
      }
      const comments = await pages('comments', u);
      if (typeof comments === 'string') diffs.push(`comments of user ${u.userId}: ${comments}`);
      else {
        const ids = (comments as Array<{ comment_id: unknown }>).map((c) => Number(c.comment_id));
        const set = new Set(ids);
        const missing = [...m.comments].filter((id) => !set.has(id));
        const extra = [...set].filter((id) => !m.comments.has(id));
        if (ids.length !== set.size) diffs.push(`comments of user ${u.userId}: duplicates in the list`);
        if (missing.length + extra.length > 0) diffs.push(`comments of user ${u.userId}: missing ${missing.join(',') || '-'}; not in the events ${extra.join(',') || '-'}`);
      }
      answers[u.userId] = { stats: got, files: typeof files === 'string' ? files : [...new Set((files as Array<{ file_id: unknown }>).map((f) => String(f.file_id)))].sort(), comments: typeof comments === 'string' ? comments : (comments as Array<{ comment_id: unknown }>).map((c) => Number(c.comment_id)).sort((a, b) => a - b) };
    }
    const analytics = await dailyAnswers();
    diffs.push(...checkDailyCounts(rec.records, model, analytics));
    answers.analytics = { users: [...analytics.users], files: [...analytics.files] };
    const found = await pages('search', users[0] as User);
    if (typeof found === 'string') diffs.push(`search: ${found}`);
    else {
      const ids = new Set((found as Array<{ id: unknown }>).map((r) => String(r.id)));
      const missing = [...model.searchable].filter((id) => !ids.has(id));
      const extra = [...ids].filter((id) => !model.searchable.has(id));
      if (missing.length + extra.length > 0) diffs.push(`search for the run's tag: missing ${missing.length} (${missing.slice(0, 20).join(',')}); not searchable by the events ${extra.length} (${extra.slice(0, 20).join(',')})`);
      answers.search = [...ids].sort();
    }
    return { diffs, answers };
  };

  t = performance.now();
  let settled = await compare();
  while (settled.diffs.length > 0 && performance.now() - t < cfg.recoveryTimeoutMs) {
    await sleep(2_000);
    await ensureInstance('comparing the read models');
    settled = await compare();
  }
  log(`read models vs events: ${settled.diffs.length === 0 ? `equal (settled in ${secs(performance.now() - t)} s)` : 'DIFFERENT'}`);
  for (const d of settled.diffs) violation(`read model ≠ events: ${d}`);

  // A fresh rebuild of every read model answers the same.
  const rebuild = await new Promise<{ code: number; output: string }>((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, 'infra', 'rebuild.ts'), 'all'], {
      cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        // The instance's KEK (infra/stack/instance.ts keeps it in its DATA_DIR unless DATA_KEK is given), to open the log.
        DATA_KEK_FILE: join(inst.dataDir, 'secrets', 'data-kek'),
        ...process.env, ...serverEnv, MONGO_COMMAND_DB: inst.commandDb, MONGO_READ_DB: inst.readDb, ELASTICSEARCH_ALIAS: `docshare-files-${inst.ns}`,
      },
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => { output += c.toString(); });
    child.stderr.on('data', (c: Buffer) => { output += c.toString(); });
    child.once('exit', (code) => resolve({ code: code ?? 1, output }));
  });
  if (rebuild.code !== 0) violation(`npm run rebuild -- all failed (${rebuild.code}): ${rebuild.output}`);
  else {
    log(`rebuild: ${rebuild.output.trim().split('\n').join(' | ')}`);
    await ensureInstance('rebuilding');
    const rebuilt = await compare();
    for (const d of rebuilt.diffs) violation(`rebuilt read model ≠ events: ${d}`);
    if (JSON.stringify(rebuilt.answers) !== JSON.stringify(settled.answers)) violation('the answers after a rebuild differ from the live ones (see the diffs above)');
  }

  // Bytes: every surviving upload (acknowledged, or recorded though unanswered) downloads intact.
  const uploads = new Map(rec.records.filter((r) => r.op === 'upload').map((r) => [r.id, r]));
  const alive = [...model.alive];
  let checked = 0;
  const checker = users[0] as User;
  const byteFailures: string[] = [];
  const fail = (text: string): void => { byteFailures.push(text); };
  const checkBytes = async (): Promise<void> => {
    for (;;) {
      const next = alive.pop();
      if (!next) return;
      const [fileId, f] = next;
      const up = uploads.get(f.causationid);
      if (!up?.sha) {
        fail(`file ${fileId}: no upload of the record made it (causationid ${f.causationid})`);
        continue;
      }
      if (f.forSale) {
        const owner = rec.users.get(f.ownerId);
        const r = owner ? await rec.send('verify', 'sell', 'POST', '/api/V1/docs/api-update', { token: owner.token, json: { id: fileId, for_sale: false } }, { fileId }) : undefined;
        if (!r || !ok(r)) { fail(`file ${fileId}: could not take it off sale to check its bytes: ${r?.status || r?.error} ${r?.body ?? ''}`); continue; }
      }
      const dl = await rec.send('verify', 'download', 'GET', `/api/V1/docs/api-download?file_id=${fileId}`, { token: checker.token }, { fileId });
      const url = dl.json?.download_url;
      if (!ok(dl) || typeof url !== 'string') { fail(`file ${fileId}: download authorization ${dl.status || dl.error} ${dl.body ?? ''}`); continue; }
      const content = await rec.send('verify', 'content', 'GET', new URL(url).pathname, { url }, { fileId, sha: up.sha, size: up.size });
      if (!ok(content)) fail(`file ${fileId}: content ${content.status || content.error} ${content.body ?? ''}`);
      checked += 1; // a sha mismatch is flagged on the record (badBytes)
    }
  };
  await Promise.all(Array.from({ length: 8 }, checkBytes));
  log(`bytes: ${checked} of ${model.alive.size} surviving files downloaded`);
  if (byteFailures.length > 0) violation(`BYTES: ${byteFailures.length} surviving file(s) could not be checked:\n      ${byteFailures.slice(0, 10).join('\n      ')}`);
  await ensureInstance('checking the bytes');

  // The record against the final event store (the checks above added downloads and updates).
  const final = await readEvents();
  await mongo.close();
  const check = checkRecord(rec.records, final, gatewayDown);
  for (const v of check.violations) violation(v);

  // Webhooks: every message of the final log reaches its owner's endpoint (the last ones may still be on their way).
  const expectedMessages = expectedWebhookMessages(final);
  t = performance.now();
  while (!allReceived(expectedMessages, receiver.received()) && performance.now() - t < cfg.webhookTimeoutMs) await sleep(1_000);
  const webhookViolations = checkWebhookDeliveries(expectedMessages, receiver.received());
  for (const v of webhookViolations) violation(v);
  const expectedCount = [...expectedMessages.values()].reduce((n, ids) => n + ids.size, 0);
  log(`webhooks: ${receiver.distinct()} distinct messages received of ${expectedCount} expected for ${expectedMessages.size} users, ` +
    `${receiver.deliveries} deliveries (${receiver.deliveries - receiver.distinct()} re-sent; ${receiver.unverified} to endpoints whose registration was not answered), ` +
    `${receiver.stray} stray requests; ${webhookViolations.length === 0 ? `all within ${secs(performance.now() - t)} s of the checks` : `${webhookViolations.length} violation(s)`}`);

  // ---- summary ------------------------------------------------------------------------------------
  const byStatus = new Map<string, number>();
  for (const r of rec.records) {
    const key = `${r.op} ${r.status === 0 ? (r.timedOut ? 'timeout' : 'conn-error') : r.status}`;
    byStatus.set(key, (byStatus.get(key) ?? 0) + 1);
  }
  const messages = new Map<string, number>();
  for (const r of rec.records) {
    if (r.status < 500) continue;
    const key = `${r.status} ${r.op} ${String(r.json?.message ?? r.body?.slice(0, 60) ?? '')}`;
    messages.set(key, (messages.get(key) ?? 0) + 1);
  }
  console.log('\n=== chaos: requests by operation and status ===');
  for (const [k, n] of [...byStatus].sort()) console.log(`  ${k.padEnd(28)} ${n}`);
  console.log('=== chaos: answers ≥ 500 ===');
  for (const [k, n] of [...messages].sort()) console.log(`  ${k.padEnd(60)} ${n}`);
  console.log(`  connection errors while the gateway was down: ${check.connectionErrorsInWindows}; timeouts (> ${cfg.requestTimeoutMs / 1000} s): ${check.timeouts.length}` +
    `; writes answered with an error yet recorded once: ${check.recordedUnacknowledged.length}`);
  for (const r of check.timeouts.slice(0, 10)) console.log(`    timeout: ${r.id} ${r.op} ${r.path} at ${secs(r.at)} s`);
  const unacked = new Map<string, Rec[]>();
  for (const r of check.recordedUnacknowledged) {
    const key = `${r.op} ${r.status || (r.timedOut ? 'timeout' : 'conn-error')} ${String(r.json?.message ?? '')}`;
    unacked.set(key, [...(unacked.get(key) ?? []), r]);
  }
  for (const [k, list] of unacked) console.log(`    recorded though answered with an error: ${k}: ${list.length} (e.g. ${list.slice(0, 3).map((r) => `${r.id} at ${secs(r.at)} s`).join(', ')})`);
  console.log('=== chaos: recovery per fault (s) ===');
  console.log(`  ${'fault'.padEnd(22)} ${'at'.padStart(7)} ${'from fault'.padStart(10)} ${'from restart'.padStart(12)}  notes`);
  for (const r of results) {
    const fromFault = r.recoveredAt === undefined ? 'NEVER' : secs(r.recoveredAt - r.injectedAt);
    const fromRestart = r.restartedAt === undefined ? '-' : r.recoveredAt === undefined ? 'NEVER' : secs(r.recoveredAt - r.restartedAt);
    console.log(`  ${r.fault.padEnd(22)} ${secs(r.injectedAt).padStart(7)} ${fromFault.padStart(10)} ${fromRestart.padStart(12)}  ${r.notes.join('; ')}`);
  }
  console.log(`=== chaos: ${rec.records.length} requests, ${final.length} events, ${receiver.distinct()} webhook messages, ${results.length} faults, ${violations.length} violations, ${secs(performance.now() - began)} s ===`);
  exitCode = violations.length === 0 ? 0 : 1;
} catch (error) {
  violation(`the run stopped: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
  exitCode = 1;
} finally {
  if (exitCode === 0 && env.CHAOS_ARTIFACTS) await keepArtifacts('chaos run passed').catch((e: unknown) => log(`could not keep artifacts: ${String(e)}`));
  if (exitCode !== 0) {
    console.log('\n=== chaos: violations ===');
    const shown = violations.slice(0, 200);
    for (const v of shown) console.log(`  - ${v}`);
    if (violations.length > shown.length) console.log(`  … and ${violations.length - shown.length} more (see violations.txt)`);
    await keepArtifacts('chaos run failed').catch((e: unknown) => log(`could not keep artifacts: ${String(e)}`));
  }
  await cleanup();
  log(exitCode === 0 ? 'PASS' : 'FAIL');
}
process.exit(exitCode);
