// Resumable uploads (issue 22) through the clients against the server (embedded: docshare's signed
// part URLs), with the threshold lowered to a few MiB and 5 MiB parts: the SDK in parallel with
// one progress count, an interrupted upload resumed sending only the missing parts, and the
// `docshare` bin above its threshold; each file downloaded with the same SHA-256 and found by search.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createClient, type DocshareClient, type FetchLike, type Progress } from '@docshare/client';
import { randomWord } from '../support/client.ts';
import { useServer } from '../support/fixture.ts';
import { REPO_ROOT } from '../support/server.ts';
import { eventually } from '../support/wait.ts';

const MiB = 1024 * 1024;
const BIN = path.join(REPO_ROOT, 'libs', 'cli', 'bin', 'docshare.js');
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const isPart = (url: string, init?: RequestInit): boolean => init?.method === 'PUT' && /\/parts\/\d+/.test(url);

describe('resumable uploads through the SDK and the CLI', () => {
  const fx = useServer({ UPLOAD_PART_BYTES: String(5 * MiB) });
  let dir: string;
  let file: string;
  const content = randomBytes(13 * MiB + 4321);
  const password = 'correct horse battery';
  const email = `${randomWord(12)}@example.com`;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'docshare-resumable-e2e-'));
    file = path.join(dir, 'big.bin');
    await writeFile(file, content);
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const client = async (fetch_?: FetchLike): Promise<DocshareClient> => {
    const c = createClient({
      baseUrl: fx.server.baseUrl, retryBaseDelayMs: 10, resumableThreshold: 4 * MiB, uploadStateDir: path.join(dir, 'state'),
      ...(fetch_ ? { fetch: fetch_ } : {}),
    });
    await c.register({ name: 'Resumer', email, password }).catch(async () => await c.login({ email, password }));
    return c;
  };
  const meta = (word: string) => ({ title: `Big ${word}`, description: 'Sent in parts', tags: ['big'], cc_license: 'CC BY', new_category_name: 'Big files' });
  const downloaded = async (c: DocshareClient, id: string): Promise<string> => {
    const to = path.join(dir, `copy-${id}.bin`);
    await c.download(id, { to });
    return sha(await readFile(to));
  };

  it('SDK: parts in parallel, one progress count to the size; the same bytes back, found by search', async () => {
    const puts: string[] = [];
    const c = await client(async (input, init) => {
      if (isPart(String(input), init)) puts.push(String(input));
      return await fetch(input, init);
    });
    const word = randomWord(12);
    const progress: Progress[] = [];
    const up = await c.upload({ file, ...meta(word) }, { parallel: 2, onProgress: (p) => progress.push(p) });
    assert.equal(up.message, 'File uploaded successfully');
    assert.equal(puts.length, 3, '13 MiB in 5 MiB parts');
    assert.deepEqual(progress.at(-1), { loaded: content.length, total: content.length });
    for (let i = 1; i < progress.length; i += 1) assert.ok((progress[i]?.loaded ?? 0) >= (progress[i - 1]?.loaded ?? 0));
    assert.equal(await downloaded(c, up.file_id), sha(content));
    const found = await eventually(async () => {
      const page = await c.search(word);
      assert.equal(page.results[0]?.id, up.file_id);
      return page;
    });
    assert.equal(found.results.length, 1);
    assert.deepEqual(await readdir(path.join(dir, 'state')), []);
  });

  it('SDK: interrupted after a part, resumed: only the missing parts are sent', async () => {
    const stop = new AbortController();
    let done = 0;
    const first = await client(async (input, init) => {
      const res = await fetch(input, init);
      if (isPart(String(input), init) && res.ok && (done += 1) === 1) stop.abort();
      return res;
    });
    const word = randomWord(12);
    const error = await first.upload({ file, ...meta(word) }, { parallel: 1, signal: stop.signal }).catch((e: unknown) => e);
    assert.equal((error as Error).name, 'AbortError');

    const parts: number[] = [];
    const c = await client(async (input, init) => {
      if (isPart(String(input), init)) parts.push(Number(/\/parts\/(\d+)/.exec(String(input))?.[1]));
      return await fetch(input, init);
    });
    let resumed = -1;
    const up = await c.upload({ file, ...meta(word) }, {
      resume: true, onResumable: (e) => {
        if (e.kind === 'resumed') resumed = e.receivedParts;
      },
    });
    assert.equal(resumed, 1);
    assert.deepEqual(parts.sort(), [2, 3]);
    assert.equal(await downloaded(c, up.file_id), sha(content));
  });

  it('CLI: docshare upload above DOCSHARE_RESUMABLE_THRESHOLD, --parallel 2', async () => {
    const home = path.join(dir, 'home');
    await mkdir(home, { recursive: true });
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, 'config'), XDG_STATE_HOME: path.join(home, 'state'), DOCSHARE_URL: fx.server.baseUrl, DOCSHARE_RESUMABLE_THRESHOLD: '4M', DOCSHARE_PASSWORD: password };
    for (const k of ['DOCSHARE_TOKEN', 'NODE_TEST_CONTEXT']) delete env[k];
    const docshare = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => new Promise((resolve) => {
      execFile(process.execPath, [BIN, ...args], { cwd: dir, env }, (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
      });
    });
    const login = await docshare(['login', '--email', email]);
    assert.equal(login.code, 0, login.stderr);
    const up = await docshare(['upload', 'big.bin', '--title', 'CLI big', '--description', 'parts', '--tags', 'big', '--license', 'CC BY', '--new-category', 'Big files', '--parallel', '2', '-q']);
    assert.equal(up.code, 0, up.stderr);
    const id = up.stdout.trim();
    assert.match(id, /^\d+$/);
    const c = await client();
    assert.equal(await downloaded(c, id), sha(content));
    assert.deepEqual(await readdir(path.join(home, 'state', 'docshare', 'uploads')), []);
  });
});
