import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lockDataDir } from '../src/data-lock.ts';

describe('one process per data dir', () => {
  it('refuses a data dir another live process holds, takes over one a dead process left, releases on request', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'data-lock-'));
    const lock = join(dir, '.lock');
    const holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    await once(holder, 'spawn');
    try {
      await writeFile(lock, `${holder.pid}\n`);
      await assert.rejects(lockDataDir(lock), new RegExp(`data dir is in use by process ${holder.pid}`));
    } finally {
      holder.kill('SIGKILL');
      await once(holder, 'exit');
    }
    const release = await lockDataDir(lock);
    assert.equal(await readFile(lock, 'utf8'), `${process.pid}\n`);
    await release();
    await assert.rejects(stat(lock), /ENOENT/);
  });
});
