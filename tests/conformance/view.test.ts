// GET /docs/<file_id>: the public view page (decisions §12).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RegisteredUser } from '../support/client.ts';
import { expectSuccess } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';
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
