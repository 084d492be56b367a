// The file page's previews: `disposition=inline` on a signed content link (docs/file-page.md).
// Inline only for the types a browser shows without running anything of the file's; every
// content answer is sandboxed, so an uploaded HTML or SVG never runs script on this origin.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import type { RegisteredUser } from '../support/client.ts';
import { expectError, expectSuccess } from '../support/expect.ts';
import { enc, useServer } from '../support/fixture.ts';

let owner: RegisteredUser;
const fx = useServer({}, async () => {
  owner = await fx.c.register({ name: 'Preview Owner' });
});

/** A signed link to a new upload of `bytes` typed `contentType`. */
async function linkTo(contentType: string, bytes: Uint8Array = randomBytes(64), name = 'file.bin'): Promise<string> {
  const { fileId } = await fx.c.uploadOk(owner.token, {}, bytes, name, contentType);
  return expectSuccess(await fx.c.download(owner.token, fileId), 200).download_url as string;
}

/** GET of a content link; a redirect to the blob store (BLOB_PUBLIC_URL) skips the test: previews stream through us. */
async function get(t: TestContext, url: string, init: RequestInit = {}) {
  const res = await fx.c.bytes(url, init);
  if (res.status === 302) t.skip('content links redirect to the blob store (BLOB_PUBLIC_URL): no inline previews there');
  return res;
}

const disposition = (headers: Headers): string => headers.get('content-disposition') ?? '';

const SAFE: Array<[string, string]> = [
  ['application/pdf', 'paper.pdf'],
  ['image/png', 'figure.png'],
  ['image/jpeg', 'photo.jpg'],
  ['image/gif', 'anim.gif'],
  ['image/webp', 'pic.webp'],
  ['text/plain', 'notes.txt'],
  ['text/plain; charset=utf-8', 'notes-utf8.txt'],
  ['Application/PDF', 'upper.pdf'],
];

const UNSAFE: Array<[string, string]> = [
  ['text/html', 'page.html'],
  ['image/svg+xml', 'drawing.svg'],
  ['application/xhtml+xml', 'page.xhtml'],
  ['text/xml', 'data.xml'],
  ['application/javascript', 'code.js'],
  ['application/octet-stream', 'blob.bin'],
  ['application/x-docshare-test', 'odd.dat'],
];

describe('previews: disposition=inline on content links', () => {
  it('serves the safe types inline when asked, with the same bytes and name', async (t) => {
    for (const [type, name] of SAFE) {
      const bytes = randomBytes(200);
      const url = await linkTo(type, bytes, name);
      const inline = await get(t, `${url}&disposition=inline`);
      assert.equal(inline.status, 200, type);
      assert.ok(inline.bytes.equals(bytes), `${type}: the same bytes`);
      assert.match(disposition(inline.headers), /^inline; filename="/, `${type} is inline`);
      assert.ok(disposition(inline.headers).includes(`filename="${name}"`), `${type} keeps its name`);
      const plain = await get(t, url);
      assert.match(disposition(plain.headers), /^attachment; /, `${type} without the parameter stays an attachment`);
    }
  });

  it('never serves other types inline: HTML, SVG, XML, scripts and unknown types stay attachments', async (t) => {
    for (const [type, name] of UNSAFE) {
      const url = await linkTo(type, enc('<html><script>alert(1)</script></html>'), name);
      const res = await get(t, `${url}&disposition=inline`);
      assert.equal(res.status, 200, type);
      assert.match(disposition(res.headers), /^attachment; /, `${type} must stay an attachment`);
    }
  });

  it('only the value "inline" asks for it', async (t) => {
    const url = await linkTo('application/pdf', randomBytes(50), 'a.pdf');
    for (const value of ['INLINE', 'attachment', '', 'inline,inline']) {
      const res = await get(t, `${url}&disposition=${encodeURIComponent(value)}`);
      assert.match(disposition(res.headers), /^attachment; /, `disposition=${value}`);
    }
    const twice = await get(t, `${url}&disposition=inline&disposition=inline`);
    assert.match(disposition(twice.headers), /^attachment; /, 'a repeated parameter is not "inline"');
  });

  it('every content answer is sandboxed, nosniff, and framable by this origin only', async (t) => {
    for (const [type, suffix] of [['text/html', ''], ['image/svg+xml', '&disposition=inline'], ['application/pdf', '&disposition=inline'], ['image/png', '']]) {
      const url = await linkTo(type!, enc('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>'));
      const res = await get(t, `${url}${suffix}`);
      const csp = res.headers.get('content-security-policy') ?? '';
      assert.match(csp, /(^|;)\s*sandbox\s*(;|$)/, `${type}: CSP sandbox without exceptions, got "${csp}"`);
      assert.match(csp, /default-src 'none'/, type);
      assert.match(csp, /frame-ancestors 'self'/, type);
      assert.doesNotMatch(csp, /allow-scripts|allow-same-origin/, type);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', type);
    }
  });

  it('the parameter is outside the signature: a bad or missing signature is refused all the same', async () => {
    const url = new URL(await linkTo('application/pdf', randomBytes(50), 'b.pdf'));
    url.searchParams.set('signature', '0'.repeat(64));
    url.searchParams.set('disposition', 'inline');
    expectError(await fx.c.raw('GET', url.href), 403, 'Invalid or expired download link');
    url.searchParams.delete('signature');
    expectError(await fx.c.raw('GET', url.href), 403, 'Invalid or expired download link');
  });

  it('ranges work inline (the PDF viewer asks for them)', async (t) => {
    const bytes = randomBytes(5_000);
    const url = await linkTo('application/pdf', bytes, 'ranged.pdf');
    const res = await get(t, `${url}&disposition=inline`, { headers: { Range: 'bytes=100-199' } });
    assert.equal(res.status, 206);
    assert.ok(res.bytes.equals(bytes.subarray(100, 200)));
    assert.match(disposition(res.headers), /^inline; /);
  });
});
