// `docshare upload` of a file above the resumable threshold, against the fake server of the
// protocol (libs/client/test/fake-uploads.ts): parts in parallel (--parallel), Ctrl-C keeps the
// session and says how to go on, --resume sends only the missing parts; the threshold from the
// environment or the config file.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fakeUploads, type FakeUploads } from '../../client/test/fake-uploads.ts';
import { parseSize, resolveResumableThreshold } from '../src/config.ts';
import { EXIT } from '../src/exit.ts';
import { runCli } from './harness.ts';

const PART = 1024;
let home: string;
let srv: FakeUploads;
const content = randomBytes(PART * 8 + 5);
before(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), 'docshare-cli-resumable-'));
  await writeFile(path.join(home, 'big.bin'), content);
  srv = await fakeUploads({ partSize: PART, style: 'presigned', parallel: 2 });
});
after(async () => {
  await srv.close();
  await rm(home, { recursive: true, force: true });
});

const args = ['upload', 'big.bin', '--title', 'Big', '--description', 'D', '--tags', 'a', '--license', 'CC BY', '--category-id', '1'];
const stateDir = (): string => path.join(home, 'state', 'docshare', 'uploads');
const env = (): Record<string, string> => ({ DOCSHARE_TOKEN: 't', DOCSHARE_URL: srv.url, DOCSHARE_RESUMABLE_THRESHOLD: '1K', XDG_STATE_HOME: path.join(home, 'state') });

describe('docshare upload, resumable', () => {
  it('above the threshold: parts, --parallel at once; the answer as for any upload', async () => {
    const r = await runCli([...args, '--parallel', '2', '-q'], { home, env: env(), answer: (url, init) => fetch(url, init) });
    assert.equal(r.code, EXIT.ok, r.stderr);
    const session = [...srv.sessions.values()].at(-1);
    assert.equal(r.stdout, `${session?.fileId}\n`);
    assert.equal(srv.maxInFlight, 2);
    assert.deepEqual(srv.assembled(session?.id ?? ''), content);
    assert.deepEqual(await readdir(stateDir()), []);
  });

  it('Ctrl-C keeps the session and says so; --resume sends only the missing parts', async () => {
    const stop = new AbortController();
    let ok = 0;
    const first = await runCli(args, {
      home, env: env(), signal: stop.signal,
      answer: async (url, init) => {
        const res = await fetch(url, init);
        if (init?.method === 'PUT' && res.ok && (ok += 1) === 2) stop.abort();
        return res;
      },
    });
    assert.equal(first.code, EXIT.interrupted, first.stderr);
    assert.match(first.stderr, /interrupted; its session is kept: run the same command with --resume/);
    const session = [...srv.sessions.values()].at(-1);
    assert.ok(session);
    const had = new Set(session.parts.keys());
    const before_ = srv.puts.length;
    const resumed = await runCli([...args, '--resume'], { home, env: env(), answer: (url, init) => fetch(url, init) });
    assert.equal(resumed.code, EXIT.ok, resumed.stderr);
    assert.match(resumed.stderr, new RegExp(`Resuming upload ${session.id}: ${had.size} of 9 parts`));
    assert.deepEqual(srv.puts.slice(before_).map((p) => p.part).sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7, 8, 9].filter((n) => !had.has(n)));
    assert.deepEqual(srv.assembled(session.id), content);
    assert.deepEqual(await readdir(stateDir()), []);
  });

  it('--resume with nothing stored says so and uploads anew; --parallel and the threshold are checked', async () => {
    const r = await runCli([...args, '--resume'], { home, env: env(), answer: (url, init) => fetch(url, init) });
    assert.equal(r.code, EXIT.ok, r.stderr);
    assert.match(r.stderr, /No interrupted upload of big\.bin to resume: starting a new one/);
    const bad = await runCli([...args, '--parallel', '0'], { home, env: env() });
    assert.equal(bad.code, EXIT.usage);
    const threshold = await runCli(args, { home, env: { ...env(), DOCSHARE_RESUMABLE_THRESHOLD: 'big' } });
    assert.equal(threshold.code, EXIT.usage);
    assert.match(threshold.stderr, /DOCSHARE_RESUMABLE_THRESHOLD must be a size/);
  });

  it('sizes: bytes or binary units; the environment wins over the config file', () => {
    assert.equal(parseSize('67108864'), 67108864);
    assert.equal(parseSize('64M'), 64 * 1024 * 1024);
    assert.equal(parseSize('1GiB'), 1024 ** 3);
    assert.equal(parseSize('2 kb'), 2048);
    assert.equal(parseSize('1.5G'), undefined);
    assert.equal(resolveResumableThreshold({ DOCSHARE_RESUMABLE_THRESHOLD: '1K' }, { resumable_threshold: '2K' }), 1024);
    assert.equal(resolveResumableThreshold({}, { resumable_threshold: '2K' }), 2048);
    assert.equal(resolveResumableThreshold({}, {}), undefined);
  });
});
