// `docshare account` end to end: the npm bin against a started server. A user uploads a file,
// exports the account (--out: the ZIP downloaded and checked against the recorded SHA-256; the
// original's bytes inside it), then erases it with the password on stdin: the saved token is
// removed, the old token is refused, login is refused, and the status link (no token) ends in done
// with the file deleted.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cliOk as ok, cliSandbox, type CliSandbox } from '../support/cli.ts';
import { randomWord } from '../support/client.ts';
import { useServer } from '../support/fixture.ts';
import { eventually } from '../support/wait.ts';

describe('docshare account (CLI end to end)', () => {
  const fx = useServer();
  let sandbox: CliSandbox;
  const email = `${randomWord(12)}@example.com`;
  const password = 'correct horse battery';
  const content = randomBytes(64 * 1024 + 5);
  let token = '';

  before(async () => {
    sandbox = await cliSandbox('docshare-cli-account-', fx.server.baseUrl, { 'mine.bin': content });
  });
  after(() => sandbox.remove());

  const docshare = (args: string[], more: NodeJS.ProcessEnv = {}, input?: string) => sandbox.run(args, more, input);

  it('export --out: the ZIP is downloaded, its SHA-256 checked, the original inside it', { timeout: 180_000 }, async () => {
    ok(await docshare(['register', '--name', 'Leaving User', '--email', email], { DOCSHARE_PASSWORD: password }), 'register');
    const config = JSON.parse(await readFile(path.join(sandbox.home, 'config', 'docshare', 'config.json'), 'utf8')) as { servers: Record<string, { token: string }> };
    token = config.servers[fx.server.baseUrl]?.token ?? '';
    assert.notEqual(token, '');
    ok(await docshare(['upload', 'mine.bin', '--title', 'Mine', '--description', 'd', '--tags', 't', '--license', 'CC BY', '--new-category', 'Leaving', '-q']), 'upload');
    const exported = ok(await docshare(['account', 'export', '--out', 'export.zip', '--interval-ms', '100']), 'account export');
    assert.match(exported.stdout, /Saved export [0-9a-f-]{36} to .*export\.zip \(\d+ bytes, sha256 [0-9a-f]{64} checked\)/);
    const zip = await readFile(path.join(sandbox.work, 'export.zip'));
    assert.equal(zip.subarray(0, 4).toString('latin1'), 'PK\u0003\u0004');
    // The original is stored uncompressed: its bytes are in the ZIP as they were uploaded.
    assert.ok(zip.includes(content), 'the original is in the ZIP');
    const m = /sha256 ([0-9a-f]{64}) checked/.exec(exported.stdout);
    assert.equal(m?.[1], createHash('sha256').update(zip).digest('hex'));
  });

  it('erase --password-stdin: the account stops working at once, the saved token is removed, the status link ends in done', async () => {
    const wrong = await docshare(['account', 'erase', '--password-stdin'], {}, 'not my password\n');
    assert.equal(wrong.code, 1, wrong.stderr);
    assert.match(wrong.stderr, /Password is incorrect \(HTTP 403/);

    const erased = ok(await docshare(['account', 'erase', '--password-stdin'], {}, `${password}\n`), 'account erase');
    const link = /^(http\S+api-erase\/status\/\S+)$/m.exec(erased.stdout)?.[1];
    assert.ok(link, erased.stdout);
    assert.match(erased.stderr, /saved token was removed/);
    const whoami = await docshare(['files']);
    assert.equal(whoami.code, 3, 'not logged in any more');
    const old = await docshare(['files'], { DOCSHARE_TOKEN: token });
    assert.equal(old.code, 3);
    assert.match(old.stderr, /Invalid JWT token/);
    const login = await docshare(['login', '--email', email], { DOCSHARE_PASSWORD: password });
    assert.equal(login.code, 3);
    assert.match(login.stderr, /Invalid email or password/);
    const done = await eventually(async () => {
      const res = await fetch(link);
      const body = await res.json() as { state: string; files_deleted: number };
      assert.equal(body.state, 'done', JSON.stringify(body));
      return body;
    }, { timeoutMs: 120_000, intervalMs: 200 });
    assert.equal(done.files_deleted, 1);
  });
});
