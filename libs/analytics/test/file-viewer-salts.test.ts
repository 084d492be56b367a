import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { viewerSaltsContract } from '../src/contract.ts';
import { openFileViewerSalts } from '../src/viewer-key.ts';

const root = await mkdtemp(join(tmpdir(), 'docshare-salts-'));
after(async () => {
  await rm(root, { recursive: true, force: true });
});
let dirs = 0;
const freshDir = (): string => join(root, `salts-${++dirs}`);

viewerSaltsContract('file', () => {
  const dir = freshDir();
  return (options) => openFileViewerSalts(dir, options);
});

describe('file viewer salts', () => {
  const now = () => new Date('2026-03-10T12:00:00.000Z');

  it('keeps the salts in one JSON file in the directory, the forgotten days removed from it', async () => {
    const dir = freshDir();
    let clock = now();
    const salts = await openFileViewerSalts(dir, { now: () => clock });
    const today = await salts.saltOf('2026-03-10');
    await salts.saltOf('2026-03-09');
    assert.deepEqual(await readdir(dir), ['viewer-salts.json'], 'no temporary file left');
    const stored = JSON.parse(await readFile(join(dir, 'viewer-salts.json'), 'utf8')) as { salts: Record<string, string> };
    assert.deepEqual(Object.keys(stored.salts).sort(), ['2026-03-09', '2026-03-10']);
    assert.equal(stored.salts['2026-03-10'], today.toString('base64'));
    clock = new Date('2026-03-11T00:00:00.000Z');
    await salts.saltOf('2026-03-11');
    const later = JSON.parse(await readFile(join(dir, 'viewer-salts.json'), 'utf8')) as { salts: Record<string, string> };
    assert.deepEqual(Object.keys(later.salts).sort(), ['2026-03-10', '2026-03-11']);
    await salts.close();
    await assert.rejects(salts.saltOf('2026-03-11'), /closed/);
  });

  it('refuses to open a file that is not a salt file, without quoting it', async () => {
    for (const content of ['{"salts": {"2026-03-10": "c2VjcmV0"}}', 'secret-salt-text', '{"salts": {"tomorrow": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}}', '[]']) {
      const dir = freshDir();
      await openFileViewerSalts(dir, { now }).then((salts) => salts.close());
      await writeFile(join(dir, 'viewer-salts.json'), content);
      await assert.rejects(openFileViewerSalts(dir, { now }), (error: unknown) => {
        assert.ok(error instanceof Error && error.message.includes('viewer-salts.json'));
        assert.ok(!error.message.includes('c2VjcmV0') && !error.message.includes('secret'), error.message);
        return true;
      });
    }
  });
});
