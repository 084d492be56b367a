/**
 * npm run compose:up: the whole compose stack (docker-compose.yml) in the foreground, on podman
 * (or Docker where a daemon answers). Builds the images that are missing or stale, writes any
 * missing secret into SECRETS_DIR, starts everything with the gateway on PORT, drives podman's
 * healthchecks, prints when the API answers, follows the logs, and on Ctrl-C or SIGTERM removes
 * every container and network (volumes stay: `COMPOSE_DOWN_VOLUMES=1` removes them too). A SIGTERM
 * to npm's own pid does the same. Containers an earlier run left (killed before its teardown
 * ended) are removed before the start; a second compose:up of the same project refuses to start.
 *
 * Env: PORT (8080), BIND_ADDRESS (unset: every interface; an address publishes the gateway there
 * only, e.g. 127.0.0.1), SECRETS_DIR (./.secrets), COMPOSE_PROJECT_NAME
 * (docshare), DOCSHARE_COMPOSE_REGISTRY=1 (the registry's server images instead of the local
 * ones), and what docker-compose.yml interpolates (PUBLIC_BASE_URL, RATE_LIMIT_POINTS, ...).
 */
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { buildImages, ComposeStack, ensureSecrets, ROOT } from './compose.ts';

/**
 * Whether a process with this pid runs (signal 0 checks without signalling). A killed one its
 * parent has not reaped yet (a zombie, state Z in /proc) answers signal 0 too, and runs no more.
 */
const running = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = (() => {
    try {
      return readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      return '';
    }
  })();
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
};

const env = process.env;
const secretsOnly = process.argv.includes('--secrets-only');
const secretsDir = resolve(ROOT, env['SECRETS_DIR'] ?? '.secrets');
const created = await ensureSecrets(secretsDir);
console.log(`compose: secrets in ${secretsDir}${created.length > 0 ? ` (created: ${created.join(', ')})` : ''}`);
if (secretsOnly) process.exit(0);

const project = env['COMPOSE_PROJECT_NAME'] ?? 'docshare';
// One compose:up per project: a second one would remove the first one's containers as leftovers.
const pidFile = join(tmpdir(), `docshare-compose-${project}.pid`);
const holder = Number(readFileSync(pidFile, { encoding: 'utf8', flag: 'a+' }).trim());
if (Number.isSafeInteger(holder) && holder > 0 && holder !== process.pid && running(holder)) {
  console.error(`compose: project ${project} is run by another compose:up (pid ${holder}); stop that one first`);
  process.exit(1);
}
writeFileSync(pidFile, `${process.pid}\n`);
process.once('exit', () => rmSync(pidFile, { force: true }));

const began = performance.now();
const stack = new ComposeStack(buildImages('all'), {
  project,
  port: Number(env['PORT'] ?? 8080),
  bindAddress: env['BIND_ADDRESS'] ?? '',
  secretsDir,
  localImages: env['DOCSHARE_COMPOSE_REGISTRY'] !== '1',
});
console.log(`compose: engine ${stack.images.engine}, images ready in ${((performance.now() - began) / 1000).toFixed(1)} s`);

let stopping = false;
/** `compose logs --follow`, once the stack is ready. */
const following: { logs?: ReturnType<typeof spawn> } = {};
const stop = async (code: number): Promise<never> => {
  if (!stopping) {
    stopping = true;
    console.log('compose: stopping: removing containers and networks');
    following.logs?.kill('SIGTERM');
    await stack.down(env['COMPOSE_DOWN_VOLUMES'] === '1');
  }
  process.exit(code);
};
process.on('SIGINT', () => { void stop(0); });
process.on('SIGTERM', () => { void stop(0); });
// npm runs `exec node infra/compose/up.ts` (package.json), so a signal to npm's pid reaches us.

try {
  const left = await stack.removeLeftovers();
  if (left.length > 0) console.log(`compose: removed ${left.length} containers an earlier run left: ${left.join(', ')}`);
  await stack.up();
  await stack.waitReady();
} catch (error) {
  console.error(`compose: ${String(error)}`);
  await stop(1);
}
console.log(`compose: ready in ${((performance.now() - began) / 1000).toFixed(1)} s: the API answers on ${stack.baseUrl} (Ctrl-C stops and removes the stack)`);
// Not stack.compose(): that one stops docker-compose after a while, and this follows until Ctrl-C.
following.logs = spawn('docker-compose', stack.composeArgs(['logs', '--follow', '--tail', '0', '--no-color']), {
  cwd: ROOT, env: stack.env(), stdio: 'inherit',
});
