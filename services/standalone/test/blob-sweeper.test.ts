// npm start sweeps blobs that no upload event refers to (what kill -9 between a blob and its event
// leaves), once they are older than the grace period; blobs of files stay.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { api } from '../../../tests/support/client.ts';
import { localOnly, startServer, type Server } from '../../../tests/support/server.ts';
import { eventually } from '../../../tests/support/wait.ts';

let server: Server | undefined;
after(() => server?.dispose());

const blobFiles = async (dataDir: string): Promise<string[]> => {
  const root = join(dataDir, 'blobs', 'blobs');
  const out: string[] = [];
  for (const shard of await readdir(root)) for (const key of await readdir(join(root, shard))) out.push(join(root, shard, key));
  return out.sort();
};
const age = async (file: string, hours: number): Promise<void> => {
  const then = new Date(Date.now() - hours * 60 * 60 * 1000);
  await utimes(file, then, then);
};

it('removes an old orphan blob in DATA_DIR/blobs and keeps the blobs of files', { skip: localOnly }, async () => {
  server = await startServer({ BLOB_SWEEP_INTERVAL_SECONDS: '1' });
  const c = api(server);
  const user = await c.register();
  const bytes = new TextEncoder().encode('kept by the sweeper');
  const { fileId } = await c.uploadOk(user.token, {}, bytes);
  const [uploaded] = await blobFiles(server.dataDir);
  assert.ok(uploaded);
  await age(uploaded, 2);

  // What a crash between the blob and its event leaves: a blob of a file id with no upload.
  const orphanKey = `f999-${randomUUID()}`;
  const orphan = join(server.dataDir, 'blobs', 'blobs', orphanKey.slice(0, 2), orphanKey);
  await mkdir(join(orphan, '..'), { recursive: true });
  await writeFile(orphan, 'DSB1 orphaned bytes');
  await age(orphan, 2);
  // A young orphan (an upload in flight elsewhere, as far as the sweeper can tell) stays.
  const youngKey = `f998-${randomUUID()}`;
  const young = join(server.dataDir, 'blobs', 'blobs', youngKey.slice(0, 2), youngKey);
  await mkdir(join(young, '..'), { recursive: true });
  await writeFile(young, 'DSB1 young bytes');

  await eventually(async () => !(await blobFiles(server!.dataDir)).includes(orphan), { timeoutMs: 30_000 });
  assert.deepEqual(await blobFiles(server.dataDir), [uploaded, young].sort());
  // On the internal metrics listener, never on the public port. The pass counts what it removed
  // when it ends, after the file is gone: the count is polled, not read at the moment of the unlink.
  await eventually(async () => {
    const metrics = await (await fetch(`${server!.metricsUrl}/metrics`)).text();
    assert.match(metrics, /^docshare_blobs_swept_total 1$/m);
  }, { timeoutMs: 30_000 });
  assert.ok(server.output().includes('unreferenced blob removed'));

  // The file's bytes are intact.
  const link = await c.download(user.token, fileId);
  assert.equal(link.status, 200);
  const got = await c.bytes(link.body.download_url as string);
  assert.deepEqual(new Uint8Array(got.bytes), bytes);
});
