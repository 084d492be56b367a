// HTTP caching (docs/http-caching-cors.md): validators and conditional requests on a file's bytes
// (signed content link) and on its view page; JSON answers are never stored.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import type { Api, RegisteredUser, Res } from '../support/client.ts';
import { expectSuccess } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';
import { localOnly } from '../support/server.ts';
import { eventually } from '../support/wait.ts';

let owner: RegisteredUser;
const fx = useServer({}, async () => {
  owner = await fx.c.register();
});

const TYPE = 'application/x-docshare-test';
const STRONG = /^"[^"]+"$/;
const WEAK = /^W\/"[^"]+"$/;

/** A fresh signed link to a file's bytes. */
async function linkTo(c: Api, fileId: string): Promise<string> {
  return expectSuccess(await c.download(owner.token, fileId), 200).download_url as string;
}

async function uploadBytes(c: Api, data: Uint8Array): Promise<{ fileId: string; url: string }> {
  const { fileId } = await c.uploadOk(owner.token, {}, data, 'data.bin', TYPE);
  return { fileId, url: await linkTo(c, fileId) };
}

/**
 * The page once the text extractor has reported (the page shows where extraction stands, so its
 * tag changes then), and how many GETs (views) that took.
 */
async function settledPage(c: Api, fileId: string): Promise<{ page: Res; gets: number }> {
  let gets = 0;
  const page = await eventually(async () => {
    gets++;
    const got = await c.view(fileId);
    assert.equal(got.status, 200);
    assert.doesNotMatch(got.text, /Status: <strong>pending<\/strong>/);
    return got;
  });
  return { page, gets };
}

async function views(c: Api, token: string): Promise<number> {
  return expectSuccess(await c.stats(token), 200).data.total_views;
}

function assertNotModified(res: { status: number; headers: Headers; bytes?: Buffer; text?: string }, etag: string, lastModified: string, cacheControl: string): void {
  assert.equal(res.status, 304);
  assert.equal(res.bytes?.length ?? res.text?.length, 0, 'a 304 has no body');
  assert.equal(res.headers.get('etag'), etag);
  assert.equal(res.headers.get('last-modified'), lastModified);
  assert.equal(res.headers.get('cache-control'), cacheControl);
}

describe('file content (signed link)', () => {
  it('carries a strong ETag, Last-Modified (the upload) and private, no-cache', async () => {
    const { c } = fx;
    const { url } = await uploadBytes(c, randomBytes(300));
    const got = await c.bytes(url);
    assert.equal(got.status, 200);
    assert.match(got.headers.get('etag') ?? '', STRONG);
    const lastModified = got.headers.get('last-modified') ?? '';
    assert.match(lastModified, /^[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT$/);
    assert.ok(Math.abs(Date.parse(lastModified) - Date.now()) < 24 * 3600_000, 'about now');
    assert.equal(got.headers.get('cache-control'), 'private, no-cache');
    assert.equal(got.headers.get('accept-ranges'), 'bytes');
  });

  it('the ETag is the same for every link to a file and differs between files, even with the same bytes', async () => {
    const { c } = fx;
    const data = randomBytes(100);
    const one = await uploadBytes(c, data);
    const two = await uploadBytes(c, data);
    const first = (await c.bytes(one.url)).headers.get('etag');
    const again = await c.bytes(await linkTo(c, one.fileId));
    assert.equal(again.headers.get('etag'), first);
    assert.notEqual((await c.bytes(two.url)).headers.get('etag'), first);
  });

  it('If-None-Match with the ETag (or its weak form, or *) → 304 with the validators and no body; another tag → 200', async () => {
    const { c } = fx;
    const data = randomBytes(500);
    const { url } = await uploadBytes(c, data);
    const first = await c.bytes(url);
    const etag = first.headers.get('etag') ?? '';
    const lastModified = first.headers.get('last-modified') ?? '';
    for (const ifNoneMatch of [etag, `W/${etag}`, `"nope", ${etag}`, '*']) {
      assertNotModified(await c.bytes(url, { headers: { 'If-None-Match': ifNoneMatch } }), etag, lastModified, 'private, no-cache');
    }
    const other = await c.bytes(url, { headers: { 'If-None-Match': '"nope"' } });
    assert.equal(other.status, 200);
    assert.ok(other.bytes.equals(data));
  });

  it('If-Modified-Since → 304 when not modified since, 200 when modified after; ignored with If-None-Match', async () => {
    const { c } = fx;
    const data = randomBytes(200);
    const { url } = await uploadBytes(c, data);
    const first = await c.bytes(url);
    const etag = first.headers.get('etag') ?? '';
    const lastModified = first.headers.get('last-modified') ?? '';
    assertNotModified(await c.bytes(url, { headers: { 'If-Modified-Since': lastModified } }), etag, lastModified, 'private, no-cache');
    const later = new Date(Date.parse(lastModified) + 3600_000).toUTCString();
    assert.equal((await c.bytes(url, { headers: { 'If-Modified-Since': later } })).status, 304);
    const earlier = new Date(Date.parse(lastModified) - 1000).toUTCString();
    const modified = await c.bytes(url, { headers: { 'If-Modified-Since': earlier } });
    assert.equal(modified.status, 200);
    assert.ok(modified.bytes.equals(data));
    assert.equal((await c.bytes(url, { headers: { 'If-Modified-Since': 'not a date' } })).status, 200);
    assert.equal((await c.bytes(url, { headers: { 'If-None-Match': '"nope"', 'If-Modified-Since': lastModified } })).status, 200, 'If-None-Match decides');
  });

  it('If-Range: a strong ETag or the exact Last-Modified → 206; anything else → 200 with the whole file', async () => {
    const { c } = fx;
    const data = randomBytes(1000);
    const { url } = await uploadBytes(c, data);
    const first = await c.bytes(url);
    const etag = first.headers.get('etag') ?? '';
    const lastModified = first.headers.get('last-modified') ?? '';
    for (const ifRange of [etag, lastModified]) {
      const part = await c.bytes(url, { headers: { Range: 'bytes=100-199', 'If-Range': ifRange } });
      assert.equal(part.status, 206, ifRange);
      assert.equal(part.headers.get('content-range'), 'bytes 100-199/1000');
      assert.ok(part.bytes.equals(data.subarray(100, 200)));
    }
    const earlier = new Date(Date.parse(lastModified) - 1000).toUTCString();
    for (const ifRange of ['"changed"', `W/${etag}`, earlier]) {
      const whole = await c.bytes(url, { headers: { Range: 'bytes=100-199', 'If-Range': ifRange } });
      assert.equal(whole.status, 200, ifRange);
      assert.equal(whole.headers.get('content-range'), null);
      assert.ok(whole.bytes.equals(data), 'the whole file');
    }
  });

  it('HEAD answers like GET without the bytes: 200, 206 with a Range, 304 when not modified', async () => {
    const { c } = fx;
    const { url } = await uploadBytes(c, randomBytes(640));
    const first = await c.bytes(url);
    const etag = first.headers.get('etag') ?? '';
    const head = await c.bytes(url, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.bytes.length, 0);
    assert.equal(head.headers.get('content-length'), '640');
    assert.equal(head.headers.get('etag'), etag);
    assert.equal(head.headers.get('last-modified'), first.headers.get('last-modified'));
    assert.equal(head.headers.get('content-type'), TYPE);
    assert.match(head.headers.get('content-disposition') ?? '', /^attachment/);
    const part = await c.bytes(url, { method: 'HEAD', headers: { Range: 'bytes=-40' } });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get('content-range'), 'bytes 600-639/640');
    assert.equal(part.headers.get('content-length'), '40');
    assert.equal((await c.bytes(url, { method: 'HEAD', headers: { 'If-None-Match': etag } })).status, 304);
  });

  it('a 304 needs a valid link to a file that may be downloaded: a bad signature is 403, a disabled file 403', async () => {
    const { c } = fx;
    const { fileId, url } = await uploadBytes(c, randomBytes(50));
    const etag = (await c.bytes(url)).headers.get('etag') ?? '';
    const tampered = await c.raw('GET', url.replace(/signature=[0-9a-f]{4}/, 'signature=0000'), { headers: { 'If-None-Match': etag } });
    assert.equal(tampered.status, 403);
    expectSuccess(await c.update(owner.token, { id: fileId, enabled: false }), 200);
    const disabled = await c.raw('GET', url, { headers: { 'If-None-Match': etag } });
    assert.equal(disabled.status, 403);
    assert.equal(disabled.headers.get('cache-control'), 'no-store');
  });
});

describe('view page', () => {
  it('carries a weak ETag, Last-Modified and private, no-cache; a 404 page is no-store without validators', async () => {
    const { c } = fx;
    const { fileId } = await c.uploadOk(owner.token, {}, randomBytes(10), 'x.bin', TYPE);
    const { page } = await settledPage(c, fileId);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('etag') ?? '', WEAK);
    assert.match(page.headers.get('last-modified') ?? '', / GMT$/);
    assert.equal(page.headers.get('cache-control'), 'private, no-cache');
    const again = await c.view(fileId);
    assert.equal(again.headers.get('etag'), page.headers.get('etag'), 'the same page, the same tag (whatever its nonce)');
    const missing = await c.view('99999999');
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.get('cache-control'), 'no-store');
    assert.equal(missing.headers.get('etag'), null);
  });

  it('If-None-Match / If-Modified-Since → 304 without body or CSP (the browser keeps its page and its nonce); each still counts a view', async () => {
    const { c } = fx;
    const u = await c.register();
    const { fileId } = await c.uploadOk(u.token, {}, randomBytes(10), 'x.bin', TYPE);
    const { page, gets } = await settledPage(c, fileId);
    const etag = page.headers.get('etag') ?? '';
    const lastModified = page.headers.get('last-modified') ?? '';
    for (const headers of [{ 'If-None-Match': etag }, { 'If-Modified-Since': lastModified }, { 'If-None-Match': `"x", ${etag.slice(2)}` }]) {
      const res = await c.raw('GET', `/docs/${fileId}`, { headers });
      assertNotModified(res, etag, lastModified, 'private, no-cache');
      assert.equal(res.headers.get('content-security-policy'), null, 'the cached page keeps the CSP it came with');
    }
    await eventually(async () => assert.equal(await views(c, u.token), gets + 3));
    const stale = await c.raw('GET', `/docs/${fileId}`, { headers: { 'If-None-Match': '"other"' } });
    assert.equal(stale.status, 200);
    assert.match(stale.headers.get('content-security-policy') ?? '', /'nonce-/);
  });

  it('HEAD with a validator → 304, counting no view', async () => {
    const { c } = fx;
    const u = await c.register();
    const { fileId } = await c.uploadOk(u.token, {}, randomBytes(10), 'x.bin', TYPE);
    const { page, gets } = await settledPage(c, fileId);
    const etag = page.headers.get('etag') ?? '';
    const head = await c.raw('HEAD', `/docs/${fileId}`, { headers: { 'If-None-Match': etag } });
    assert.equal(head.status, 304);
    assert.equal(head.headers.get('etag'), etag);
    assert.equal((await c.view(fileId)).status, 200);
    await eventually(async () => assert.equal(await views(c, u.token), gets + 1));
    assert.equal(await views(c, u.token), gets + 1, 'the GETs only, not the HEAD');
  });

  it('an update changes the ETag (and Last-Modified never goes back): the old tag gets the new page', async () => {
    const { c } = fx;
    const { fileId } = await c.uploadOk(owner.token, { title: 'Before the update' }, randomBytes(10), 'x.bin', TYPE);
    const { page: before } = await settledPage(c, fileId);
    const etag = before.headers.get('etag') ?? '';
    expectSuccess(await c.update(owner.token, { id: fileId, title: 'After the update' }), 200);
    const after = await c.raw('GET', `/docs/${fileId}`, { headers: { 'If-None-Match': etag } });
    assert.equal(after.status, 200);
    assert.ok(after.text.includes('After the update'));
    assert.match(after.headers.get('etag') ?? '', WEAK);
    assert.notEqual(after.headers.get('etag'), etag);
    assert.ok(Date.parse(after.headers.get('last-modified') ?? '') >= Date.parse(before.headers.get('last-modified') ?? ''));
    const unchanged = await c.raw('GET', `/docs/${fileId}`, { headers: { 'If-None-Match': after.headers.get('etag') ?? '' } });
    assert.equal(unchanged.status, 304);
  });
});

describe('JSON answers', () => {
  it('are never stored: Cache-Control: no-store on successes and errors alike', async () => {
    const { c } = fx;
    const { fileId } = await c.uploadOk(owner.token);
    const answers: Array<[string, Res]> = [
      ['register', await c.json('POST', '/api/V1/users/api-register', undefined, { name: 'x', email: `${randomBytes(6).toString('hex')}@example.com`, password: 'long-enough-password' })],
      ['login refused', await c.login('nobody@example.com', 'wrong-password')],
      ['download', await c.download(owner.token, fileId)],
      ['files', await c.files(owner.token)],
      ['stats', await c.stats(owner.token)],
      ['categories', await c.categories(owner.token)],
      ['search', await c.search(owner.token, { search: 'document' })],
      ['missing token', await c.stats(undefined)],
      ['validation', await c.search(owner.token, {})],
      ['unknown route', await c.raw('GET', '/nope')],
      ['wrong method', await c.raw('PUT', '/api/V1/docs/api-delete')],
      ['malformed JSON', await c.json('POST', '/api/V1/stats/api-search', owner.token, undefined, { raw: '{', headers: { 'Content-Type': 'application/json' } })],
      ['bad content link', await c.raw('GET', `/files/${fileId}/content?expires=1&signature=00`)],
      ['health', await c.raw('GET', '/healthz')],
    ];
    for (const [what, res] of answers) {
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/, what);
      assert.equal(res.headers.get('cache-control'), 'no-store', what);
    }
  });
});

describe('validators across a restart', { skip: localOnly }, () => {
  it('the ETag and Last-Modified of a file and of its page stay the same', async () => {
    const { c } = fx;
    const { fileId, url } = await uploadBytes(c, randomBytes(64));
    const content = await c.bytes(url);
    const { page } = await settledPage(c, fileId);
    await fx.server.restart();
    const contentAfter = await c.bytes(await linkTo(c, fileId));
    assert.equal(contentAfter.headers.get('etag'), content.headers.get('etag'));
    assert.equal(contentAfter.headers.get('last-modified'), content.headers.get('last-modified'));
    const pageAfter = await c.raw('GET', `/docs/${fileId}`, { headers: { 'If-None-Match': page.headers.get('etag') ?? '' } });
    assert.equal(pageAfter.status, 304);
    assert.equal(pageAfter.headers.get('last-modified'), page.headers.get('last-modified'));
  });
});
