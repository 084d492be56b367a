// GET /api/V1/docs/api-download and the signed content URL (spec §4.2, decisions §5).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { api, type Api, type RegisteredUser } from '../support/client.ts';
import { assertKeys, expectError, expectJson, expectSuccess } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';
import { nowSeconds } from '../support/jwt.ts';
import { localOnly, startServer, type Server } from '../support/server.ts';
import { eventually } from '../support/wait.ts';

let owner: RegisteredUser;
let other: RegisteredUser;
const fx = useServer({}, async () => {
  owner = await fx.c.register();
  other = await fx.c.register();
});

const CONTENT_TYPE = 'application/x-docshare-test';

async function statsOf(c: Api, token: string): Promise<Record<string, number>> {
  return expectSuccess(await c.stats(token), 200).data;
}

describe('download', () => {
  it('returns 200 "File ready for download" with original_file_name and an absolute signed download_url', async () => {
    const { c, server } = fx;
    const { fileId } = await c.uploadOk(owner.token, {}, randomBytes(100), 'Quarterly Report.pdf', CONTENT_TYPE);
    const res = await c.download(owner.token, fileId);
    const body = expectSuccess(res, 200);
    assertKeys(body, ['status', 'message', 'original_file_name', 'download_url'], 'download body');
    assert.equal(body.message, 'File ready for download');
    assert.equal(body.original_file_name, 'Quarterly Report.pdf');
    assert.equal(typeof body.download_url, 'string');
    const url = new URL(body.download_url);
    assert.equal(`${url.origin}${url.pathname}`, `${server.baseUrl}/files/${fileId}/content`);
    assert.match(url.searchParams.get('expires') ?? '', /^\d+$/);
    assert.match(url.searchParams.get('signature') ?? '', /^[0-9a-f]+$/i);
  });

  it('download_url expires after DOWNLOAD_URL_TTL_SECONDS (default 900)', { skip: localOnly }, async () => {
    const { c } = fx;
    const { fileId } = await c.uploadOk(owner.token);
    const t0 = nowSeconds();
    const body = expectSuccess(await c.download(owner.token, fileId), 200);
    const t1 = nowSeconds();
    const expires = Number(new URL(body.download_url).searchParams.get('expires'));
    assert.ok(expires >= t0 + 900 - 1 && expires <= t1 + 900 + 1, `expires ${expires} should be about now + 900 (${t0}..${t1})`);
  });

  it('the download_url serves the exact bytes, stored content type, attachment, nosniff, with no token', async () => {
    const { c } = fx;
    const data = randomBytes(70_000);
    const { fileId } = await c.uploadOk(owner.token, {}, data, 'blob.dat', CONTENT_TYPE);
    const body = expectSuccess(await c.download(other.token, fileId), 200);
    const got = await c.bytes(body.download_url);
    assert.equal(got.status, 200);
    assert.ok(got.bytes.equals(data), 'bytes must be identical');
    assert.equal((got.headers.get('content-type') ?? '').split(';')[0]?.trim(), CONTENT_TYPE);
    assert.match(got.headers.get('content-disposition') ?? '', /^attachment\b/i);
    assert.equal(got.headers.get('x-content-type-options'), 'nosniff');
  });

  it('an upload without a content type is served as application/octet-stream', async () => {
    const { c } = fx;
    const form = new FormData();
    for (const [k, v] of Object.entries({ title: 't', description: 'd', tags: 'x', cc_license: 'CC BY', new_category_name: 'Misc' })) form.append(k, v);
    form.append('file', new Blob([new Uint8Array([1, 2, 3])]), 'untyped');
    const up = expectSuccess(await c.json('POST', '/api/V1/docs/api-upload', owner.token, undefined, { raw: form }), 201);
    const body = expectSuccess(await c.download(owner.token, up.file_id), 200);
    const got = await c.bytes(body.download_url);
    assert.equal((got.headers.get('content-type') ?? '').split(';')[0]?.trim(), 'application/octet-stream');
  });

  it('supports Range: 206 with Content-Range and the exact slice; unsatisfiable → 416 "Range not satisfiable"', async () => {
    const { c } = fx;
    const data = randomBytes(1000);
    const { fileId } = await c.uploadOk(owner.token, {}, data, 'range.bin', CONTENT_TYPE);
    const url = expectSuccess(await c.download(owner.token, fileId), 200).download_url as string;
    const part = await c.bytes(url, { headers: { Range: 'bytes=10-109' } });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get('content-range'), 'bytes 10-109/1000');
    assert.ok(part.bytes.equals(data.subarray(10, 110)));
    const tail = await c.bytes(url, { headers: { Range: 'bytes=-5' } });
    assert.equal(tail.status, 206);
    assert.equal(tail.headers.get('content-range'), 'bytes 995-999/1000');
    assert.ok(tail.bytes.equals(data.subarray(995)));
    const open = await c.bytes(url, { headers: { Range: 'bytes=990-' } });
    assert.equal(open.status, 206);
    assert.ok(open.bytes.equals(data.subarray(990)));
    const bad = await c.raw('GET', url, { headers: { Range: 'bytes=5000-6000' } });
    expectError(bad, 416, 'Range not satisfiable');
  });

  it('a tampered, missing or expired signature → 403 "Invalid or expired download link"', async () => {
    const { c } = fx;
    const { fileId } = await c.uploadOk(owner.token);
    const url = new URL(expectSuccess(await c.download(owner.token, fileId), 200).download_url);
    const sig = url.searchParams.get('signature') ?? '';
    const expires = url.searchParams.get('expires') ?? '';
    const variants: string[] = [];
    const flip = (s: string): string => (s[0] === 'a' ? 'b' : 'a') + s.slice(1);
    const u1 = new URL(url);
    u1.searchParams.set('signature', flip(sig));
    variants.push(u1.href);
    const u2 = new URL(url);
    u2.searchParams.set('expires', String(Number(expires) + 1000));
    variants.push(u2.href);
    const u3 = new URL(url);
    u3.searchParams.delete('signature');
    variants.push(u3.href);
    const u4 = new URL(url);
    u4.searchParams.set('expires', String(nowSeconds() - 10));
    variants.push(u4.href);
    // The signature of one file does not open another.
    const { fileId: otherId } = await c.uploadOk(owner.token);
    variants.push(url.href.replace(`/files/${fileId}/`, `/files/${otherId}/`));
    for (const v of variants) {
      expectError(await c.raw('GET', v), 403, 'Invalid or expired download link');
    }
  });

  it('the content URL of a deleted file → 404 "File not found"', async () => {
    const { c } = fx;
    const { fileId } = await c.uploadOk(owner.token);
    const url = expectSuccess(await c.download(owner.token, fileId), 200).download_url as string;
    expectSuccess(await c.del(owner.token, fileId), 200);
    await eventually(async () => expectError(await c.raw('GET', url), 404, 'File not found'));
  });

  it('each successful download counts one download for the owner; the content URL counts nothing', async () => {
    const { c } = fx;
    const u = await c.register();
    const { fileId } = await c.uploadOk(u.token);
    await eventually(async () => assert.equal((await statsOf(c, u.token)).total_files, 1));
    const url = expectSuccess(await c.download(other.token, fileId), 200).download_url as string;
    await eventually(async () => assert.equal((await statsOf(c, u.token)).total_downloads, 1));
    expectSuccess(await c.download(u.token, fileId), 200);
    await eventually(async () => assert.equal((await statsOf(c, u.token)).total_downloads, 2));
    for (let i = 0; i < 3; i += 1) assert.equal((await c.bytes(url)).status, 200);
    // A marker download after the content fetches proves the counter has caught up.
    expectSuccess(await c.download(other.token, fileId), 200);
    await eventually(async () => assert.equal((await statsOf(c, u.token)).total_downloads, 3));
    assert.equal((await statsOf(c, other.token)).total_downloads, 0);
  });

  it('a file set for_sale: true → 403 "File is either for sale or not enabled", for everyone', async () => {
    const { c } = fx;
    const { fileId } = await c.uploadOk(owner.token);
    expectSuccess(await c.update(owner.token, { id: fileId, for_sale: true, price: 9.5 }), 200);
    await eventually(async () => expectError(await c.download(other.token, fileId), 403, 'File is either for sale or not enabled'));
    expectError(await c.download(owner.token, fileId), 403, 'File is either for sale or not enabled');
    expectSuccess(await c.update(owner.token, { id: fileId, for_sale: false }), 200);
    await eventually(async () => expectSuccess(await c.download(other.token, fileId), 200));
  });

  it('a file set enabled: false → the owner gets 403 "File is either for sale or not enabled"', async () => {
    const { c } = fx;
    const { fileId } = await c.uploadOk(owner.token);
    expectSuccess(await c.update(owner.token, { id: fileId, enabled: false }), 200);
    await eventually(async () => expectError(await c.download(owner.token, fileId), 403, 'File is either for sale or not enabled'));
    expectSuccess(await c.update(owner.token, { id: fileId, enabled: true }), 200);
    await eventually(async () => expectSuccess(await c.download(owner.token, fileId), 200));
  });

  it('a disabled file → another user gets "File is either for sale or not enabled" too (spec §7 rule)', async () => {
    // spec §7: "When the file is for sale or disabled, the download message is
    // 'File is either for sale or not enabled'". docs/api-decisions.md (Visibility) answers
    // "File not found" to non-owners instead; the spec wins.
    const { c } = fx;
    const { fileId } = await c.uploadOk(owner.token);
    expectSuccess(await c.update(owner.token, { id: fileId, enabled: false }), 200);
    await eventually(async () => expectError(await c.download(other.token, fileId), 403, 'File is either for sale or not enabled'));
  });

  it('a download_url signed before the file was disabled or put for sale → 403 "File is either for sale or not enabled"; re-enabled → it works again', async () => {
    const { c } = fx;
    const data = randomBytes(2_000);
    const { fileId } = await c.uploadOk(owner.token, {}, data, 'revoked.bin', CONTENT_TYPE);
    const url = expectSuccess(await c.download(other.token, fileId), 200).download_url as string;
    assert.ok((await c.bytes(url)).bytes.equals(data));

    expectSuccess(await c.update(owner.token, { id: fileId, enabled: false }), 200);
    expectError(await c.raw('GET', url), 403, 'File is either for sale or not enabled');
    expectError(await c.raw('GET', url, { headers: { Range: 'bytes=0-9' } }), 403, 'File is either for sale or not enabled');
    expectSuccess(await c.update(owner.token, { id: fileId, enabled: true }), 200);
    const again = await c.bytes(url);
    assert.equal(again.status, 200);
    assert.ok(again.bytes.equals(data), 'the still-valid link serves the bytes once the file is downloadable again');

    expectSuccess(await c.update(owner.token, { id: fileId, for_sale: true, price: 3 }), 200);
    expectError(await c.raw('GET', url), 403, 'File is either for sale or not enabled');
    expectSuccess(await c.update(owner.token, { id: fileId, for_sale: false }), 200);
    assert.equal((await c.bytes(url)).status, 200);
  });

  it('a download refused for sale/disabled counts no download', async () => {
    const { c } = fx;
    const u = await c.register();
    const { fileId } = await c.uploadOk(u.token);
    expectSuccess(await c.update(u.token, { id: fileId, for_sale: true }), 200);
    await eventually(async () => expectError(await c.download(other.token, fileId), 403, 'File is either for sale or not enabled'));
    const { fileId: marker } = await c.uploadOk(u.token);
    expectSuccess(await c.download(other.token, marker), 200);
    await eventually(async () => assert.equal((await statsOf(c, u.token)).total_downloads, 1));
  });

  it('without file_id → 400 "File ID is required"', async () => {
    const { c } = fx;
    expectError(await c.download(owner.token, undefined), 400, 'File ID is required');
    expectError(await c.json('GET', '/api/V1/docs/api-download?file_id=', owner.token), 400, 'File ID is required');
    expectError(await c.json('GET', '/api/V1/docs/api-download?file_id=%20%20', owner.token), 400, 'File ID is required');
  });

  it('an unknown or malformed id → 404 "File not found"', async () => {
    const { c } = fx;
    for (const id of ['99999999', 'abc', '0', '-1', '1.5', '1e3', '99999999999999999999999999']) {
      expectError(await c.download(owner.token, id), 404, 'File not found');
    }
  });

  it('a deleted file → 404 "File not found"', async () => {
    const { c } = fx;
    const { fileId } = await c.uploadOk(owner.token);
    expectSuccess(await c.del(owner.token, fileId), 200);
    await eventually(async () => expectError(await c.download(owner.token, fileId), 404, 'File not found'));
    expectError(await c.download(other.token, fileId), 404, 'File not found');
  });

  it('any other method → 405 "Invalid request method" with an Allow header', async () => {
    const { c } = fx;
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const res = await c.json(method, '/api/V1/docs/api-download?file_id=1', owner.token, method === 'DELETE' ? undefined : { file_id: '1' });
      expectError(res, 405, 'Invalid request method');
      assert.match(res.headers.get('allow') ?? '', /\bGET\b/);
    }
    // Also without any token: the method is checked before authentication.
    expectError(await c.json('POST', '/api/V1/docs/api-download'), 405, 'Invalid request method');
  });

  it('HEAD → 405 too (a GET that counts a download must not run for a link checker), counting nothing', async () => {
    const { c } = fx;
    const u = await c.register();
    const { fileId } = await c.uploadOk(u.token);
    const head = await c.raw('HEAD', `/api/V1/docs/api-download?file_id=${fileId}`, { headers: { 'X-Authorization': `Bearer ${u.token}` } });
    assert.equal(head.status, 405);
    assert.equal(head.headers.get('allow'), 'GET');
    const stats = await c.stats(u.token);
    assert.equal(stats.body.data.total_downloads, 0);
  });
});

describe('DOWNLOAD_URL_TTL_SECONDS', { skip: localOnly }, () => {
  let server: Server | undefined;
  let c: Api;
  before(async () => {
    server = await startServer({ DOWNLOAD_URL_TTL_SECONDS: '2' });
    c = api(server);
  });
  after(async () => {
    if (server !== undefined) await server.dispose();
  });

  it('a download_url stops working once it expires', async () => {
    const u = await c.register();
    const { fileId } = await c.uploadOk(u.token);
    const url = expectSuccess(await c.download(u.token, fileId), 200).download_url as string;
    const expires = Number(new URL(url).searchParams.get('expires'));
    assert.ok(expires <= nowSeconds() + 3, 'expires must follow DOWNLOAD_URL_TTL_SECONDS');
    await eventually(async () => {
      const res = await c.raw('GET', url);
      expectJson(res);
      expectError(res, 403, 'Invalid or expired download link');
    }, { timeoutMs: 20_000, intervalMs: 250 });
  });
});
