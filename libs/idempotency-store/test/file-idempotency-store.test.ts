import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { idempotencyStoreContract } from '../src/contract.ts';
import { openFileIdempotencyStore } from '../src/file-idempotency-store.ts';

const dirs: string[] = [];
after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));
const freshDir = async (): Promise<string> => {
  const dir = await mkdtemp(join(tmpdir(), 'idem-'));
  dirs.push(dir);
  return dir;
};

let contractDir = '';
idempotencyStoreContract('file', async () => openFileIdempotencyStore((contractDir = await freshDir())), async (closed) => {
  await closed.close();
  return openFileIdempotencyStore(contractDir);
});

describe('file idempotency store', () => {
  const answer = { status: 201, headers: {}, body: '{"status":"success"}' };

  it('drops a torn last line and keeps what was acknowledged', async () => {
    const dir = await freshDir();
    const store = await openFileIdempotencyStore(dir);
    const begun = await store.begin('k1', 1_000, 60_000);
    if (begun.state !== 'started') return assert.fail('not started');
    await store.complete('k1', begun.token, { fingerprint: 'f', answer, expiresAt: Date.now() + 60_000 });
    await store.close();
    await appendFile(join(dir, 'idempotency.log'), '0badc0de {"k":"k2"');
    const reopened = await openFileIdempotencyStore(dir);
    const seen = await reopened.begin('k1', 2_000, 60_000);
    assert.equal(seen.state, 'done');
    assert.equal((await reopened.begin('k2', 2_000, 60_000)).state, 'started');
    await reopened.close();
    assert.ok(!(await readFile(join(dir, 'idempotency.log'), 'utf8')).includes('"k2"'));
  });

  it('refuses to open a log damaged before its last line', async () => {
    const dir = await freshDir();
    await writeFile(join(dir, 'idempotency.log'), 'deadbeef {"k":"x"}\n00000000 {}\n');
    await assert.rejects(openFileIdempotencyStore(dir), /corrupt at line 1/);
  });

  it('compacts expired keys away when it opens', async () => {
    const dir = await freshDir();
    let now = 1_000_000;
    const store = await openFileIdempotencyStore(dir, () => now);
    for (let i = 0; i < 100; i++) {
      const begun = await store.begin(`k${i}`, now, 60_000);
      if (begun.state !== 'started') return assert.fail('not started');
      await store.complete(`k${i}`, begun.token, { fingerprint: 'f', answer, expiresAt: i < 90 ? now + 10 : Date.now() + 3_600_000 });
    }
    await store.close();
    now += 1_000;
    const reopened = await openFileIdempotencyStore(dir, () => now);
    const lines = (await readFile(join(dir, 'idempotency.log'), 'utf8')).trim().split('\n');
    assert.equal(lines.length, 10);
    assert.equal((await reopened.begin('k95', now, 60_000)).state, 'done');
    assert.equal((await reopened.begin('k5', now, 60_000)).state, 'started');
    await reopened.close();
  });

  it('one store per file per process', async () => {
    const dir = await freshDir();
    const store = await openFileIdempotencyStore(dir);
    await assert.rejects(openFileIdempotencyStore(dir), /already open/);
    await store.close();
  });
});
