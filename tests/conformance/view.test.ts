// GET /docs/<file_id>: the public view page (decisions §12).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { LICENSES } from '@docshare/contracts';
import { api, type RegisteredUser } from '../support/client.ts';
import { expectSuccess } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';
import { TEST_JWT_SECRET } from '../support/jwt.ts';
import { localOnly, startServer } from '../support/server.ts';
import { eventually } from '../support/wait.ts';

let owner: RegisteredUser;
const fx = useServer({}, async () => {
  owner = await fx.c.register({ name: 'Page Owner' });
});

async function views(token: string): Promise<number> {
  return expectSuccess(await fx.c.stats(token), 200).data.total_views;
}

describe('view page', () => {
  it('is public HTML with title, description, category, tags, license, video link, uploader and a download control', async () => {
    const { c } = fx;
    const { fileId } = await c.uploadOk(owner.token, {
      title: 'Lecture notes on optics',
      description: 'Notes from the spring course',
      tags: 'light,lenses',
      cc_license: 'cc by-sa',
      new_category_name: 'Optics',
      video: 'https://videos.example.com/optics-1',
    });
    const page = await c.view(fileId);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/i);
    for (const expected of ['Lecture notes on optics', 'Notes from the spring course', 'Optics', 'light', 'lenses', 'CC BY-SA', 'https://videos.example.com/optics-1', 'Page Owner']) {
      assert.ok(page.text.includes(expected), `view page must show "${expected}"`);
    }
    assert.match(page.text, /download/i, 'view page must offer a download');
    assert.match(page.text, /<html/i);
  });

  it('escapes user input', async () => {
    const { c } = fx;
    const evil = await c.register({ name: '<img src=x onerror=alert(3)>' });
    const { fileId } = await c.uploadOk(evil.token, {
      title: '<script>alert("title")</script>',
      description: 'desc <img src=x onerror=alert(1)> & "quotes"',
      tags: '<b>tag</b>',
      new_category_name: '<i>cat</i>',
      video: 'https://example.com/v?a="><script>alert(2)</script>',
    });
    const page = await c.view(fileId);
    assert.equal(page.status, 200);
    assert.ok(!page.text.includes('<script>alert("title")</script>'), 'title must be escaped');
    assert.ok(page.text.includes('&lt;script&gt;'), 'the escaped title must be shown');
    assert.ok(!page.text.includes('<img src=x onerror=alert(1)>'), 'description must be escaped');
    assert.ok(!page.text.includes('<img src=x onerror=alert(3)>'), 'uploader name must be escaped');
    assert.ok(!page.text.includes('<b>tag</b>'), 'tags must be escaped');
    assert.ok(!page.text.includes('<i>cat</i>'), 'category must be escaped');
    assert.ok(!page.text.includes('"><script>alert(2)'), 'video URL must be escaped');
    assert.ok(!/<script>alert/i.test(page.text), 'no injected script');
  });

  it('each request counts one view for the owner', async () => {
    const { c } = fx;
    const u = await c.register();
    const { fileId } = await c.uploadOk(u.token);
    assert.equal(await views(u.token), 0);
    assert.equal((await c.view(fileId)).status, 200);
    await eventually(async () => assert.equal(await views(u.token), 1));
    assert.equal((await c.view(fileId)).status, 200);
    assert.equal((await c.raw('GET', `/docs/${fileId}`, { headers: { 'X-Authorization': `Bearer ${u.token}` } })).status, 200);
    await eventually(async () => assert.equal(await views(u.token), 3));
  });

  it('HEAD answers like GET but counts no view', async () => {
    const { c } = fx;
    const u = await c.register();
    const { fileId } = await c.uploadOk(u.token);
    const head = await c.raw('HEAD', `/docs/${fileId}`);
    assert.equal(head.status, 200);
    assert.match(head.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal((await c.raw('HEAD', '/docs/99999999')).status, 404);
    assert.equal((await c.view(fileId)).status, 200);
    await eventually(async () => assert.equal(await views(u.token), 1));
    assert.equal(await views(u.token), 1, 'the HEAD was not counted');
  });

  it('404 for unknown, malformed, deleted and disabled files, counting no view', async () => {
    const { c } = fx;
    const u = await c.register();
    for (const id of ['99999999', 'abc', '0']) assert.equal((await c.view(id)).status, 404, `/docs/${id}`);
    const { fileId: gone } = await c.uploadOk(u.token);
    expectSuccess(await c.del(u.token, gone), 200);
    await eventually(async () => assert.equal((await c.view(gone)).status, 404));
    const { fileId: off } = await c.uploadOk(u.token);
    expectSuccess(await c.update(u.token, { id: off, enabled: false }), 200);
    await eventually(async () => assert.equal((await c.view(off)).status, 404));
    const { fileId: marker } = await c.uploadOk(u.token);
    assert.equal((await c.view(marker)).status, 200);
    await eventually(async () => assert.equal(await views(u.token), 1));
  });

  it('a file for sale still has a page', async () => {
    const { c } = fx;
    const { fileId } = await c.uploadOk(owner.token, { title: 'Priced' });
    expectSuccess(await c.update(owner.token, { id: fileId, for_sale: true, price: 5 }), 200);
    const page = await c.view(fileId);
    assert.equal(page.status, 200);
    assert.ok(page.text.includes('Priced'));
  });
});

// The page works for people (docs/file-page.md): sign-in on the page, same-origin requests,
// visible errors, a readable size, the licence's deed, previews of the types a browser shows.
// tests/browser/file-page.browser.ts drives it in Chromium; these check what the HTML promises.
const DEEDS: Record<string, string> = {
  'CC BY': 'https://creativecommons.org/licenses/by/4.0/',
  'CC BY-SA': 'https://creativecommons.org/licenses/by-sa/4.0/',
  'CC BY-ND': 'https://creativecommons.org/licenses/by-nd/4.0/',
  'CC BY-NC': 'https://creativecommons.org/licenses/by-nc/4.0/',
  'CC BY-NC-SA': 'https://creativecommons.org/licenses/by-nc-sa/4.0/',
  'CC BY-NC-ND': 'https://creativecommons.org/licenses/by-nc-nd/4.0/',
  CC0: 'https://creativecommons.org/publicdomain/zero/1.0/',
};

/** The page's Content-Security-Policy as directive → value. */
const cspOf = (headers: Headers): Map<string, string> => new Map((headers.get('content-security-policy') ?? '').split(';')
  .map((d) => d.trim()).filter((d) => d !== '').map((d) => {
    const [name = '', ...values] = d.split(/\s+/);
    return [name.toLowerCase(), values.join(' ')];
  }));

describe('view page for people', () => {
  it('links every licence to its Creative Commons deed', async () => {
    assert.deepEqual([...LICENSES].sort(), Object.keys(DEEDS).sort(), 'every licence has a deed here');
    for (const license of LICENSES) {
      const { fileId } = await fx.c.uploadOk(owner.token, { cc_license: license, title: `Licensed ${license}` });
      const page = await fx.c.view(fileId);
      assert.equal(page.status, 200);
      const link = /<a id="license" href="([^"]*)" rel="license[^"]*">([^<]*)<\/a>/.exec(page.text);
      assert.ok(link, `${license}: a licence link`);
      assert.equal(link[1], DEEDS[license], `${license} links to its deed`);
      assert.equal(link[2], license, 'the link reads the licence');
    }
  });

  it('shows the size readably, with the exact count, and the file type', async () => {
    const { fileId } = await fx.c.uploadOk(owner.token, {}, randomBytes(1_432_118), 'big.pdf', 'application/pdf');
    const page = await fx.c.view(fileId);
    assert.match(page.text, /<dd id="file-size">1\.4 MB \(1,432,118 bytes\)<\/dd>/);
    assert.match(page.text, /<dd id="file-type">application\/pdf<\/dd>/);
    const { fileId: small } = await fx.c.uploadOk(owner.token, {}, randomBytes(512), 'small.bin', 'application/octet-stream');
    assert.match((await fx.c.view(small)).text, /<dd id="file-size">512 bytes<\/dd>/);
  });

  it('signs in on the page: an email and password form, no token field, relative API paths only', async () => {
    const { fileId } = await fx.c.uploadOk(owner.token);
    const { text } = await fx.c.view(fileId);
    assert.match(text, /<form id="signin" method="post"/);
    assert.match(text, /<input type="email" name="email" autocomplete="username" required>/);
    assert.match(text, /<input type="password" name="password" autocomplete="current-password" required>/);
    assert.doesNotMatch(text, /name="token"/, 'no pasted token');
    assert.doesNotMatch(text, /<form[^>]*method="get"/i, 'no form sends its fields in a URL');
    assert.match(text, /'api\/V1\/users\/api-login'/, 'the script signs in at a relative path');
    assert.match(text, /'api\/V1\/docs\/api-download\?file_id='/, 'and asks for downloads at a relative path');
    assert.doesNotMatch(text, /https?:\/\/[^"' ]*\/api\/V1/, 'no absolute API URL');
    assert.match(text, /sessionStorage/, 'the token is kept for the tab only');
    assert.doesNotMatch(text, /document\.cookie|localStorage/, 'never in a cookie or localStorage');
    assert.match(text, /<p id="page-alert" role="alert" hidden><\/p>/, 'errors have a visible place');
    assert.match(text, /<p id="page-status" role="status"/);
    assert.match(text, /<button type="button" id="signout-button">Sign out<\/button>/);
  });

  it('allows only its own nonce\'d script: no inline handlers, default-src none, previews from this origin only', async () => {
    const { fileId } = await fx.c.uploadOk(owner.token, {}, randomBytes(100), 'doc.pdf', 'application/pdf');
    const page = await fx.c.view(fileId);
    const csp = cspOf(page.headers);
    assert.equal(csp.get('default-src'), "'none'");
    const nonce = /^'nonce-([A-Za-z0-9+/=]+)'$/.exec(csp.get('script-src') ?? '');
    assert.ok(nonce, `script-src is one nonce: ${csp.get('script-src')}`);
    const scripts = [...page.text.matchAll(/<script\b([^>]*)>/g)];
    assert.equal(scripts.length, 1, 'one script');
    assert.equal(scripts[0]?.[1], ` nonce="${nonce[1]}"`, 'the script carries the nonce');
    assert.doesNotMatch(page.text, /\son[a-z]+\s*=/i, 'no inline event handler');
    assert.doesNotMatch(page.text, /(href|src|action)\s*=\s*["']?\s*javascript:/i, 'no javascript: URL');
    assert.equal(csp.get('connect-src'), "'self'");
    assert.equal(csp.get('img-src'), "'self' data:", 'previews, and the empty icon');
    assert.equal(csp.get('frame-src'), "'self'");
    assert.equal(csp.get('frame-ancestors'), "'none'");
    assert.equal(csp.get('base-uri'), "'none'");
    for (const absent of ['object-src', 'media-src', 'script-src-attr']) assert.equal(csp.get(absent), undefined, `${absent} stays 'none' (default-src)`);
    const second = cspOf((await fx.c.view(fileId)).headers).get('script-src');
    assert.notEqual(second, csp.get('script-src'), 'a new nonce for each page');
  });

  it('offers a preview only for the types a browser shows safely', async () => {
    const cases: Array<[string, string]> = [
      ['application/pdf', 'pdf'], ['image/png', 'image'], ['image/jpeg', 'image'], ['text/plain; charset=utf-8', 'text'],
      ['text/html', ''], ['image/svg+xml', ''], ['application/zip', ''],
    ];
    for (const [type, kind] of cases) {
      const { fileId } = await fx.c.uploadOk(owner.token, {}, randomBytes(40), 'f', type);
      const { text } = await fx.c.view(fileId);
      assert.ok(text.includes(`data-preview="${kind}"`), `${type}: preview "${kind}"`);
      assert.equal(text.includes('id="preview-button"'), kind !== '', `${type}: a preview button or none`);
    }
  });

  it('works under any host name: PUBLIC_BASE_URL only names the canonical page and the link, whose path serves here', { skip: localOnly }, async () => {
    const elsewhere = 'https://docshare.example.invalid';
    const server = await startServer({ JWT_SECRET: TEST_JWT_SECRET, PUBLIC_BASE_URL: elsewhere });
    try {
      const c = api(server);
      const u = await c.register();
      const bytes = randomBytes(300);
      const { fileId } = await c.uploadOk(u.token, {}, bytes, 'x.pdf', 'application/pdf');
      const { text } = await c.view(fileId);
      assert.equal(text.split(elsewhere).length - 1, 1, 'the public address appears once');
      assert.ok(text.includes(`<link rel="canonical" href="${elsewhere}/docs/${fileId}">`));
      // What the page's script does: the link's path and query, on the origin the page came from.
      const link = new URL(expectSuccess(await c.download(u.token, fileId), 200).download_url);
      assert.equal(link.origin, elsewhere);
      const got = await c.bytes(`${server.baseUrl}${link.pathname}${link.search}&disposition=inline`);
      assert.equal(got.status, 200);
      assert.ok(got.bytes.equals(bytes));
      assert.match(got.headers.get('content-disposition') ?? '', /^inline; /);
    } finally {
      await server.dispose();
    }
  });
});
