// npm run stack checks its ports before it starts anything (infra/stack/ports.ts).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { checkStackPorts, portClashes, stackPorts } from '../stack/ports.ts';

const RUN = join(import.meta.dirname, '..', 'stack', 'run.ts');

const hold = async (): Promise<Server> => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
};

describe('stack ports', () => {
  const dirs: string[] = [];
  after(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('lists every port with the variable that sets it', () => {
    const uses = stackPorts({});
    assert.deepEqual(uses.map((u) => [u.variable, u.port]), [
      ['PORT', 8080], ['STACK_SERVICE_PORT', 18081], ['STACK_SERVICE_PORT+1', 18082], ['STACK_SERVICE_PORT+2', 18083],
      ['STACK_SERVICE_PORT+3', 18084], ['STACK_SERVICE_PORT+4', 18085], ['STACK_SERVICE_PORT+5', 18086], ['DOCSHARE_KAFKA_PORT', 19092], ['DOCSHARE_KAFKA_CONTROLLER_PORT', 19093],
      ['DOCSHARE_ES_PORT', 19200], ['DOCSHARE_ES_TRANSPORT_PORT', 19300], ['DOCSHARE_MINIO_PORT', 19000],
      ['DOCSHARE_MINIO_CONSOLE_PORT', 19001], ['DOCSHARE_FERRETDB_PORT', 27018], ['DOCSHARE_REDIS_PORT', 16379],
    ]);
    assert.deepEqual(portClashes(uses), []);
  });

  it('names both variables of a clash', () => {
    assert.deepEqual(portClashes(stackPorts({ PORT: '18081' })), [
      'STACK_SERVICE_PORT=18081 (docs-command) collides with PORT=18081 (gateway); give one of them another port',
    ]);
    assert.match(portClashes(stackPorts({ STACK_SERVICE_PORT: '8078' }))[0] ?? '', /STACK_SERVICE_PORT\+2=8080 \(files-projector\) collides with PORT=8080/);
    assert.match(portClashes(stackPorts({ DOCSHARE_REDIS_PORT: '19000' }))[0] ?? '', /DOCSHARE_REDIS_PORT=19000 \(Redis\) collides with DOCSHARE_MINIO_PORT=19000/);
    assert.match(portClashes(stackPorts({ PORT: '19200' }))[0] ?? '', /DOCSHARE_ES_PORT=19200 .* collides with PORT=19200/);
  });

  it('checks the gateway\'s metrics port (METRICS_PORT) only when it is set', () => {
    assert.equal(stackPorts({}).some((u) => u.variable === 'METRICS_PORT'), false);
    assert.deepEqual(stackPorts({ METRICS_PORT: '9464' }).at(-1), { variable: 'METRICS_PORT', port: 9464, use: 'gateway metrics', app: true });
    assert.match(portClashes(stackPorts({ METRICS_PORT: '8080' }))[0] ?? '', /METRICS_PORT=8080 \(gateway metrics\) collides with PORT=8080/);
  });

  it('refuses a value that is not a port, naming the variable', async () => {
    assert.deepEqual(await checkStackPorts({ PORT: 'eighty' }), ['PORT must be a port number (1-65535), got "eighty"']);
    assert.deepEqual(await checkStackPorts({ DOCSHARE_ES_PORT: '70000' }), ['DOCSHARE_ES_PORT must be a port number (1-65535), got "70000"']);
  });

  it('reports an app port that another process holds', async () => {
    const squatter = await hold();
    try {
      const port = (squatter.address() as AddressInfo).port;
      const problems = await checkStackPorts({ PORT: String(port), STACK_SERVICE_PORT: String(port + 10) });
      const message = `PORT=${port} (gateway): 127.0.0.1:${port} is already in use by another process`;
      assert.ok(problems.includes(message), JSON.stringify(problems));
    } finally {
      squatter.close();
    }
  });

  it('npm run stack with PORT on an internal port stops before it starts anything, naming the variables', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'docshare-stack-ports-'));
    dirs.push(dataDir);
    const result = spawnSync(process.execPath, [RUN], {
      env: { ...process.env, PORT: '18081', STACK_SERVICE_PORT: '', DATA_DIR: dataDir }, encoding: 'utf8', timeout: 60_000,
    });
    assert.equal(result.status, 1, result.stderr);
    assert.match(result.stderr, /STACK_SERVICE_PORT=18081 \(docs-command\) collides with PORT=18081 \(gateway\)/);
    assert.match(result.stderr, /nothing was started/);
    // Not even the servers' data dir: infra/local was never called.
    assert.deepEqual(await readdir(dataDir), []);
  });
});

describe('infra/local/start.sh port checks', () => {
  const START = join(import.meta.dirname, '..', 'local', 'start.sh');
  const start = (env: Record<string, string>): ReturnType<typeof spawnSync> =>
    spawnSync('bash', [START, 'redis', 'minio'], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60_000 });

  it('refuses two servers on one port before launching (or provisioning) anything, naming both variables', async () => {
    const data = await mkdtemp(join(tmpdir(), 'docshare-start-ports-'));
    try {
      const result = start({ DOCSHARE_INFRA_DATA: data, DOCSHARE_REDIS_PORT: '29000', DOCSHARE_MINIO_PORT: '29000' });
      assert.notEqual(result.status, 0);
      assert.match(String(result.stderr), /DOCSHARE_MINIO_PORT=29000 \(minio\) collides with DOCSHARE_REDIS_PORT=29000/);
      assert.match(String(result.stderr), /nothing was started/);
      assert.deepEqual(await readdir(data), []);
    } finally {
      await rm(data, { recursive: true, force: true });
    }
  });

  it('refuses a port another process holds before launching anything', async () => {
    const data = await mkdtemp(join(tmpdir(), 'docshare-start-ports-'));
    const squatter = await hold();
    try {
      const port = (squatter.address() as AddressInfo).port;
      const result = start({ DOCSHARE_INFRA_DATA: data, DOCSHARE_MINIO_CONSOLE_PORT: String(port) });
      assert.notEqual(result.status, 0);
      assert.match(String(result.stderr), new RegExp(`DOCSHARE_MINIO_CONSOLE_PORT=${port} \\(minio\\): 127.0.0.1:${port} is already in use`));
      assert.deepEqual(await readdir(data), []);
    } finally {
      squatter.close();
      await rm(data, { recursive: true, force: true });
    }
  });
});
