// The upload and content routes of docs-command over HTTP, on the embedded adapters: the file part
// streams into the blob store while the form is read (no spool file), and every refusal after the
// bytes were stored removes them; a signed content link redirects to the blob store when it offers
// presigned URLs (BLOB_PUBLIC_URL), and streams otherwise.
import { makeMemoryStorageLedger } from '@docshare/storage-ledger';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeFsBlobStore, type BlobStore, type PresignOptions } from '@docshare/blob-store';
import { openFileClaimStore } from '@docshare/claim-store';
import { openFileEventLog } from '@docshare/event-store';
import { makeTokens, makeUrlSigner } from '@docshare/auth';
import { IDENTITY_HEADER, makeLogger } from '@docshare/http';
import { makeDocsCommands } from '../src/commands/docs-commands.ts';
import { makeDocsCommandApp } from '../src/http/app.ts';

const dirs: string[] = [];
const servers: Server[] = [];
after(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});
const tempDir = async (): Promise<string> => {
  const dir = await mkdtemp(join(tmpdir(), 'docshare-transfers-'));
  dirs.push(dir);
  return dir;
};

const NOW = new Date('2026-11-20T12:00:00Z');
/** The services' clock; tests move it. */
let now = NOW;
const TTL = 900;

interface Service {
  base: string;
  blobs: BlobStore;
  blobDir: string;
  userId: number;
  presigned: Array<{ key: string; options: PresignOptions }>;
}

/** docs-command on a fresh data dir; `presign`: the blob store offers presigned URLs. */
const service = async ({ presign = false, quotaBytes = 0, usedBytes = 0 } = {}): Promise<Service> => {
  const dir = await tempDir();
  const blobDir = join(dir, 'blobs');
  const fsBlobs = await makeFsBlobStore(blobDir);
  const presigned: Service['presigned'] = [];
  const blobs: BlobStore = presign
    ? {
      ...fsBlobs,
      async presignGet(key, options) {
        presigned.push({ key, options });
        return `https://blobs.example.com/bucket/${key}?X-Amz-Expires=${options.expiresInSeconds}`;
      },
    }
    : fsBlobs;
  const logger = makeLogger('transfers-test', 'silent');
  // The ledger as if the user stored `usedBytes` already (user 1: the one registered below).
  const ledger = makeMemoryStorageLedger({ resolve: async () => 'not_recorded' });
  await ledger.seed(async () => new Map([[1, usedBytes]]));
  const commands = makeDocsCommands({
    events: await openFileEventLog(join(dir, 'events')),
    claims: await openFileClaimStore(join(dir, 'claims')),
    blobs, logger,
    tokens: makeTokens('x'.repeat(48), 3600),
    signer: makeUrlSigner('y'.repeat(48)),
    publicBaseUrl: 'http://docshare.example',
    downloadUrlTtlSeconds: TTL,
    now: () => now,
    passwordCost: 1024,
    storageQuotaBytes: quotaBytes,
    ledger,
  });
  const { userId } = await commands.register({ name: 'Ada', email: 'ada@example.com', password: 'correct horse' }, { requestId: 'r' });
  const app = makeDocsCommandApp({ commands, logger, maxUploadBytes: 64 * 1024, publicBaseUrl: 'http://docshare.example' });
  const server = createServer(app);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, blobs, blobDir, userId, presigned };
};

const META = { title: 'T', description: 'D', tags: 'a,b', cc_license: 'CC BY', new_category_name: 'Cat' };

/** Multipart parts in the order given; the file part where `file` stands. */
const form = (parts: Array<[string, string] | 'file'>, file: { name: string; type: string; bytes: Buffer }): FormData => {
  const data = new FormData();
  for (const part of parts) {
    if (part === 'file') data.append('file', new Blob([file.bytes], { type: file.type }), file.name);
    else data.append(part[0], part[1]);
  }
  return data;
};

const upload = async (s: Service, body: FormData, userId = s.userId) => {
  const res = await fetch(`${s.base}/api/V1/docs/api-upload`, { method: 'POST', body, headers: { [IDENTITY_HEADER]: String(userId) } });
  return { status: res.status, body: await res.json() as Record<string, string> };
};

const storedKeys = async (s: Service): Promise<string[]> => {
  const keys: string[] = [];
  for await (const { key } of s.blobs.list()) keys.push(key);
  return keys;
};

// (FormData would send quotes in a file name as %22.)
const fileOf = (bytes: Buffer) => ({ name: 'résumé 1.pdf', type: 'application/pdf', bytes });

describe('upload: the file part streams into the blob store', () => {
  let s: Service;
  before(async () => {
    s = await service();
  });

  it('fields before and after the file: stored once under f<fileId>-<uuid>, with its size and type', async () => {
    const bytes = Buffer.from('%PDF-1.7 streamed');
    const res = await upload(s, form([['title', 'T'], ['description', 'D'], 'file', ['tags', 'a,b'], ['cc_license', 'CC BY'], ['new_category_name', 'Cat']], fileOf(bytes)));
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const keys = await storedKeys(s);
    assert.equal(keys.length, 1);
    assert.match(keys[0]!, new RegExp(`^f${res.body.file_id}-[0-9a-f-]{36}$`));
    assert.deepEqual(await s.blobs.stat(keys[0]!), { size: bytes.length, contentType: 'application/pdf' });
    // No spool file, no put left in flight.
    assert.deepEqual(await readdir(join(s.blobDir, 'tmp')), []);
  });

  it('invalid metadata after the file → 400, and the stored blob is removed', async () => {
    const before = await storedKeys(s);
    const res = await upload(s, form(['file', ['title', 'T'], ['description', 'D']], fileOf(Buffer.from('x'.repeat(5000)))));
    assert.deepEqual(res, { status: 400, body: { status: 'error', message: 'Tags are required' } });
    assert.deepEqual(await storedKeys(s), before);
  });

  it('an unknown category → 404, and the stored blob is removed', async () => {
    const before = await storedKeys(s);
    const res = await upload(s, form(['file', ...Object.entries({ ...META, new_category_name: '' }), ['category_id', '999']], fileOf(Buffer.from('abc'))));
    assert.deepEqual(res, { status: 404, body: { status: 'error', message: 'Category not found' } });
    assert.deepEqual(await storedKeys(s), before);
  });

  it('a user that does not exist → 401, and the stored blob is removed', async () => {
    const before = await storedKeys(s);
    const res = await upload(s, form(['file', ...Object.entries(META)], fileOf(Buffer.from('abc'))), 4242);
    assert.equal(res.status, 401);
    assert.deepEqual(await storedKeys(s), before);
  });

  it('a file over MAX_UPLOAD_BYTES → 413 "File too large", nothing stored', async () => {
    const before = await storedKeys(s);
    const res = await upload(s, form([...Object.entries(META), 'file'], fileOf(Buffer.alloc(64 * 1024 + 1, 1))));
    assert.deepEqual(res, { status: 413, body: { status: 'error', message: 'File too large' } });
    assert.deepEqual(await storedKeys(s), before);
    assert.deepEqual(await readdir(join(s.blobDir, 'tmp')), []);
  });

  it('a file of exactly MAX_UPLOAD_BYTES is stored', async () => {
    const res = await upload(s, form([...Object.entries(META), 'file'], fileOf(Buffer.alloc(64 * 1024, 1))));
    assert.equal(res.status, 201);
  });
});

describe('upload: the storage quota', () => {
  it('a file over the free space → 413 "Storage quota exceeded", nothing stored', async () => {
    const s = await service({ quotaBytes: 10_000, usedBytes: 9_000 });
    const res = await upload(s, form([...Object.entries(META), 'file'], fileOf(Buffer.alloc(1_001, 1))));
    assert.deepEqual(res, { status: 413, body: { status: 'error', message: 'Storage quota exceeded' } });
    assert.deepEqual(await storedKeys(s), []);
    const ok = await upload(s, form([...Object.entries(META), 'file'], fileOf(Buffer.alloc(1_000, 1))));
    assert.equal(ok.status, 201);
  });
});

describe('content links', () => {
  const uploadOne = async (s: Service, bytes: Buffer): Promise<string> => {
    const res = await upload(s, form([...Object.entries(META), 'file'], fileOf(bytes)));
    assert.equal(res.status, 201);
    const download = await fetch(`${s.base}/api/V1/docs/api-download?file_id=${res.body.file_id}`, { headers: { [IDENTITY_HEADER]: String(s.userId) } });
    const { download_url: url } = await download.json() as { download_url: string };
    // Signed for the public base URL; asked here of the service itself.
    return url.replace('http://docshare.example', s.base);
  };

  it('without presigned URLs: streams the bytes, whole and by range', async () => {
    const s = await service();
    const bytes = Buffer.from('0123456789abcdef');
    const url = await uploadOne(s, bytes);
    const whole = await fetch(url, { redirect: 'manual' });
    assert.equal(whole.status, 200);
    assert.equal(whole.headers.get('content-type'), 'application/pdf');
    assert.match(whole.headers.get('content-disposition') ?? '', /^attachment; filename="r_sum_ 1.pdf"/);
    assert.deepEqual(Buffer.from(await whole.arrayBuffer()), bytes);
    const part = await fetch(url, { headers: { Range: 'bytes=10-' } });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get('content-range'), 'bytes 10-15/16');
    assert.equal(await part.text(), 'abcdef');
  });

  it('with presigned URLs: 302 to the store, signed for what remains of the link, under the file name', async () => {
    const s = await service({ presign: true });
    const url = await uploadOne(s, Buffer.from('redirected'));
    // 100 s after the link was signed: 800 s of it remain.
    now = new Date(NOW.getTime() + 100_000);
    const res = await fetch(url, { redirect: 'manual', headers: { Range: 'bytes=0-3' } }).finally(() => { now = NOW; });
    await res.arrayBuffer();
    assert.equal(res.status, 302);
    assert.equal(res.headers.get('cache-control'), 'private, no-store');
    assert.equal(s.presigned.length, 1);
    const [{ key, options }] = s.presigned as [Service['presigned'][number]];
    assert.equal(res.headers.get('location'), `https://blobs.example.com/bucket/${key}?X-Amz-Expires=${TTL - 100}`);
    assert.match(key, /^f\d+-/);
    assert.deepEqual(options, {
      expiresInSeconds: TTL - 100,
      contentDisposition: `attachment; filename="r_sum_ 1.pdf"; filename*=UTF-8''${encodeURIComponent('résumé 1.pdf')}`,
      contentType: 'application/pdf',
      cacheControl: 'private, no-store',
    });
  });

  it('with presigned URLs, a bad link is still refused first (403), and nothing is signed', async () => {
    const s = await service({ presign: true });
    const url = await uploadOne(s, Buffer.from('x'));
    const res = await fetch(url.replace(/signature=[0-9a-f]+/, 'signature=00'), { redirect: 'manual' });
    assert.equal(res.status, 403);
    assert.equal((await res.json() as { message: string }).message, 'Invalid or expired download link');
    assert.equal(s.presigned.length, 0);
  });
});
