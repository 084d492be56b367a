// The content link and the view page over HTTP with conditional requests (http-caching.ts): a
// 304 or a HEAD reads no byte of the blob; the page's 304 leaves the cached page its CSP.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeFsBlobStore, type BlobStore } from '@docshare/blob-store';
import { openFileClaimStore, type ClaimStore } from '@docshare/claim-store';
import { openFileEventLog, type EventStore } from '@docshare/event-store';
import { makeTokens, makeUrlSigner } from '@docshare/auth';
import { BLOB_HANDOFF_HEADER, BLOB_KEY_HEADER, BLOB_RANGE_HEADER, IDENTITY_HEADER, makeLogger } from '@docshare/http';
import { makeDocsCommands } from '../src/commands/docs-commands.ts';
import { makeDocsCommandApp } from '../src/http/app.ts';

describe('conditional requests on docs-command', () => {
  let dir: string;
  let server: Server;
  let base: string;
  let events: EventStore;
  let claims: ClaimStore;
  let blobGets = 0;
  let userId: number;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'docshare-conditional-'));
    const fsBlobs = await makeFsBlobStore(join(dir, 'blobs'));
    const blobs: BlobStore = {
      ...fsBlobs,
      get: (key, range) => {
        blobGets++;
        return fsBlobs.get(key, range);
      },
    };
    events = await openFileEventLog(join(dir, 'events'));
    claims = await openFileClaimStore(join(dir, 'claims'));
    const logger = makeLogger('conditional-test', 'silent');
    const commands = makeDocsCommands({
      events, claims, blobs, logger,
      tokens: makeTokens('x'.repeat(48), 3600), signer: makeUrlSigner('y'.repeat(48)),
      publicBaseUrl: 'http://docshare.example', downloadUrlTtlSeconds: 900, passwordCost: 1024,
    });
    ({ userId } = await commands.register({ name: 'Ada', email: 'ada@example.com', password: 'correct horse' }, { requestId: 'r' }));
    server = createServer(makeDocsCommandApp({ commands, logger, maxUploadBytes: 64 * 1024, publicBaseUrl: 'http://docshare.example' }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await Promise.all([events.close(), claims.close()]);
    await rm(dir, { recursive: true, force: true });
  });

  const uploadOne = async (bytes: Buffer): Promise<{ fileId: string; url: string }> => {
    const form = new FormData();
    for (const [name, value] of Object.entries({ title: 'T', description: 'D', tags: 'a', cc_license: 'CC BY', new_category_name: 'Cat' })) form.append(name, value);
    form.append('file', new Blob([bytes], { type: 'application/x-test' }), 'a.bin');
    const as = { [IDENTITY_HEADER]: String(userId) };
    const up = await fetch(`${base}/api/V1/docs/api-upload`, { method: 'POST', body: form, headers: as });
    const { file_id: fileId } = await up.json() as { file_id: string };
    const download = await fetch(`${base}/api/V1/docs/api-download?file_id=${fileId}`, { headers: as });
    const { download_url: url } = await download.json() as { download_url: string };
    return { fileId, url: url.replace('http://docshare.example', base) };
  };

  it('content: a 304 and a HEAD open no blob; a GET does', async () => {
    const { url } = await uploadOne(Buffer.from('0123456789'));
    const first = await fetch(url);
    assert.equal(await first.text(), '0123456789');
    const etag = first.headers.get('etag') ?? '';
    const gets = blobGets;
    const fresh = await fetch(url, { headers: { 'If-None-Match': etag } });
    assert.equal(fresh.status, 304);
    assert.equal(fresh.headers.get('content-type'), null);
    assert.equal(fresh.headers.get('content-disposition'), null);
    const head = await fetch(url, { method: 'HEAD', headers: { Range: 'bytes=2-4' } });
    assert.equal(head.status, 206);
    assert.equal(head.headers.get('content-range'), 'bytes 2-4/10');
    assert.equal(head.headers.get('content-length'), '3');
    assert.equal(blobGets, gets, 'neither read the blob');
    const part = await fetch(url, { headers: { Range: 'bytes=2-4', 'If-Range': etag } });
    assert.equal(await part.text(), '234');
    assert.equal(blobGets, gets + 1);
  });

  it('content: an If-Range that does not match sends the whole file; an unsatisfiable Range with it too', async () => {
    const { url } = await uploadOne(Buffer.from('abcdef'));
    for (const range of ['bytes=1-2', 'bytes=100-']) {
      const res = await fetch(url, { headers: { Range: range, 'If-Range': '"old"' } });
      assert.equal(res.status, 200, range);
      assert.equal(await res.text(), 'abcdef');
    }
  });

  it('content handed to the gateway: the link and the range are checked, the blob is named, not opened', async () => {
    const { url } = await uploadOne(Buffer.from('abcdefghij'));
    const handoff = { [BLOB_HANDOFF_HEADER]: '1' };
    const before = blobGets;
    const whole = await fetch(url, { headers: handoff });
    assert.equal(whole.status, 200);
    assert.equal(await whole.text(), '');
    assert.match(whole.headers.get(BLOB_KEY_HEADER) ?? '', /\S/);
    assert.equal(whole.headers.get(BLOB_RANGE_HEADER), null);
    assert.equal(whole.headers.get('content-type'), 'application/x-test');
    assert.match(whole.headers.get('content-disposition') ?? '', /^attachment/);
    assert.equal(whole.headers.get('x-content-type-options'), 'nosniff');
    const part = await fetch(url, { headers: { ...handoff, Range: 'bytes=2-4' } });
    assert.equal(part.headers.get(BLOB_RANGE_HEADER), '2-4');
    assert.equal(part.headers.get(BLOB_KEY_HEADER), whole.headers.get(BLOB_KEY_HEADER));
    assert.equal(blobGets, before, 'no blob opened');
    // What stays here: a bad link, a range past the end, a HEAD (the headers, no key).
    assert.equal((await fetch(url.replace(/signature=[0-9a-f]+/, 'signature=00'), { headers: handoff })).status, 403);
    const unsatisfiable = await fetch(url, { headers: { ...handoff, Range: 'bytes=50-60' } });
    assert.equal(unsatisfiable.status, 416);
    assert.equal(unsatisfiable.headers.get(BLOB_KEY_HEADER), null);
    const head = await fetch(url, { method: 'HEAD', headers: handoff });
    assert.equal(head.headers.get(BLOB_KEY_HEADER), null);
    assert.equal(head.headers.get('content-length'), '10');
    // Without the header: the bytes, as before.
    assert.equal(await (await fetch(url)).text(), 'abcdefghij');
    assert.equal(blobGets, before + 1);
  });

  it('page: a fresh nonce on every 200 under one tag; a 304 without CSP, counted as a view', async () => {
    const { fileId } = await uploadOne(Buffer.from('page'));
    const nonceOf = (res: Response): string => /'nonce-([^']+)'/.exec(res.headers.get('content-security-policy') ?? '')?.[1] ?? '';
    const one = await fetch(`${base}/docs/${fileId}`);
    const two = await fetch(`${base}/docs/${fileId}`);
    assert.ok((await one.text()).includes(`nonce="${nonceOf(one)}"`));
    assert.ok((await two.text()).includes(`nonce="${nonceOf(two)}"`));
    assert.notEqual(nonceOf(one), nonceOf(two));
    assert.equal(one.headers.get('etag'), two.headers.get('etag'));
    const viewsBefore = (await events.readAll(0, 10_000)).filter(({ event }) => event.type === 'docs.file.viewed.v2' && event.subject === `file-${fileId}`).length;
    const fresh = await fetch(`${base}/docs/${fileId}`, { headers: { 'If-None-Match': one.headers.get('etag') ?? '' } });
    assert.equal(fresh.status, 304);
    assert.equal(await fresh.text(), '');
    assert.equal(fresh.headers.get('content-security-policy'), null);
    assert.equal(fresh.headers.get('cache-control'), 'private, no-cache');
    const viewsAfter = (await events.readAll(0, 10_000)).filter(({ event }) => event.type === 'docs.file.viewed.v2' && event.subject === `file-${fileId}`).length;
    assert.equal(viewsAfter, viewsBefore + 1);
  });
});
