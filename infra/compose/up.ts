/**
 * npm run compose:up: the whole compose stack (docker-compose.yml) in the foreground, on podman
 * (or Docker where a daemon answers). Builds the images that are missing or stale, writes any
 * missing secret into SECRETS_DIR, starts everything with the gateway on PORT, drives podman's
 * healthchecks, prints when the API answers, follows the logs, and on Ctrl-C or SIGTERM removes
 * every container and network (volumes stay: `COMPOSE_DOWN_VOLUMES=1` removes them too).
 *
 * Env: PORT (8080), BIND_ADDRESS (0.0.0.0), SECRETS_DIR (./.secrets), COMPOSE_PROJECT_NAME
 * (docshare), DOCSHARE_COMPOSE_REGISTRY=1 (the registry's server images instead of the local
 * ones), and what docker-compose.yml interpolates (PUBLIC_BASE_URL, RATE_LIMIT_POINTS, ...).
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { buildImages, ComposeStack, ensureSecrets, ROOT } from './compose.ts';

const env = process.env;
const secretsOnly = process.argv.includes('--secrets-only');
const secretsDir = resolve(ROOT, env['SECRETS_DIR'] ?? '.secrets');
const created = await ensureSecrets(secretsDir);
console.log(`compose: secrets in ${secretsDir}${created.length > 0 ? ` (created: ${created.join(', ')})` : ''}`);
if (secretsOnly) process.exit(0);

const began = performance.now();
const stack = new ComposeStack(buildImages('all'), {
  project: env['COMPOSE_PROJECT_NAME'] ?? 'docshare',
  port: Number(env['PORT'] ?? 8080),
  bindAddress: env['BIND_ADDRESS'] ?? '0.0.0.0',
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

try {
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
