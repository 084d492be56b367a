// npm run rebuild against a running distributed instance: the rebuilt read models and index
// equal the live ones, document for document and answer for answer, also when the rebuild runs
// while clients write (a quiet second rebuild, i.e. the event store replayed, is the reference).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { startServer, TARGET, REPO_ROOT, type Server } from '../../tests/support/server.ts';
import { api, type Api, type RegisteredUser } from '../../tests/support/client.ts';
import { sampleOf, scrape } from '../../tests/support/metrics.ts';
import { addDays, daily, dayOf, serverNow, top, trending, viewAs } from '../../tests/support/analytics.ts';

const need = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run this suite under infra/with-stack.ts (npm run test:real)`);
  return value;
};

const run = (args: string[], env: Record<string, string>): Promise<{ code: number; output: string }> => new Promise((resolve) => {
  const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c: Buffer) => { output += c.toString(); });
  child.stderr.on('data', (c: Buffer) => { output += c.toString(); });
  child.once('exit', (code) => resolve({ code: code ?? 1, output }));
});

describe('npm run rebuild', { skip: TARGET !== 'distributed' ? 'needs DOCSHARE_TARGET=distributed (npm run test:real)' : false }, () => {
  let server: Server;
  let c: Api;
  let mongo: MongoClient;
  let ns: string;
  const users: RegisteredUser[] = [];
  /** The days the statistics over time are read for (fixed once: the answers must not move with the clock). */
  let days = { from: '', to: '' };

  before(async () => {
    server = await startServer();
    c = api(server);
    mongo = new MongoClient(need('MONGO_URL'));
    await mongo.connect();
    ns = createHash('sha256').update(server.dataDir).digest('hex').slice(0, 12);
    for (let i = 0; i < 3; i++) users.push(await c.register());
    for (let i = 0; i < 9; i++) {
      const owner = users[i % 3]!;
      const { fileId } = await c.uploadOk(owner.token, { title: `rebuild notes ${i}`, tags: `t${i % 2},shared` });
      await c.comment(users[(i + 1) % 3]!.token, { file_id: fileId, comment: `comment on ${i}` });
      await c.view(fileId);
      // Views v2 with viewer keys (signed in, anonymous by User-Agent, the owner's own) and
      // downloads v2: the statistics over time (daily_files, daily_users, hourly_files) replay them.
      for (let k = 0; k <= i % 4; k++) await viewAs(c, fileId, { token: users[(i + 1 + k) % 3]!.token });
      await viewAs(c, fileId, { userAgent: `rebuild agent ${i % 2}` });
      await viewAs(c, fileId, { token: owner.token });
      if (i % 3 === 0) await c.download(users[(i + 2) % 3]!.token, fileId);
      if (i % 2 === 0) await c.download(owner.token, fileId);
      if (i === 4) await c.update(owner.token, { id: fileId, enabled: false });
      if (i === 5) assert.equal((await c.del(owner.token, fileId)).status, 200);
    }
    const today = dayOf(await serverNow(c));
    days = { from: addDays(today, -7), to: addDays(today, 1) };
  });
  after(async () => {
    await mongo?.close();
    await server?.dispose();
  });

  /** What the rebuild is told: the instance's databases and index, and its KEK (kept in its DATA_DIR) to open the log. */
  const rebuildEnvOf = (): Record<string, string> => ({
    MONGO_COMMAND_DB: `docshare_${ns}`, MONGO_READ_DB: `docshare_${ns}_read`, ELASTICSEARCH_ALIAS: `docshare-files-${ns}`,
    ...(process.env['DATA_KEK'] === undefined ? { DATA_KEK_FILE: join(server.dataDir, 'secrets', 'data-kek') } : {}),
  });

  /** Every document of a read model's current generation, keyed by collection name without the generation prefix. */
  const snapshot = async (model: string): Promise<Record<string, unknown[]>> => {
    const db = mongo.db(`docshare_${ns}_read`);
    const pointer = await db.collection<{ _id: string; prefix: string }>('read_model_generations').findOne({ _id: model });
    const prefix = pointer?.prefix ?? `${model}_`;
    const out: Record<string, unknown[]> = {};
    for (const { name } of await db.listCollections({}, { nameOnly: true }).toArray()) {
      if (!name.startsWith(prefix)) continue;
      out[name.slice(prefix.length)] = await db.collection(name).find({}).sort({ _id: 1 }).toArray();
    }
    return out;
  };

  const answers = async () => ({
    stats: await Promise.all(users.map(async (u) => (await c.stats(u.token)).body)),
    files: await Promise.all(users.map(async (u) => (await c.files(u.token, `user_id=${u.userId}`)).body)),
    comments: await Promise.all(users.map(async (u) => (await c.comments(u.token)).body)),
    search: (await c.search(users[0]!.token, { search: 'rebuild notes', per_page: 100 })).body,
    load: (await c.search(users[0]!.token, { search: 'load', per_page: 100 })).body,
    daily: await Promise.all(users.map(async (u) => (await daily(c, u.token, days)).body)),
    top: await Promise.all(users.map(async (u) => Promise.all(['views', 'unique_viewers', 'downloads', 'comments']
      .map(async (metric) => (await top(c, u.token, { metric, days: 90, limit: 50 })).body)))),
    trending: (await trending(c, users[0]!.token, { hours: 168, limit: 50 })).body,
  });

  it('rebuilds stats, files and search into equal models, swapped in while the services run', async () => {
    // Writes do not wait for the read models: the live ones are compared once they have caught up.
    while (!(await caughtUp())) await new Promise((r) => setTimeout(r, 50));
    const before = { stats: await snapshot('stats'), files: await snapshot('files'), answers: await answers() };
    assert.ok((before.files.files ?? []).length >= 9, 'the live files model has the uploads');
    // The views and downloads are v2 events (outside the files' streams), and the statistics over
    // time hold them: the equality below covers those collections too.
    const types = await mongo.db(`docshare_${ns}`).collection('events').distinct('events.type');
    for (const type of ['docs.file.viewed.v2', 'docs.file.downloaded.v2']) assert.ok(types.includes(type), `${type} in the log: ${types.join(', ')}`);
    for (const name of ['stored_files', 'daily_files', 'daily_users', 'hourly_files']) {
      assert.ok((before.stats[name] ?? []).length > 0, `the live stats model has ${name}: ${Object.keys(before.stats).join(', ')}`);
    }
    const viewed = before.answers.daily.map((d) => (d as { totals?: { views?: number; unique_viewers?: number } }).totals);
    assert.ok(viewed.every((t) => (t?.views ?? 0) > 0 && (t?.unique_viewers ?? 0) > 0), `every owner's days have views and viewers: ${JSON.stringify(viewed)}`);
    const result = await run(['infra/rebuild.ts', 'all'], rebuildEnvOf());
    assert.equal(result.code, 0, result.output);
    assert.match(result.output, /stats: \d+ events replayed/);
    assert.match(result.output, /search: \d+ events replayed/);
    const generation = await mongo.db(`docshare_${ns}_read`).collection<{ _id: string; prefix: string }>('read_model_generations').findOne({ _id: 'stats' });
    assert.match(generation?.prefix ?? '', /^stats_g\d+_$/, 'stats now read from a rebuilt generation');
    // Each projector reports the generation it now reads and writes (docs/observability.md).
    for (const [service, model] of [['stats-projector', 'stats'], ['files-projector', 'files'], ['search-projector', 'search']] as const) {
      const pointer = await mongo.db(`docshare_${ns}_read`).collection<{ _id: string; prefix: string }>('read_model_generations').findOne({ _id: model });
      const rebuilt = Number(/_g(\d+)_?$/.exec(pointer?.prefix ?? '')?.[1]);
      assert.ok(rebuilt > 0, `${model}: ${pointer?.prefix}`);
      assert.equal(sampleOf(await scrape(server, service), 'docshare_read_model_generation_timestamp_seconds', { model }), rebuilt / 1000, service);
    }
    assert.deepEqual(await snapshot('stats'), before.stats);
    assert.deepEqual(await snapshot('files'), before.files);
    assert.deepEqual(await answers(), before.answers);
  });

  /** The highest position in the event store, and whether every projector group's checkpoints are through it. */
  const caughtUp = async (): Promise<boolean> => {
    const command = mongo.db(`docshare_${ns}`);
    const newest = await command.collection<{ position: number; count: number }>('events').find({}).sort({ position: -1 }).limit(1).toArray();
    const end = newest[0] ? newest[0].position + newest[0].count - 1 : 0;
    const marks = await mongo.db(`docshare_${ns}_read`).collection<{ _id: string; through: number }>('projection_checkpoints').find({}).toArray();
    return ['stats-projector', 'files-projector', 'search-projector'].every((group) => {
      const mine = marks.filter((m) => m._id.startsWith(`${group}.${ns}/`));
      return mine.length === 3 && mine.every((m) => m.through >= end);
    });
  };

  it('rebuilds every model exactly while clients keep writing: equal to a quiet rebuild from the event store', async () => {
    const rebuildEnv = rebuildEnvOf();
    let writing = true;
    let writes = 0;
    const load = users.map(async (user, i) => {
      const mine: string[] = [];
      for (let n = 0; writing; n++) {
        const { fileId } = await c.uploadOk(user.token, { title: `load ${i} ${n}`, tags: `load,t${n % 3}` });
        mine.push(fileId);
        const target = mine[n % mine.length]!;
        await c.comment(users[(i + 1) % users.length]!.token, { file_id: target, comment: `load comment ${n}` });
        await c.view(target);
        await viewAs(c, target, { token: users[(i + 1) % users.length]!.token });
        await c.download(users[(i + 2) % users.length]!.token, target);
        if (n % 4 === 3) await c.del(user.token, mine.shift()!);
        writes += 1;
      }
    });
    // The load runs before, during and after the whole rebuild.
    while (writes < 6) await new Promise((r) => setTimeout(r, 20));
    const result = await run(['infra/rebuild.ts', 'all'], rebuildEnv);
    const during = writes;
    while (writes < during + 6) await new Promise((r) => setTimeout(r, 20));
    writing = false;
    await Promise.all(load);
    assert.equal(result.code, 0, result.output);
    while (!(await caughtUp())) await new Promise((r) => setTimeout(r, 50));
    const live = { stats: await snapshot('stats'), files: await snapshot('files'), answers: await answers() };
    assert.ok(live.answers.search && JSON.stringify(live.answers).includes('load 0'), 'the load is in the models');

    const quiet = await run(['infra/rebuild.ts', 'all'], rebuildEnv);
    assert.equal(quiet.code, 0, quiet.output);
    assert.deepEqual(await snapshot('stats'), live.stats, 'stats rebuilt under load differ from the event store\'s');
    assert.deepEqual(await snapshot('files'), live.files, 'files rebuilt under load differ from the event store\'s');
    assert.deepEqual(await answers(), live.answers, 'answers (search included) differ after a quiet rebuild');
  });
});
