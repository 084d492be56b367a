// A distributed instance (infra/stack/instance.ts) restarts a service that died instead of
// stopping: the service's current pid is in DATA_DIR/run/<service>.pid, rewritten on restart.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SERVICE_NAMES } from '@docshare/contracts/services';
import { api } from '../../tests/support/client.ts';
import { alive, startServer, TARGET, type Server } from '../../tests/support/server.ts';
import { eventually } from '../../tests/support/wait.ts';

const SERVICES = SERVICE_NAMES;

const pidOf = async (server: Server, service: string): Promise<number | null> => {
  const text = await readFile(join(server.dataDir, 'run', `${service}.pid`), 'utf8').catch(() => null);
  const pid = Number(text?.trim());
  return text !== null && Number.isSafeInteger(pid) && pid > 0 ? pid : null;
};

if (TARGET !== 'distributed') throw new Error('this test runs a distributed instance: set DOCSHARE_TARGET=distributed and the servers\' URLs');

describe('distributed instance supervision', () => {
  let server: Server;
  before(async () => {
    server = await startServer();
  });
  after(() => server.dispose());

  it('keeps the current pid of every service in DATA_DIR/run', async () => {
    for (const service of SERVICES) {
      const pid = await pidOf(server, service);
      assert.ok(pid !== null && alive(pid), `${service}.pid names a live process`);
    }
  });

  for (const service of ['stats-projector', 'gateway']) {
    it(`restarts ${service} after kill -9; the rest keeps running and the API works again`, async () => {
      const c = api(server);
      const user = await c.register();
      const before = await Promise.all(SERVICES.map((s) => pidOf(server, s)));
      const victim = await pidOf(server, service);
      assert.ok(victim !== null);
      process.kill(victim, 'SIGKILL');
      const next = await eventually(async () => {
        const pid = await pidOf(server, service);
        return pid !== null && pid !== victim && alive(pid) ? pid : false;
      }, { timeoutMs: 60_000 });
      assert.ok(!alive(victim));
      // Nobody else was restarted.
      const after = await Promise.all(SERVICES.map((s) => pidOf(server, s)));
      assert.deepEqual(after, before.map((pid, i) => (SERVICES[i] === service ? next : pid)));
      // Served again, stats included (the projector's read model is intact).
      await eventually(async () => (await fetch(`${server.baseUrl}/healthz`)).status === 200, { timeoutMs: 60_000 });
      await c.uploadOk(user.token, {});
      await eventually(async () => {
        const res = await c.stats(user.token);
        return res.status === 200 && res.body.data.total_files === 1;
      }, { timeoutMs: 60_000 });
      assert.match(server.output(), new RegExp(`"service":"${service}".*restarting in \\d+ ms`));
    });
  }
});
