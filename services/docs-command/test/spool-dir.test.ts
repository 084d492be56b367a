// The default spool directory survives a restart of the same docs-command instance, so the
// restart cleans what a killed upload left there (it was per pid: the partial file stayed).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';

const SPOOL = join(import.meta.dirname, '..', 'src', 'spool-dir.ts');
const APP = join(import.meta.dirname, '..', 'src', 'app.ts');
const base = await mkdtemp(join(tmpdir(), 'docshare-spool-test-'));
after(() => rm(base, { recursive: true, force: true }));

/** Runs `code` in a fresh process (a new pid, as after a restart). */
const inProcess = (code: string): ReturnType<typeof spawnSync> =>
  spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' });

it('a restarted instance on the same port finds and empties the spool of the one killed mid-upload', async () => {
  const port = 18081;
  const killed = inProcess(`
    import { mkdir, writeFile } from 'node:fs/promises';
    import { defaultSpoolDir } from ${JSON.stringify(SPOOL)};
    const dir = defaultSpoolDir(${port}, ${JSON.stringify(base)});
    await mkdir(dir, { recursive: true });
    await writeFile(dir + '/upload-in-flight', Buffer.alloc(1024));
    process.kill(process.pid, 'SIGKILL');
  `);
  assert.equal(killed.signal, 'SIGKILL', String(killed.stderr));
  const [dir] = await readdir(base);
  assert.ok(dir);
  assert.deepEqual(await readdir(join(base, dir)), ['upload-in-flight']);

  const restarted = inProcess(`
    import { defaultSpoolDir } from ${JSON.stringify(SPOOL)};
    import { prepareSpool } from ${JSON.stringify(APP)};
    await prepareSpool(defaultSpoolDir(${port}, ${JSON.stringify(base)}));
  `);
  assert.equal(restarted.status, 0, String(restarted.stderr));
  assert.deepEqual(await readdir(base), [dir], 'the same directory');
  assert.deepEqual(await readdir(join(base, dir)), [], 'emptied');
});
