// npm run rebuild against a running distributed instance: the rebuilt read models and index
// equal the live ones, document for document and answer for answer.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { startServer, TARGET, REPO_ROOT, type Server } from '../../tests/support/server.ts';
import { api, type Api, type RegisteredUser } from '../../tests/support/client.ts';

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
      if (i % 3 === 0) await c.download(users[(i + 2) % 3]!.token, fileId);
      if (i === 4) await c.update(owner.token, { id: fileId, enabled: false });
      if (i === 5) assert.equal((await c.del(owner.token, fileId)).status, 200);
    }
  });
  after(async () => {
    await mongo?.close();
    await server?.dispose();
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
  });

  it('rebuilds stats, files and search into equal models, swapped in while the services run', async () => {
    const before = { stats: await snapshot('stats'), files: await snapshot('files'), answers: await answers() };
    assert.ok((before.files.files ?? []).length >= 9, 'the live files model has the uploads');
    const result = await run(['infra/rebuild.ts', 'all'], {
      MONGO_COMMAND_DB: `docshare_${ns}`, MONGO_READ_DB: `docshare_${ns}_read`, ELASTICSEARCH_ALIAS: `docshare-files-${ns}`,
    });
    assert.equal(result.code, 0, result.output);
    assert.match(result.output, /stats: \d+ events replayed/);
    assert.match(result.output, /search: \d+ events replayed/);
    const generation = await mongo.db(`docshare_${ns}_read`).collection<{ _id: string; prefix: string }>('read_model_generations').findOne({ _id: 'stats' });
    assert.match(generation?.prefix ?? '', /^stats_g\d+_$/, 'stats now read from a rebuilt generation');
    assert.deepEqual(await snapshot('stats'), before.stats);
    assert.deepEqual(await snapshot('files'), before.files);
    assert.deepEqual(await answers(), before.answers);
  });
});
