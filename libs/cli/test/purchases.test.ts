// The CLI's purchases command (issue 17, item 9), in-process, the server played by a fetch
// function: what it asks for, and what it prints (every server string shown as escapes).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EXIT } from '../src/exit.ts';
import { jsonResponse, runCli, type Ran } from './harness.ts';

let home: string;
before(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), 'docshare-cli-purchases-'));
});
after(async () => {
  await rm(home, { recursive: true, force: true });
});

const LIST = {
  status: 'success',
  data: [{ id: 12, title: 'Notes\u001b[2J', sale_id: 5, purchased_at: '2026-11-20T10:00:00.000Z', download_url: 'http://api.test/files/12/content?sale=5&expires=1&signature=ab' }],
  total: 1, page: 2, per_page: 1,
};

const cli = async (argv: string[]): Promise<Ran & { urls: string[] }> => {
  const ran = await runCli(argv, { home, env: { DOCSHARE_TOKEN: 't', DOCSHARE_URL: 'http://api.test' }, answer: () => jsonResponse(200, LIST) });
  return { ...ran, urls: ran.calls.map((call) => call.url) };
};

describe('docshare purchases', () => {
  it('asks for the page and prints each purchase with its link, the title\'s controls escaped', async () => {
    const r = await cli(['purchases', '--page', '2', '--per-page', '1']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.urls, ['http://api.test/api/V1/users/api-purchases?page=2&per_page=1']);
    assert.equal(r.stdout, '12\tNotes\\x1b[2J  sale 5, 2026-11-20T10:00:00.000Z  http://api.test/files/12/content?sale=5&expires=1&signature=ab\n');
    assert.match(r.stderr, /1 of 1 purchases/);
  });

  it('-q prints the ids; --json the answer', async () => {
    assert.equal((await cli(['purchases', '-q'])).stdout, '12\n');
    assert.deepEqual(JSON.parse((await cli(['purchases', '--json'])).stdout), LIST);
  });

  it('a bad --page is a usage error, nothing sent', async () => {
    const r = await cli(['purchases', '--page', '0']);
    assert.equal(r.code, EXIT.usage);
    assert.deepEqual(r.urls, []);
  });
});
