// Resumable uploads against a fake server of the protocol (fake-uploads.ts): parts in parallel
// but never more than asked, one monotonic progress count, re-signing after a 403, both styles of
// part answer, and an interrupted upload taken up from its session on disk, sending only what the
// server lacks. (Against the real server: tests/conformance/sdk.test.ts.)
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createClient, defaultUploadStateDir, type Progress, type ResumableEvent } from '../src/index.ts';
import { fakeUploads, type FakeOptions, type FakeUploads } from './fake-uploads.ts';

const PART = 1024;
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const meta = { title: 'Big', description: 'A big file', tags: ['big'], cc_license: 'CC BY', new_category_name: 'Big' };

let dir: string;
let content: Buffer;
let file: string;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'docshare-resumable-'));
  content = randomBytes(PART * 10 + 300);
  file = path.join(dir, 'big.bin');
  await writeFile(file, content);
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A fake server for one test, closed after it. */
async function withServer<T>(opts: Partial<FakeOptions>, fn: (srv: FakeUploads, stateDir: string) => Promise<T>): Promise<T> {
  const srv = await fakeUploads({ partSize: PART, style: 'docshare', parallel: 3, ...opts });
  const stateDir = await mkdtemp(path.join(dir, 'state-'));
  try {
    return await fn(srv, stateDir);
  } finally {
    await srv.close();
  }
}

const client = (srv: FakeUploads, stateDir: string, more: Partial<Parameters<typeof createClient>[0]> = {}) =>
  createClient({ baseUrl: srv.url, token: 'tok', retryBaseDelayMs: 1, resumableThreshold: PART, uploadStateDir: stateDir, ...more });

const monotonicToSize = (seen: Progress[], size: number): void => {
  assert.ok(seen.length > 2, 'progress is told as parts go');
  for (let i = 1; i < seen.length; i += 1) assert.ok((seen[i]?.loaded ?? 0) >= (seen[i - 1]?.loaded ?? 0), `progress went back at ${i}`);
  assert.deepEqual(seen.at(-1), { loaded: size, total: size });
  for (const p of seen) assert.equal(p.total, size);
};

describe('resumable uploads', () => {
  for (const style of ['docshare', 'presigned'] as const) {
    it(`${style} part answers: the file in parts, ${3} at once and never more, one progress to its size, the session file gone`, async () => {
      await withServer({ style }, async (srv, stateDir) => {
        const seen: Progress[] = [];
        const events: ResumableEvent['kind'][] = [];
        const answer = await client(srv, stateDir, { parallel: 3 }).upload({ file, ...meta }, {
          onProgress: (p) => seen.push(p), onResumable: (e) => events.push(e.kind),
        });
        const [session] = [...srv.sessions.values()];
        assert.equal(answer.file_id, session?.fileId);
        assert.equal(sha(srv.assembled(session?.id ?? '') ?? Buffer.alloc(0)), sha(content));
        assert.equal(srv.maxInFlight, 3);
        assert.equal(srv.puts.length, 11, 'each part once');
        assert.deepEqual(session?.meta, {
          file_name: 'big.bin', size: content.length, content_type: 'application/octet-stream',
          title: 'Big', description: 'A big file', tags: 'big', cc_license: 'CC BY', new_category_name: 'Big',
        });
        monotonicToSize(seen, content.length);
        assert.deepEqual(events, ['started', 'completed']);
        assert.deepEqual(await readdir(stateDir), [], 'no session left on disk');
        assert.deepEqual(srv.log.filter((r) => r.method !== 'PUT').map((r) => r.method), ['POST', 'POST'], 'create and complete only');
      });
    });
  }

  it('a file up to the threshold goes as one form upload; bytes and Blobs go in parts too', async () => {
    await withServer({}, async (srv, stateDir) => {
      await client(srv, stateDir, { resumableThreshold: content.length }).upload({ file, ...meta });
      assert.deepEqual(srv.log.map((r) => r.path), ['/api/V1/docs/api-upload']);
      const answer = await client(srv, stateDir).upload({ file: content, fileName: 'mem.bin', ...meta });
      assert.equal(sha(srv.assembled([...srv.sessions.keys()][0] ?? '') ?? Buffer.alloc(0)), sha(content));
      const blob = await client(srv, stateDir, { parallel: 2 }).upload({ file: new Blob([content]), ...meta }, { parallel: 3 });
      assert.notEqual(answer.file_id, blob.file_id);
      assert.equal(sha(srv.assembled([...srv.sessions.keys()][1] ?? '') ?? Buffer.alloc(0)), sha(content));
    });
  });

  it('expired URLs (403): one GET of the session for fresh ones, the refused parts sent again', async () => {
    await withServer({ parallel: 2 }, async (srv, stateDir) => {
      let expired = false;
      const seen: Progress[] = [];
      const answer = await client(srv, stateDir, { parallel: 2 }).upload({ file, ...meta }, {
        onProgress: (p) => {
          seen.push(p);
          if (!expired && p.loaded >= 4 * PART) {
            expired = true;
            srv.expireUrls();
          }
        },
      });
      assert.ok(answer.file_id);
      assert.equal(srv.log.filter((r) => r.method === 'GET').length, 1);
      assert.ok(srv.puts.length > 11, 'some parts were refused, then sent again');
      assert.equal(sha(srv.assembled([...srv.sessions.keys()][0] ?? '') ?? Buffer.alloc(0)), sha(content));
      monotonicToSize(seen, content.length);
    });
  });

  it('interrupted after some parts: the session stays on disk; resume sends only the missing parts, then completes', async () => {
    await withServer({ parallel: 2 }, async (srv, stateDir) => {
      const stop = new AbortController();
      let okParts = 0;
      const c = client(srv, stateDir, {
        parallel: 2,
        fetch: async (input, init) => {
          const res = await fetch(input, init);
          if (init?.method === 'PUT' && res.ok && (okParts += 1) === 4) stop.abort();
          return res;
        },
      });
      const error = await c.upload({ file, ...meta }, { signal: stop.signal }).catch((e: unknown) => e);
      assert.equal((error as Error).name, 'AbortError');
      assert.equal((await readdir(stateDir)).length, 1, 'the session is kept');
      const [session] = [...srv.sessions.values()];
      assert.ok(session !== undefined && session.state === 'pending');
      const had = new Set(session.parts.keys());
      assert.ok(had.size >= 4 && had.size < 11, `${had.size} parts received`);

      const putsBefore = srv.puts.length;
      const events: ResumableEvent[] = [];
      const seen: Progress[] = [];
      const answer = await client(srv, stateDir, { parallel: 2 }).upload({ file, ...meta }, {
        resume: true, onResumable: (e) => events.push(e), onProgress: (p) => seen.push(p),
      });
      const resent = srv.puts.slice(putsBefore).map((p) => p.part);
      assert.deepEqual(resent.sort((a, b) => a - b), [...Array(11).keys()].map((i) => i + 1).filter((n) => !had.has(n)));
      assert.equal(answer.file_id, session.fileId);
      assert.equal(srv.sessions.size, 1, 'no new session');
      assert.equal(sha(srv.assembled(session.id) ?? Buffer.alloc(0)), sha(content));
      assert.equal(events[0]?.kind, 'resumed');
      assert.equal(events[0]?.kind === 'resumed' ? events[0].receivedParts : -1, had.size);
      assert.equal(seen[0]?.loaded, had.size * PART, 'progress starts at what was already sent');
      monotonicToSize(seen, content.length);
      assert.deepEqual(await readdir(stateDir), []);
    });
  });

  it('resume: an expired session starts again (said), a completed one answers its file, none stored starts anew', async () => {
    await withServer({}, async (srv, stateDir) => {
      const stop = new AbortController();
      const c = client(srv, stateDir, { fetch: async (input, init) => {
        if (init?.method === 'PUT') stop.abort();
        return await fetch(input, init);
      } });
      await c.upload({ file, ...meta }, { signal: stop.signal }).catch(() => undefined);
      const [first] = [...srv.sessions.values()];
      assert.ok(first);
      first.state = 'expired';
      const events: ResumableEvent[] = [];
      const again = await client(srv, stateDir).upload({ file, ...meta }, { resume: true, onResumable: (e) => events.push(e) });
      assert.deepEqual(events.map((e) => e.kind), ['restarted', 'started', 'completed']);
      assert.deepEqual(events[0], { kind: 'restarted', uploadId: first.id, reason: 'expired' });
      assert.equal(srv.sessions.size, 2);
      assert.ok(again.file_id);

      const none: ResumableEvent[] = [];
      await client(srv, stateDir).upload({ file, ...meta }, { resume: true, onResumable: (e) => none.push(e) });
      assert.deepEqual(none[0], { kind: 'restarted', uploadId: undefined, reason: 'none stored' });
    });
  });

  it('without resume, a stored session of the same file is aborted (its quota released) before a new one', async () => {
    await withServer({}, async (srv, stateDir) => {
      const stop = new AbortController();
      const c = client(srv, stateDir, { fetch: async (input, init) => {
        if (init?.method === 'PUT') stop.abort();
        return await fetch(input, init);
      } });
      await c.upload({ file, ...meta }, { signal: stop.signal }).catch(() => undefined);
      const [first] = [...srv.sessions.values()];
      const events: ResumableEvent[] = [];
      await client(srv, stateDir).upload({ file, ...meta }, { onResumable: (e) => events.push(e) });
      assert.equal(first?.state, 'aborted');
      assert.deepEqual(events[0], { kind: 'discarded', uploadId: first?.id });
    });
  });

  it('a part refused for good (409) fails the upload with the server message and forgets the session', async () => {
    await withServer({}, async (srv, stateDir) => {
      const c = client(srv, stateDir, { fetch: async (input, init) => {
        if (init?.method === 'PUT') for (const s of srv.sessions.values()) s.state = 'aborted';
        return await fetch(input, init);
      } });
      const error = await c.upload({ file, ...meta }).catch((e: unknown) => e);
      assert.equal((error as Error).message, 'Upload was aborted');
      assert.deepEqual(await readdir(stateDir), []);
    });
  });

  it('the low-level calls: createUpload, getUpload, resumeUpload from bytes, completeUpload again, abortUpload', async () => {
    await withServer({}, async (srv, stateDir) => {
      const c = client(srv, stateDir);
      const created = await c.createUpload({ file_name: 'x.bin', size: content.length, title: 't', description: 'd', tags: 'a', cc_license: 'CC0', category_id: '1' });
      assert.equal(created.part_count, 11);
      assert.equal((await c.getUpload(created.upload_id)).upload.state, 'pending');
      const done = await c.resumeUpload(created.upload_id, content);
      assert.deepEqual(await c.completeUpload(created.upload_id), done);
      const other = await c.createUpload({ file_name: 'y.bin', size: 5, title: 't', description: 'd', tags: 'a', cc_license: 'CC0', category_id: '1' });
      assert.equal((await c.abortUpload(other.upload_id)).message, 'Upload aborted');
      assert.equal((await c.getUpload(other.upload_id)).upload.state, 'aborted');
    });
  });

  it('the default session directory follows XDG_STATE_HOME, else ~/.local/state', () => {
    assert.equal(defaultUploadStateDir({ XDG_STATE_HOME: '/s', HOME: '/h' }), '/s/docshare/uploads');
    assert.equal(defaultUploadStateDir({ XDG_STATE_HOME: 'relative', HOME: '/h' }), '/h/.local/state/docshare/uploads');
  });
});
