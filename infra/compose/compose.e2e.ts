/**
 * npm run test:compose: boots docker-compose.yml (with the local images on machines without a
 * registry) through `npm run compose:up` as the README gives it (no BIND_ADDRESS: every
 * interface), with fresh secrets and a project of its own. A first compose:up is killed once it
 * has created containers, and a container squats a name compose needs: the second compose:up
 * must clear them and boot. Then
 *   0. the API answers on 127.0.0.1:PORT and on the host's own address,
 *   1. runs the API conformance suite against the compose gateway,
 *   2. checks what the compose file promises ops (no server published, non-root containers,
 *      no stray volumes, secrets only where they are needed, metrics off the public port), and
 *      starts the observability profile's Prometheus: every service's target up, samples of the
 *      docshare metrics (the renamed ones, and their deprecated names with the same values),
 *   3. scales stats-projector and search-projector to 2 and checks exact counters and search,
 *   4. restarts one container of every service and checks them again (old data included),
 *   5. sends SIGTERM to npm's pid, as a process manager stops it: every container goes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECTOR_SERVICES, SERVICE_NAMES } from '@docshare/contracts/services';
import { api, type Api, type RegisteredUser } from '../../tests/support/client.ts';
import { alive, freePort } from '../../tests/support/server.ts';
import { buildImages, ComposeStack, ensureSecrets, ROOT } from './compose.ts';

/**
 * Conformance tests that need a server the suite spawns itself (restart, kill, its data dir or
 * output, special limits): against a running stack they could only skip, so they are left out
 * here by name; they run against the embedded and distributed targets (npm run test:api,
 * test:real). hardening.test.ts sets short HTTP limits on its own server: all of it is local.
 */
const NEEDS_OWN_SERVER = [
  'the JWT carries sub = user id and an exp set by JWT_TTL_SECONDS',
  'no password or JWT secret appears in the server output or in the stored data',
  'removes the bytes from blob storage',
  'download_url expires after DOWNLOAD_URL_TTL_SECONDS',
  '^DOWNLOAD_URL_TTL_SECONDS$',
  '^metrics listener$',
  '^without METRICS_PORT$',
  '^storage quota$',
  '^rate limit with the defaults',
  '^RATE_LIMIT_POINTS and RATE_LIMIT_WINDOW_SECONDS$',
  '^MAX_UPLOAD_BYTES$',
  '^restart keeps data$',
  '^CORS_ORIGINS with two origins$',
  '^CORS_ORIGINS=\\*$',
  '^CORS_ORIGINS unset$',
  '^validators across a restart$',
  'works under any host name: PUBLIC_BASE_URL only names the canonical page',
  'a replay survives a restart',
  // Counts on the default limit (429 within 60 requests); this run sets RATE_LIMIT_POINTS=100000.
  'answers of the HTTP layer itself (an unparseable request) and the rate limit\'s 429',
  // Webhook deliveries go to a receiver the suite runs on the host's loopback, which the dispatcher's
  // container cannot reach; registration and every other webhook call run here (the opt-ins below).
  '^every event type, as documented, verified with standardwebhooks$',
  '^retries, deliveries, 410, dead letters$',
  '^rotation, replay, PATCH, DELETE$',
  'webhooks: a delivery as the catalogue documents it',
  // Its own server, restarted without the private-network opt-in.
  '^no server-side request forgery without the opt-in$',
  // Its own server: the marker is looked for in every store and log of the instance, then it rebuilds
  // (the compose stack's stores are the containers'; it runs against the embedded and distributed targets).
  '^account erasure leaves no trace of the person',
];
const escape = (name: string): string => name.startsWith('^') ? name : name.replace(/[.*+?()[\]{}|\\]/g, '\\$&');

/** The servers, then every service of the registry (libs/contracts/src/services.ts). */
const SERVICES = ['kafka', 'mongodb', 'elasticsearch', 'minio', 'redis', ...SERVICE_NAMES];

let stack: ComposeStack;
let secretsDir: string;
let client: Api;
let booted = false;

interface ComposeUp { npm: ChildProcess; output(): string; exited: Promise<number | null> }
/** The running `npm run compose:up` the suite is booted through. */
let composeUp: ComposeUp | undefined;
/** What the killed first run left, and what the second one said it removed. */
let leftBehind: string[] = [];

/**
 * `npm run compose:up` at the repository root, in a process group of its own; its lines starting
 * with `compose:` are shown, everything is kept (the last 200 KB) for failures.
 */
const startComposeUp = (env: NodeJS.ProcessEnv): ComposeUp => {
  const npm = spawn('npm', ['run', 'compose:up'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  let partial = '';
  const keep = (chunk: Buffer): void => {
    const text = chunk.toString();
    output = (output + text).slice(-200_000);
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) if (line.startsWith('compose:')) console.log(`  [compose:up] ${line}`);
  };
  npm.stdout.on('data', keep);
  npm.stderr.on('data', keep);
  const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
  return { npm, output: () => output, exited };
};

/** Polls `check` until it holds; bounded by the caller's timeout (the suite's), never by wall time here. */
const until = async (check: () => boolean | Promise<boolean>, intervalMs = 1_000): Promise<void> => {
  while (!(await check())) await new Promise((r) => setTimeout(r, intervalMs));
};

/** The host's own non-loopback IPv4 address. */
const hostAddress = (): string | undefined =>
  Object.values(networkInterfaces()).flat().find((i) => i !== undefined && i.family === 'IPv4' && !i.internal)?.address;

const run = (command: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; output: string }> =>
  new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer): void => {
      process.stdout.write(chunk);
      output = (output + chunk.toString()).slice(-200_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('exit', (code) => resolve({ code: code ?? 1, output }));
  });

/** Polls `check` until it passes (eventual consistency across users and replicas), 60 s at most. */
const eventually = async (what: string, check: () => Promise<void>): Promise<void> => {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`${what}: ${String(error)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
};

interface Owner { user: RegisteredUser; expected: Record<string, number>; words: string[] }

/** Uploads, comments, downloads and views through the gateway; every counter is then exact. */
const exercise = async (owners: Owner[], fan: RegisteredUser, round: string): Promise<void> => {
  for (const owner of owners) {
    for (let i = 0; i < 3; i++) {
      const word = `cmp${round}x${owner.user.userId}x${i}`;
      const { fileId } = await client.uploadOk(owner.user.token, { title: `compose ${word}`, tags: word });
      owner.words.push(word);
      owner.expected['total_files']! += 1;
      assert.equal((await client.comment(fan.token, { file_id: fileId, comment: 'seen' })).status, 201);
      owner.expected['total_comments']! += 1;
      assert.equal((await client.download(fan.token, fileId)).status, 200);
      owner.expected['total_downloads']! += 1;
      assert.equal((await client.view(fileId)).status, 200);
      owner.expected['total_views']! += 1;
    }
  }
  await check(owners);
};

const check = async (owners: Owner[]): Promise<void> => {
  for (const owner of owners) {
    await eventually(`stats of user ${owner.user.userId}`, async () => {
      assert.deepEqual((await client.stats(owner.user.token)).body.data, owner.expected);
    });
    for (const word of owner.words) {
      await eventually(`search for ${word}`, async () => {
        const found = await client.search(owner.user.token, { search: word });
        assert.equal(found.status, 200, JSON.stringify(found.body));
        assert.ok(JSON.stringify(found.body).includes(`compose ${word}`), JSON.stringify(found.body));
      });
    }
  }
};

const replicasOf = (service: string): number =>
  stack.containers().filter((c) => c.service === service && c.state === 'running').length;

describe('docker compose: the whole stack in containers', { timeout: 40 * 60_000 }, () => {
  before(async () => {
    secretsDir = await mkdtemp(join(tmpdir(), 'docshare-compose-secrets-'));
    await ensureSecrets(secretsDir);
    const port = await freePort();
    const project = `docshare-test-${process.pid}`;
    // The conformance suite makes far more than 30 requests a minute from one address.
    // CORS on, for one origin: tests/conformance/openapi.test.ts sends its preflights from it.
    // Webhook endpoints on loopback over http (the conformance suite's receiver): the opt-ins tests use.
    const settings = {
      RATE_LIMIT_POINTS: '100000', PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'warn', CORS_ORIGINS: 'https://app.example.com',
      WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    };
    stack = new ComposeStack(buildImages('all'), {
      project, port, bindAddress: '', secretsDir, env: settings,
      localImages: process.env['DOCSHARE_COMPOSE_REGISTRY'] !== '1',
    });
    console.log(`compose: engine ${stack.images.engine}, project ${project}, gateway ${stack.baseUrl}`);
    // A run that was killed (a CI timeout) left its project behind: remove those of dead runs.
    const projects = new Set(stack.engine(['ps', '-a', '--format', '{{index .Labels "com.docker.compose.project"}}']).split('\n'));
    for (const other of projects) {
      const pid = Number(/^docshare-test-(\d+)$/.exec(other)?.[1]);
      if (!pid || pid === process.pid || alive(pid)) continue;
      console.log(`compose: removing ${other}, left by a run that ended without tearing down`);
      await new ComposeStack(stack.images, { ...stack.options, project: other }).down(true);
    }
    // As the README runs it: `npm run compose:up`, no BIND_ADDRESS. Only the project, the port,
    // the secrets and the test's settings are its own; its teardown removes the volumes too.
    const env: NodeJS.ProcessEnv = {
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_TEST_CONTEXT' && k !== 'BIND_ADDRESS')),
      COMPOSE_PROJECT_NAME: project, PORT: String(port), SECRETS_DIR: secretsDir, COMPOSE_DOWN_VOLUMES: '1', ...settings,
    };

    // A run killed mid-start: its containers stay behind (conmon keeps them), nothing tore them down.
    const killed = startComposeUp(env);
    await until(() => killed.npm.exitCode !== null || stack.containers().length > 0);
    assert.equal(killed.npm.exitCode, null, `the first compose:up ended by itself:\n${killed.output().slice(-20_000)}`);
    process.kill(-(killed.npm.pid as number), 'SIGKILL');
    await killed.exited;
    // Every process of the killed run gone (its compose:up is npm's grandchild, reaped apart).
    await until(() => {
      try {
        process.kill(-(killed.npm.pid as number), 0);
        return false;
      } catch {
        return true;
      }
    }, 200);
    // And a container holding the gateway's name that compose does not know as the project's
    // (a teardown cut off half-way): `up` alone stops at "the name ... is already in use".
    const gatewayName = `${project}_gateway_1`;
    if (!stack.engine(['ps', '-a', '--format', '{{.Names}}']).split('\n').includes(gatewayName)) {
      stack.engine(['create', '--name', gatewayName, stack.images.tags['app'] ?? '', 'true']);
    }
    leftBehind = stack.engine(['ps', '-a', '--format', '{{.Names}}']).split('\n').filter((n) => n.startsWith(`${project}_`));
    console.log(`compose: the killed run and the squatter left ${leftBehind.length} containers: ${leftBehind.join(', ')}`);

    const began = performance.now();
    composeUp = startComposeUp(env);
    const up = composeUp;
    await until(() => up.npm.exitCode !== null || up.output().includes('compose: ready'));
    assert.ok(up.output().includes('compose: ready'), `npm run compose:up ended before it was ready:\n${up.output().slice(-20_000)}`);
    await stack.waitReady();
    console.log(`compose: ready in ${((performance.now() - began) / 1000).toFixed(1)} s`);
    client = api({ baseUrl: stack.baseUrl });
    booted = true;
  });

  after(async () => {
    if (stack) {
      const failed = stack.containers().filter((c) => c.state !== 'running' && !['kafka-topics', 'minio-init'].includes(c.service));
      // A failed boot may leave nothing stopped (a restarted service): then every service's tail.
      if (failed.length > 0 || !booted) await stack.compose(['logs', '--tail', '60', '--no-color', ...new Set(failed.map((c) => c.service))]);
      if (composeUp && composeUp.npm.exitCode === null) process.kill(-(composeUp.npm.pid as number), 'SIGKILL');
      // compose:up's own teardown ran in the last test; whatever a failure left goes here (the
      // squatter too, which compose does not know as the project's).
      await stack.down(true);
      await stack.removeLeftovers();
    }
    if (secretsDir) await rm(secretsDir, { recursive: true, force: true });
  });

  it('compose:up cleared what a killed run left behind, and booted', () => {
    assert.ok(leftBehind.length > 0, 'the killed run left containers behind');
    assert.match(composeUp?.output() ?? '', /compose: removed \d+ containers an earlier run left/);
    const gateway = stack.containers().find((c) => c.service === 'gateway');
    assert.ok(gateway && gateway.state === 'running', 'the gateway runs as the project\'s container');
    // The squatter is gone: every container with the project's names is the project's.
    const named = stack.engine(['ps', '-a', '--format', '{{.Names}}']).split('\n').filter((n) => n.startsWith(`${stack.options.project}_`)).sort();
    assert.deepEqual(named, stack.containers().map((c) => c.name).sort());
  });

  it('answers on 127.0.0.1:PORT and on the host\'s own address (published without a host address)', async () => {
    const address = hostAddress();
    assert.ok(address, 'the host has a non-loopback IPv4 address');
    for (const base of [stack.baseUrl, `http://${address}:${stack.options.port}`]) {
      const res = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(30_000) });
      assert.equal(res.status, 200, base);
      const user = await api({ baseUrl: base }).register();
      assert.ok(user.token, `registered through ${base}`);
    }
  });

  it('the API conformance suite passes against the compose gateway, nothing skipped', async () => {
    const jwtSecret = (await readFile(join(secretsDir, 'jwt_secret'), 'utf8')).trim();
    const files = (await readdir(join(ROOT, 'tests', 'conformance'))).filter((f) => f.endsWith('.test.ts') && f !== 'hardening.test.ts')
      .map((f) => join('tests', 'conformance', f));
    const { code, output } = await run(process.execPath, ['--test', '--test-concurrency=1', '--test-reporter=spec',
      '--test-skip-pattern', `/${NEEDS_OWN_SERVER.map(escape).join('|')}/`, ...files], {
      // Without NODE_TEST_CONTEXT, which would make the inner runner report to this one instead of printing.
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_TEST_CONTEXT')),
      DOCSHARE_BASE_URL: stack.baseUrl, DOCSHARE_JWT_SECRET: jwtSecret,
    });
    assert.equal(code, 0, 'the conformance suite failed against the compose stack (see above)');
    assert.match(output, /ℹ skipped 0\b/, 'a conformance test skipped itself: add it to NEEDS_OWN_SERVER with its reason, or make it run here');
    assert.match(output, /ℹ pass [1-9]\d*/);
  });

  it('keeps its promises to ops: one published port, non-root containers, no stray volumes, secrets where needed', () => {
    const containers = stack.containers();
    for (const c of containers.filter((c) => c.state === 'running')) {
      const ports = stack.engine(['port', c.id]).trim();
      // No host address: every interface (what an engine shows as 0.0.0.0).
      if (c.service === 'gateway') assert.match(ports, new RegExp(`^8080/tcp -> 0\\.0\\.0\\.0:${stack.options.port}$`));
      else assert.equal(ports, '', `${c.service} publishes a port`);
      const uid = stack.engine(['exec', c.id, 'id', '-u']).trim();
      assert.notEqual(uid, '0', `${c.service} runs as root`);
    }
    for (const c of containers) {
      const mounts = JSON.parse(stack.engine(['inspect', '--format', '{{json .Mounts}}', c.id])) as { Type: string; Name?: string; Destination: string }[];
      for (const m of mounts.filter((m) => m.Type === 'volume')) {
        assert.ok(m.Name?.startsWith(`${stack.options.project}_`), `${c.service}: anonymous volume at ${m.Destination}`);
      }
      const secrets = mounts.filter((m) => m.Destination.startsWith('/run/secrets/')).map((m) => m.Destination.slice('/run/secrets/'.length)).sort();
      const allowed: Record<string, string[]> = {
        gateway: ['jwt_secret', 'redis_password'],
        // The KEK of personal data (data_kek) to every service that writes or reads events, never the gateway.
        'docs-command': ['data_kek', 'internal_token', 'jwt_secret', 'minio_app_access_key', 'minio_app_secret_key', 'mongo_app_password', 'webhook_secret_key'],
        // Every projector: the app's MongoDB password and the KEK.
        ...Object.fromEntries(PROJECTOR_SERVICES.map((projector) => [projector.name, ['data_kek', 'mongo_app_password']])),
        'text-extractor': ['data_kek', 'internal_token', 'minio_app_access_key', 'minio_app_secret_key', 'mongo_app_password'],
        'webhook-dispatcher': ['data_kek', 'internal_token', 'mongo_app_password', 'webhook_secret_key'],
        mongodb: ['mongo_app_password', 'mongo_root_password'], minio: ['minio_root_password', 'minio_root_user'],
        'minio-init': ['minio_app_access_key', 'minio_app_secret_key', 'minio_root_password', 'minio_root_user'],
        redis: ['redis_password'], kafka: [], elasticsearch: [], 'kafka-topics': [], prometheus: [],
      };
      assert.deepEqual(secrets, allowed[c.service]?.slice().sort(), `${c.service}'s secrets`);
    }
  });

  it('metrics: none on the public port; each service serves its own on port 9464 of the back network', async () => {
    assert.equal((await fetch(`${stack.baseUrl}/metrics`)).status, 404);
    const gateway = stack.containers().find((c) => c.service === 'gateway' && c.state === 'running');
    assert.ok(gateway);
    /** One metric each service must export (any docshare metric for a service not named here). */
    const expected: Record<string, string> = {
      gateway: 'docshare_rate_limited_requests_total', 'docs-command': 'docshare_outbox_backlog_events',
      'stats-projector': 'docshare_consumer_lag', 'files-projector': 'docshare_read_model_generation_timestamp_seconds', 'search-projector': 'docshare_dead_letters_total',
      'text-extractor': 'docshare_extractions_total', 'webhook-dispatcher': 'docshare_webhook_deliveries_total',
    };
    for (const service of SERVICE_NAMES) {
      const metric = expected[service];
      // From inside the back network, as Prometheus scrapes it (infra/observability/prometheus.yml).
      const text = stack.engine(['exec', gateway.id, 'node', '-e',
        `fetch('http://${service}:9464/metrics').then(async (r) => { process.stdout.write(r.status + '\\n' + await r.text()); })`]);
      assert.match(text, /^200\n/, `${service}:9464/metrics`);
      assert.ok(text.includes(metric === undefined ? '# TYPE docshare_' : `# TYPE ${metric} `), `${service} does not export ${metric ?? 'a docshare metric'}`);
    }
  });

  it('the observability profile\'s Prometheus scrapes every service: each target up, docshare metrics with samples', async () => {
    const gateway = stack.containers().find((c) => c.service === 'gateway' && c.state === 'running');
    assert.ok(gateway);
    // Prometheus only (Grafana cannot be built here: docs/observability.md), beside the running stack.
    await stack.composeOk(['--profile', 'observability', 'up', '-d', '--no-build', '--no-deps', 'prometheus'], 5 * 60_000);
    try {
      /** Prometheus's HTTP API from inside the back network (it is published nowhere). */
      const ask = <T>(path: string): T => {
        const text = stack.engine(['exec', gateway.id, 'node', '-e',
          `fetch('http://prometheus:9090${path}').then(async (r) => { process.stdout.write(await r.text()); }, () => {})`]);
        return JSON.parse(text || '{}') as T;
      };
      interface Target { labels: { job: string; instance: string }; health: string; lastError: string }
      const targets = (): Target[] => {
        try {
          return ask<{ data?: { activeTargets?: Target[] } }>('/api/v1/targets').data?.activeTargets ?? [];
        } catch {
          return []; // not answering yet
        }
      };
      const JOBS = SERVICE_NAMES;
      // Until every job's replicas are found (DNS) and each has been scraped once (health no longer
      // `unknown`); bounded by the suite's timeout. Then each must be up.
      let found: Target[] = [];
      await until(() => {
        found = targets();
        return JOBS.every((job) => found.some((t) => t.labels.job === job)) && found.every((t) => t.health !== 'unknown');
      }, 2_000);
      assert.deepEqual([...new Set(found.map((t) => t.labels.job))].sort(), [...JOBS].sort());
      assert.deepEqual(found.filter((t) => t.health !== 'up').map((t) => `${t.labels.job} ${t.labels.instance}: ${t.health} ${t.lastError}`), []);
      interface Sample { metric: Record<string, string>; value: [number, string] }
      const query = (q: string): Sample[] => ask<{ data?: { result?: Sample[] } }>(`/api/v1/query?query=${encodeURIComponent(q)}`).data?.result ?? [];
      await eventually('samples in Prometheus', async () => {
        assert.deepEqual(query('up == 1').map((s) => s.metric['job']).sort(), [...JOBS].sort());
        // The renamed metrics, and their deprecated names (until 0.3.0) with the same values.
        const stored = query('docshare_stored_bytes');
        assert.equal(stored.length, 1, JSON.stringify(stored));
        assert.equal(stored[0]!.metric['job'], 'docs-command');
        assert.ok(Number(stored[0]!.value[1]) > 0, 'the conformance suite stored files');
        assert.deepEqual(query('docshare_bytes_stored').map((s) => s.value[1]), [stored[0]!.value[1]]);
        const generations = query('docshare_read_model_generation_timestamp_seconds');
        assert.deepEqual(generations.map((s) => `${s.metric['job']} ${s.metric['model']}`).sort(),
          ['files-projector files', 'search-projector search', 'stats-projector stats']);
        assert.deepEqual(query('abs(docshare_read_model_generation_timestamp_seconds * 1000 - docshare_read_model_generation) > 0.5'), []);
      });
    } finally {
      await stack.compose(['--profile', 'observability', 'rm', '--stop', '--force', '-v', 'prometheus']);
      try {
        stack.engine(['volume', 'rm', '--force', `${stack.options.project}_prometheus-data`]);
      } catch {
        // compose named it otherwise, or never made it: the teardown's `down --volumes` has it
      }
    }
  });

  it('scaled to two stats and search projectors: counters stay exact, search finds every file', async () => {
    // compose:up drives the healthchecks (of new replicas too): no driver of the suite's own.
    await stack.composeOk(['up', '-d', '--no-build', '--no-recreate', '--scale', 'stats-projector=2', '--scale', 'search-projector=2'], 5 * 60_000);
    assert.equal(replicasOf('stats-projector'), 2);
    assert.equal(replicasOf('search-projector'), 2);
    await stack.waitReady();
    const fan = await client.register();
    const owners: Owner[] = [];
    for (let i = 0; i < 3; i++) {
      owners.push({ user: await client.register(), words: [], expected: { total_files: 0, total_comments: 0, total_views: 0, total_downloads: 0, total_sales: 0 } });
    }
    await exercise(owners, fan, 'a');
    ownersForRestart.push(...owners);
    fanForRestart.push(fan);
  });

  const ownersForRestart: Owner[] = [];
  const fanForRestart: RegisteredUser[] = [];

  it('after a restart of one container of every service, the data is there and new writes count exactly', async () => {
    assert.ok(ownersForRestart.length > 0, 'the scaled scenario did not run');
    for (const service of SERVICES) {
      const one = stack.containers().find((c) => c.service === service && c.state === 'running');
      assert.ok(one, `no running container of ${service}`);
      stack.engine(['restart', '--time', '20', one.id]);
    }
    await stack.waitReady();
    await check(ownersForRestart);
    await exercise(ownersForRestart, fanForRestart[0]!, 'b');
  });

  it('SIGTERM to the pid of npm run compose:up removes every container, as Ctrl-C does', async () => {
    assert.ok(composeUp, 'compose:up runs');
    process.kill(composeUp.npm.pid as number, 'SIGTERM');
    await composeUp.exited;
    // Polled: the teardown stops each container gracefully (bounded by the suite's timeout).
    await until(() => stack.containers().length === 0, 2_000);
    assert.match(composeUp.output(), /compose: stopping: removing containers and networks/);
  });
});
