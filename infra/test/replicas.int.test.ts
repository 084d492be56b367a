// Two replicas of every service on the real servers, behind two gateways: the projectors share
// their consumer groups (the 3 partitions split between them) and the gateways share Redis. A user
// who writes through one gateway and reads through the other sees the write at once (the token
// travels through Redis, the projection's progress through the checkpoints), the counters end
// exact, and the rate limit of 30 per user holds across both gateways together.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TARGET } from '../../tests/support/server.ts';
import { api, type Api, type RegisteredUser } from '../../tests/support/client.ts';
import { SERVICES, startServices, stopServices, type RunningService } from '../stack/services.ts';
import { freePorts } from '../stack/ports.ts';

describe('two replicas of every service, two gateways', { skip: TARGET !== 'distributed' ? 'needs DOCSHARE_TARGET=distributed (npm run test:real)' : false }, () => {
  const replicas: RunningService[][] = [];
  const gateways: Api[] = [];
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'docshare-replicas-'));
    const ns = randomBytes(6).toString('hex');
    const jwtSecret = randomBytes(24).toString('hex');
    // One KEK for both replica sets: they share the data keys (a key one wraps, the other must open).
    const dataKek = randomBytes(32).toString('base64url');
    const extraEnv = {
      MONGO_COMMAND_DB: `docshare_${ns}`, MONGO_READ_DB: `docshare_${ns}_read`,
      KAFKA_EVENTS_TOPIC: `docshare.events.${ns}`, KAFKA_DLQ_TOPIC: `docshare.events.${ns}.dlq`, KAFKA_EVENTS_PARTITIONS: '3',
      KAFKA_GROUP_SUFFIX: `.${ns}`, ELASTICSEARCH_ALIAS: `docshare-files-${ns}`, MINIO_BUCKET: `docshare-${ns}`,
      RATE_LIMIT_KEY_PREFIX: `docshare-rl-${ns}`,
      RATE_LIMIT_POINTS: '30', RATE_LIMIT_WINDOW_SECONDS: '60', LOG_LEVEL: 'warn',
    };
    for (let r = 0; r < 2; r++) {
      const [gatewayPort, ...servicePorts] = await freePorts(1 + SERVICES.length);
      const services = await startServices({
        serverEnv: {}, gatewayPort: gatewayPort!, servicePorts, publicBaseUrl: `http://127.0.0.1:${gatewayPort}`, jwtSecret, dataKek,
        extraEnv: { ...extraEnv, INSTANCE_ID: `replica-${r}` },
        output: () => {},
      });
      replicas.push(services);
      gateways.push(api({ baseUrl: `http://127.0.0.1:${gatewayPort}` }));
    }
  });
  after(async () => {
    await Promise.all(replicas.map((services) => stopServices(services)));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('reads through one gateway see writes made through the other, and the counters end exact', async () => {
    const [a, b] = gateways as [Api, Api];
    // Registrations and views are keyed by IP for the rate limit: 4 + 4 of the 30.
    const users: RegisteredUser[] = [];
    for (let i = 0; i < 4; i++) users.push(await (i % 2 === 0 ? a : b).register());
    const expected = users.map(() => ({ total_files: 0, total_comments: 0, total_views: 0, total_downloads: 0, total_sales: 0 }));
    for (let round = 0; round < 2; round++) {
      for (const [i, user] of users.entries()) {
        const [write, read] = (i + round) % 2 === 0 ? [a, b] : [b, a];
        const { fileId } = await write.uploadOk(user.token, { title: `replica ${i} ${round}` });
        expected[i]!.total_files += 1;
        // Read-your-writes on the other gateway, served by whichever projector replica: no retry.
        const listed = await read.files(user.token);
        assert.ok((listed.body.files as { file_id: number }[]).some((f) => String(f.file_id) === fileId), `user ${i} does not see file ${fileId} through the other gateway`);
        const found = await read.search(user.token, { search: `replica ${i} ${round}` });
        assert.ok(JSON.stringify(found.body).includes(`replica ${i} ${round}`), `user ${i} does not find file ${fileId}`);
        // Another user comments and downloads through one gateway; the owner's stats through the other show it.
        const fan = users[(i + 1) % users.length]!;
        assert.equal((await write.comment(fan.token, { file_id: fileId, comment: 'seen' })).status, 201);
        assert.equal((await read.download(fan.token, fileId)).status, 200);
        if (round === 0) {
          assert.equal((await write.view(fileId)).status, 200);
          expected[i]!.total_views += 1;
        }
        expected[i]!.total_comments += 1;
        expected[i]!.total_downloads += 1;
        assert.deepEqual((await read.stats(user.token)).body.data, expected[i], `user ${i}'s stats through the other gateway`);
      }
    }
    for (const [i, user] of users.entries()) {
      assert.deepEqual((await a.stats(user.token)).body.data, expected[i]);
      assert.deepEqual((await b.stats(user.token)).body.data, expected[i]);
    }
  });

  it('a user gets 30 requests a minute across both gateways together', async () => {
    const [a, b] = gateways as [Api, Api];
    const user = await a.register();
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).stats(user.token)));
    const ok = answers.filter((r) => r.status === 200).length;
    const limited = answers.filter((r) => r.status === 429).length;
    assert.deepEqual({ ok, limited }, { ok: 30, limited: 10 });
  });
});
