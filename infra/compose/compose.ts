/**
 * The compose stack on this machine: images built here (infra/containers/images.sh), secrets
 * generated once, docker-compose (v1, Debian's) against podman's Docker-compatible socket or a
 * Docker daemon, and podman's healthchecks driven by hand where no systemd runs them (podman
 * runs them from systemd timers: without, a container stays `starting` and compose waits).
 * Used by `npm run compose:up` (up.ts) and `npm run test:compose` (test.ts).
 */
import { spawn, spawnSync, type SpawnOptions } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { chmod, mkdir, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..', '..');

/** The top-level `name:` line of docker-compose.yml (compose v2 reads it; v1 refuses the key). */
export const COMPOSE_NAME_LINE = /^name: [^\n]*\n/m;

/**
 * docker-compose.yml as compose v1 (Debian's docker-compose 1.29, what this tooling runs) takes
 * it: the same file without its top-level `name:` line, which v1 refuses; the project's name
 * comes from `-p` instead. Written once per content under the temp dir; relative paths still
 * resolve against the repository (`--project-directory`). Every other line is the file as users
 * get it.
 */
export const composeFileForV1 = (): string => {
  const text = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8').replace(COMPOSE_NAME_LINE, '');
  const dir = join(tmpdir(), 'docshare-compose-v1');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `docker-compose.${createHash('sha256').update(text).digest('hex').slice(0, 16)}.yml`);
  writeFileSync(file, text);
  return file;
};

/**
 * Every secret file docker-compose.yml names, and how a fresh one is made: hex, which no tool
 * mistakes for an option (a base64url value may begin with "-") or needs to escape in a URL.
 */
export const SECRETS: Record<string, () => string> = {
  jwt_secret: () => randomBytes(48).toString('hex'),
  mongo_root_password: () => randomBytes(24).toString('hex'),
  mongo_app_password: () => randomBytes(24).toString('hex'),
  minio_root_user: () => 'docshare-root',
  minio_root_password: () => randomBytes(24).toString('hex'),
  minio_app_access_key: () => 'docshare-app',
  minio_app_secret_key: () => randomBytes(24).toString('hex'),
  redis_password: () => randomBytes(24).toString('hex'),
  internal_token: () => randomBytes(24).toString('hex'),
  // Seals webhook signing secrets in the events (WEBHOOK_SECRET_KEY_FILE: docs-command, the dispatcher).
  webhook_secret_key: () => randomBytes(32).toString('hex'),
  // Wraps every person's data key (DATA_KEK_FILE: the services that write or read events; issue 24).
  data_kek: () => randomBytes(32).toString('hex'),
  // Grafana's `admin` (the observability profile's; docs/observability.md).
  grafana_admin_password: () => randomBytes(24).toString('hex'),
};

/**
 * Writes each missing secret of SECRETS into `dir` (0700). Files are 0644: compose bind-mounts
 * them into containers whose users are not root; the directory keeps other host users out.
 * Returns the names it created.
 */
export const ensureSecrets = async (dir: string): Promise<string[]> => {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const created: string[] = [];
  for (const [name, make] of Object.entries(SECRETS)) {
    const file = join(dir, name);
    if (await stat(file).then(() => true, () => false)) continue;
    await writeFile(file, `${make()}\n`, { mode: 0o644, flag: 'wx' });
    created.push(name);
  }
  return created;
};

export interface Images {
  engine: 'podman' | 'docker';
  /** unix socket of podman's Docker API, or '' for Docker's own. */
  dockerHost: string;
  tags: Record<string, string>;
}

/** Builds what is missing (images.sh skips what is up to date) and reports the tags. */
export const buildImages = (what: 'all' | 'servers' = 'all'): Images => {
  const run = spawnSync('bash', [join(ROOT, 'infra', 'containers', 'images.sh'), what], {
    stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`infra/containers/images.sh ${what} failed (exit ${run.status})`);
  const tags: Record<string, string> = {};
  for (const line of run.stdout.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) tags[line.slice(0, at)] = line.slice(at + 1);
  }
  const engine = tags['engine'] === 'docker' ? 'docker' : 'podman';
  return { engine, dockerHost: tags['docker_host'] ?? '', tags };
};

/** The engine's CLI environment: podman reads this project's containers.conf. */
export const engineEnv = (images: Images): NodeJS.ProcessEnv => ({
  ...process.env,
  CONTAINERS_CONF: join(ROOT, 'infra', 'containers', 'containers.conf'),
  ...(images.dockerHost ? { DOCKER_HOST: images.dockerHost } : {}),
});

/**
 * BIND_ADDRESS as docker-compose.yml interpolates it: the host side's address with its colon, or
 * nothing for every interface. docker-compose v1 has no `${VAR:+...}` to add the colon only when
 * set, and an explicit 0.0.0.0 is no "every interface" on podman 4.3 (netavark makes it a rule for
 * destination 0.0.0.0 only: nothing answers on 127.0.0.1 or the host's address), so it is left out.
 */
export const publishPrefix = (address: string): string => {
  const bare = address.replace(/:$/, '').replace(/^\[(.*)\]$/, '$1');
  if (bare === '' || bare === '0.0.0.0') return '';
  return bare.includes(':') ? `[${bare}]:` : `${bare}:`;
};

export interface StackOptions {
  project: string;
  port: number;
  /** The one host address the gateway is published on; '' (or 0.0.0.0): every interface. */
  bindAddress: string;
  secretsDir: string;
  /** Extra variables for compose's interpolation (RATE_LIMIT_POINTS, PUBLIC_BASE_URL, ...). */
  env?: Record<string, string>;
  /** Use the locally built server images (docker-compose.local.yml); false: the registry's. */
  localImages: boolean;
}

export class ComposeStack {
  readonly images: Images;
  readonly options: StackOptions;
  private healthTimer: NodeJS.Timeout | undefined;
  private readonly lastCheck = new Map<string, number>();
  private checking = false;

  constructor(images: Images, options: StackOptions) {
    this.images = images;
    this.options = options;
  }

  get baseUrl(): string {
    const address = this.options.bindAddress;
    const host = ['', '0.0.0.0', '::'].includes(address) ? '127.0.0.1' : address.includes(':') ? `[${address}]` : address;
    return `http://${host}:${this.options.port}`;
  }

  /** The environment compose interpolates docker-compose.yml with. */
  env(): NodeJS.ProcessEnv {
    const { tags } = this.images;
    const local: Record<string, string> = this.options.localImages ? {
      LOCAL_KAFKA_IMAGE: tags['kafka'] ?? '', LOCAL_MONGODB_IMAGE: tags['ferretdb'] ?? '', LOCAL_ELASTICSEARCH_IMAGE: tags['elasticsearch'] ?? '',
      LOCAL_MINIO_IMAGE: tags['minio'] ?? '', LOCAL_REDIS_IMAGE: tags['redis'] ?? '', LOCAL_PROMETHEUS_IMAGE: tags['prometheus'] ?? '',
    } : {};
    return {
      ...engineEnv(this.images),
      COMPOSE_PROJECT_NAME: this.options.project,
      // podman answers slower than Docker while many containers start.
      COMPOSE_HTTP_TIMEOUT: '300',
      PORT: String(this.options.port),
      BIND_ADDRESS: publishPrefix(this.options.bindAddress),
      SECRETS_DIR: this.options.secretsDir,
      PUBLIC_BASE_URL: process.env['PUBLIC_BASE_URL'] ?? `http://localhost:${this.options.port}`,
      ...(tags['app'] ? { DOCSHARE_VERSION: tags['app'].split(':').pop() } : {}),
      ...local,
      ...this.options.env,
    };
  }

  /** docker-compose's arguments for `args` on this stack's project and files. */
  composeArgs(args: string[]): string[] {
    const files = [composeFileForV1(), ...(this.options.localImages ? [join(ROOT, 'docker-compose.local.yml')] : [])];
    return ['--project-directory', ROOT, '-p', this.options.project, ...files.flatMap((f) => ['-f', f]), ...args];
  }

  /**
   * Runs docker-compose with this stack's files and project; resolves with its exit code. Past
   * `timeoutMs` it is stopped (compose v1 waits for ever on a dependency that never gets healthy).
   */
  compose(args: string[], options: SpawnOptions = {}, timeoutMs = 15 * 60_000): Promise<number> {
    return new Promise((resolveExit) => {
      const child = spawn('docker-compose', this.composeArgs(args), {
        cwd: ROOT, env: this.env(), stdio: 'inherit', ...options,
      });
      const timer = setTimeout(() => {
        console.error(`compose: docker-compose ${args[0] ?? ''} still running after ${timeoutMs / 1000} s: stopping it`);
        child.kill('SIGTERM');
      }, timeoutMs);
      child.once('error', () => { clearTimeout(timer); resolveExit(127); });
      child.once('exit', (code, signal) => { clearTimeout(timer); resolveExit(code ?? (signal ? 1 : 0)); });
    });
  }

  /** compose, failing on a non-zero exit. */
  async composeOk(args: string[], timeoutMs?: number): Promise<void> {
    const code = await this.compose(args, {}, timeoutMs);
    if (code !== 0) throw new Error(`docker-compose ${args.join(' ')} exited with ${code}`);
  }

  /** The engine's CLI (podman or docker), its output. */
  engine(args: string[]): string {
    const run = spawnSync(this.images.engine, args, { env: engineEnv(this.images), encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`${this.images.engine} ${args.join(' ')}: ${run.stderr.trim()}`);
    return run.stdout;
  }

  /** Containers of this project: id, compose service, health ('' without a healthcheck), state. */
  containers(): { id: string; name: string; service: string; health: string; state: string }[] {
    const out = this.engine(['ps', '-a', '--filter', `label=com.docker.compose.project=${this.options.project}`,
      '--format', '{{.ID}}\t{{.Names}}\t{{index .Labels "com.docker.compose.service"}}\t{{.Status}}']);
    return out.split('\n').filter(Boolean).map((line) => {
      const [id = '', name = '', service = '', status = ''] = line.split('\t');
      // Status reads `Up 2 minutes (healthy)` or `Exited (0) 3 seconds ago` (podman's State is text too).
      const health = /\((healthy|unhealthy|starting)\)/.exec(status)?.[1] ?? '';
      return { id, name, service, health, state: status.startsWith('Up') ? 'running' : 'exited' };
    });
  }

  /**
   * Podman without systemd never runs healthchecks: run them here. A container still starting
   * (or unhealthy) is checked every round (2 s), a healthy one every 30 s. Docker runs its own.
   */
  startHealthDriver(): void {
    if (this.images.engine !== 'podman' || this.healthTimer) return;
    const round = async (): Promise<void> => {
      if (this.checking) return;
      this.checking = true;
      try {
        const now = Date.now();
        const due = this.containers().filter((c) => c.state === 'running' && c.health !== ''
          && (c.health !== 'healthy' || now - (this.lastCheck.get(c.id) ?? 0) >= 30_000));
        await Promise.all(due.map((c) => new Promise<void>((done) => {
          this.lastCheck.set(c.id, now);
          const child = spawn('podman', ['healthcheck', 'run', c.id], { env: engineEnv(this.images), stdio: 'ignore' });
          child.once('error', () => done());
          child.once('exit', () => done());
        })));
      } catch {
        // a container went away between ps and healthcheck: the next round sees the new state
      } finally {
        this.checking = false;
      }
    };
    this.healthTimer = setInterval(() => { void round(); }, 2_000);
    void round();
  }

  stopHealthDriver(): void {
    if (this.healthTimer) clearInterval(this.healthTimer);
    this.healthTimer = undefined;
  }

  /**
   * Removes what an earlier run of this project left (killed before or during its teardown):
   * its containers, and any container holding a name compose gives this project's services
   * (`<project>_<service>_<n>`, or renamed `<id>_<project>_<service>_<n>` mid-recreate) whether
   * compose still sees it as the project's or not: `up` would stop at "the container name ... is
   * already in use". Volumes stay. Returns the names it removed.
   */
  async removeLeftovers(): Promise<string[]> {
    const project = this.options.project.toLowerCase().replace(/[^-_a-z0-9]/g, '');
    // compose v1 keeps [-_a-z0-9] of a project's name: nothing a pattern would read as syntax.
    const named = new RegExp(`^([0-9a-f]{12}_)?${project}_[-a-z0-9]+_\\d+$`);
    const leftovers = (): string[] => [
      ...this.containers().map((c) => c.name),
      ...this.engine(['ps', '-a', '--format', '{{.Names}}']).split('\n').filter((name) => named.test(name)),
    ];
    const found = [...new Set(leftovers())];
    if (found.length === 0) return [];
    await this.compose(['down', '--remove-orphans', '--timeout', '20']);
    const still = [...new Set(leftovers())];
    if (still.length > 0) this.engine(['rm', '--force', ...still]);
    return found;
  }

  /** `up -d` (no builds: buildImages made every image), healthchecks driven meanwhile. */
  async up(extra: string[] = []): Promise<void> {
    this.startHealthDriver();
    // Five minutes is several times a cold boot here (about 1.5 min): a dependency that never
    // gets healthy fails the start instead of holding it.
    await this.composeOk(['up', '-d', '--no-build', '--remove-orphans', ...extra], 5 * 60_000);
  }

  /** Waits for the gateway's /readyz and every upstream it reports. */
  async waitReady(timeoutMs = 300_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < deadline) {
      try {
        const res = await fetch(`${this.baseUrl}/readyz`, { signal: AbortSignal.timeout(3_000) });
        const body = await res.json() as { checks?: Record<string, string> };
        last = JSON.stringify(body);
        if (res.ok && body.checks && Object.values(body.checks).every((v) => v === 'ok')) return;
      } catch (error) {
        last = String(error);
      }
      await new Promise((r) => setTimeout(r, 1_000));
    }
    throw new Error(`the gateway at ${this.baseUrl} was not ready within ${timeoutMs / 1000} s: ${last}`);
  }

  /** Removes containers and networks (and the volumes with `volumes`). */
  async down(volumes: boolean): Promise<void> {
    this.stopHealthDriver();
    await this.compose(['down', '--remove-orphans', '--timeout', '20', ...(volumes ? ['--volumes'] : [])]);
  }
}
