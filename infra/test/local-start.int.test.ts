// infra/local/start.sh never leaves orphans: a start that fails stops the servers it launched.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { freePort } from '../../tests/support/server.ts';

const START = join(import.meta.dirname, '..', 'local', 'start.sh');
const data = await mkdtemp(join(tmpdir(), 'docshare-start-'));
after(() => rm(data, { recursive: true, force: true }));

const listening = (port: number): Promise<boolean> => new Promise((resolve) => {
  const socket = connect(port, '127.0.0.1');
  socket.once('connect', () => { socket.destroy(); resolve(true); });
  socket.once('error', () => resolve(false));
});

it('a server that cannot start makes start.sh stop the servers it launched in that run', async () => {
  const [redis, ferretdb, minio, console] = [await freePort(), await freePort(), await freePort(), await freePort()];
  // MinIO's data directory cannot be made (a file is in the way): its set-up fails, after
  // nothing and before Redis and FerretDB are launched.
  await mkdir(join(data, 'minio'), { recursive: true });
  await writeFile(join(data, 'minio', 'data'), 'in the way');
  const result = spawnSync('bash', [START, 'redis', 'ferretdb', 'minio'], {
    encoding: 'utf8',
    env: {
      ...process.env, DOCSHARE_INFRA_DATA: data, DOCSHARE_STARTED_FILE: join(data, 'started'),
      DOCSHARE_REDIS_PORT: String(redis), DOCSHARE_FERRETDB_PORT: String(ferretdb),
      DOCSHARE_MINIO_PORT: String(minio), DOCSHARE_MINIO_CONSOLE_PORT: String(console),
    },
  });
  const out = `${result.stdout}\n${result.stderr}`;
  assert.notEqual(result.status, 0, out);
  assert.match(out, /minio\s+FAILED/);
  assert.match(out, /redis\s+stopped again: this start failed/);
  assert.match(out, /ferretdb\s+stopped again: this start failed/);
  assert.equal(await listening(redis), false, 'Redis is not left running');
  assert.equal(await listening(ferretdb), false, 'FerretDB is not left running');
  for (const server of ['redis', 'ferretdb']) {
    assert.ok(!(await readdir(join(data, server))).includes(`${server}.pid`), `no ${server}.pid left`);
  }
});
