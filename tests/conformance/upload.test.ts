// POST /api/V1/docs/api-upload (spec §4.1, decisions §4, docs/api-decisions.md).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { api, DEFAULT_UPLOAD, randomWord, unique, type Api, type Fields } from '../support/client.ts';
import { assertIdString, assertInt, assertKeys, expectError, expectSuccess } from '../support/expect.ts';
import { enc, useServer } from '../support/fixture.ts';
import { localOnly, startServer, type Server } from '../support/server.ts';
import { eventually } from '../support/wait.ts';

let token = '';
const fx = useServer({}, async () => {
  token = (await fx.c.register()).token;
});

function fields(over: Fields = {}): Fields {
  return { ...DEFAULT_UPLOAD, ...over };
}

describe('upload success', () => {
  it('returns 201 "File uploaded successfully" with string file_id, category_id and category_name', async () => {
    const cat = `Cat ${unique('c')}`;
    const res = await fx.c.upload(token, fields({ new_category_name: cat }), enc('content'), 'report.txt', 'text/plain');
    const body = expectSuccess(res, 201);
    assertKeys(body, ['status', 'message', 'file_id', 'category_id', 'category_name'], 'upload body');
    assert.equal(body.message, 'File uploaded successfully');
    assertIdString(body.file_id, 'file_id');
    assertIdString(body.category_id, 'category_id');
    assert.equal(body.category_name, cat);
  });

  it('a new file is listed, counted, searchable, enabled and not for sale', async () => {
    const { c } = fx;
    const u = await c.register();
    const word = randomWord(12);
    const { fileId } = await c.uploadOk(u.token, { title: `Fresh ${word}`, description: 'Fresh description' }, enc('fresh bytes'), 'fresh.txt', 'text/plain');
    await eventually(async () => {
      const list = expectSuccess(await c.files(u.token), 200);
      assert.deepEqual(list.files.map((f: { file_id: number }) => f.file_id), [Number(fileId)]);
      assert.equal(list.files[0].title, `Fresh ${word}`);
      assert.equal(list.files[0].description, 'Fresh description');
    });
    await eventually(async () => assert.equal(expectSuccess(await c.stats(u.token), 200).data.total_files, 1));
    await eventually(async () => {
      const s = expectSuccess(await c.search(u.token, { search: word }), 200);
      assert.deepEqual(s.results.map((r: { id: string }) => r.id), [fileId]);
    });
    // Enabled and not for sale: another user can download it.
    const other = await c.register();
    const d = expectSuccess(await c.download(other.token, fileId), 200);
    assert.equal(d.original_file_name, 'fresh.txt');
  });

  it('trims text fields', async () => {
    const { c } = fx;
    const u = await c.register();
    await c.uploadOk(u.token, { title: '   Padded title   ', description: '  Padded description \n' });
    await eventually(async () => {
      const f = expectSuccess(await c.files(u.token), 200).files[0];
      assert.equal(f.title, 'Padded title');
      assert.equal(f.description, 'Padded description');
    });
  });

  it('accepts a zero-byte file', async () => {
    const { c } = fx;
    const { fileId } = await c.uploadOk(token, {}, new Uint8Array(0), 'empty.bin', 'application/octet-stream');
    const d = expectSuccess(await c.download(token, fileId), 200);
    const got = await c.bytes(d.download_url);
    assert.equal(got.status, 200);
    assert.equal(got.bytes.length, 0);
  });

  it('accepts an empty video and an http(s) video URL', async () => {
    expectSuccess(await fx.c.upload(token, fields({ video: '' })), 201);
    expectSuccess(await fx.c.upload(token, fields({ video: undefined })), 201);
    expectSuccess(await fx.c.upload(token, fields({ video: 'https://www.youtube.com/watch?v=dQw4w9WgXcQ' })), 201);
    expectSuccess(await fx.c.upload(token, fields({ video: 'http://example.com/v.mp4' })), 201);
  });

  it('accepts the boundary lengths: title 255, description 5000, tags 1000, category name 100', async () => {
    const res = await fx.c.upload(token, fields({
      title: 't'.repeat(255),
      description: 'd'.repeat(5000),
      tags: 'g'.repeat(1000),
      new_category_name: `${unique('c')}`.padEnd(100, 'c'),
    }));
    expectSuccess(res, 201);
  });
});

describe('licenses', () => {
  const labels = ['CC BY', 'CC BY-SA', 'CC BY-ND', 'CC BY-NC', 'CC BY-NC-SA', 'CC BY-NC-ND', 'CC0'];
  for (const label of labels) {
    it(`accepts "${label}"`, async () => {
      expectSuccess(await fx.c.upload(token, fields({ cc_license: label })), 201);
    });
  }

  it('normalises case and spaces ("cc by-nc-nd" → stored as "CC BY-NC-ND")', async () => {
    const { c } = fx;
    for (const [sent, canonical] of [['cc by-nc-nd', 'CC BY-NC-ND'], ['  Cc   By-Sa  ', 'CC BY-SA'], ['cc0', 'CC0']] as const) {
      const { fileId } = await c.uploadOk(token, { cc_license: sent });
      const page = await eventually(async () => {
        const p = await c.view(fileId);
        assert.equal(p.status, 200);
        return p;
      });
      assert.ok(page.text.includes(canonical), `view page of a file uploaded with "${sent}" must show "${canonical}"`);
    }
  });

  const invalid: Array<[string, string | undefined]> = [['missing', undefined], ['empty', ''], ['MIT', 'MIT'], ['CC BY-XY', 'CC BY-XY'], ['CCBY', 'CCBY'], ['GPL', 'GPL-3.0']];
  for (const [what, value] of invalid) {
    it(`rejects a ${what} license: 400 "Invalid license"`, async () => {
      expectError(await fx.c.upload(token, fields({ cc_license: value })), 400, 'Invalid license');
    });
  }
});

describe('categories on upload', () => {
  it('creates a new category and reuses it when the name comes again in another case', async () => {
    const { c } = fx;
    const name = `Physics ${randomWord(6)}`;
    const first = expectSuccess(await c.upload(token, fields({ new_category_name: name, category_description: 'All about physics', category_tags: 'science, Nature,,science ' })), 201);
    assert.equal(first.category_name, name);
    const second = expectSuccess(await c.upload(token, fields({ new_category_name: name.toUpperCase(), category_description: 'other', category_tags: 'other' })), 201);
    assert.equal(second.category_id, first.category_id);
    assert.equal(second.category_name, name);
    const third = expectSuccess(await c.upload(token, fields({ new_category_name: `  ${name.toLowerCase()}  ` })), 201);
    assert.equal(third.category_id, first.category_id);
    await eventually(async () => {
      const cats = expectSuccess(await c.categories(token), 200).data as Array<{ id: number; name: string; description: string; tags: string }>;
      const mine = cats.filter((x) => x.name.toLowerCase() === name.toLowerCase());
      assert.equal(mine.length, 1, 'exactly one category with that name');
      assert.equal(String(mine[0]?.id), first.category_id);
      assert.equal(mine[0]?.description, 'All about physics');
      assert.equal(mine[0]?.tags, 'science,Nature');
    });
  });

  it('uploads into an existing category by category_id', async () => {
    const { c } = fx;
    const name = `Chemistry ${randomWord(6)}`;
    const created = expectSuccess(await c.upload(token, fields({ new_category_name: name })), 201);
    const res = await c.upload(token, { ...fields({ new_category_name: undefined }), category_id: created.category_id });
    const body = expectSuccess(res, 201);
    assert.equal(body.category_id, created.category_id);
    assert.equal(body.category_name, name);
  });

  it('category_id wins over new_category_name', async () => {
    const { c } = fx;
    const name = `Biology ${randomWord(6)}`;
    const created = expectSuccess(await c.upload(token, fields({ new_category_name: name })), 201);
    const ignored = `Ignored ${randomWord(8)}`;
    const body = expectSuccess(await c.upload(token, fields({ category_id: created.category_id, new_category_name: ignored })), 201);
    assert.equal(body.category_id, created.category_id);
    assert.equal(body.category_name, name);
    const cats = expectSuccess(await c.categories(token), 200).data as Array<{ name: string }>;
    assert.ok(!cats.some((x) => x.name === ignored), 'no category is created from new_category_name when category_id is given');
  });

  it('rejects an unknown category_id: 404 "Category not found"', async () => {
    expectError(await fx.c.upload(token, fields({ new_category_name: undefined, category_id: '99999999' })), 404, 'Category not found');
    expectError(await fx.c.upload(token, fields({ new_category_name: undefined, category_id: 'abc' })), 404, 'Category not found');
  });
});

describe('upload validation', () => {
  const cases: Array<[string, Fields, number, string]> = [
    ['a missing title', { title: undefined }, 400, 'Title is required'],
    ['a blank title', { title: '   ' }, 400, 'Title is required'],
    ['a title over 255 characters', { title: 't'.repeat(256) }, 400, 'Title is too long'],
    ['a missing description', { description: undefined }, 400, 'Description is required'],
    ['a blank description', { description: ' ' }, 400, 'Description is required'],
    ['a description over 5000 characters', { description: 'd'.repeat(5001) }, 400, 'Description is too long'],
    ['missing tags', { tags: undefined }, 400, 'Tags are required'],
    ['blank tags', { tags: '  ' }, 400, 'Tags are required'],
    ['tags over 1000 characters', { tags: 'g'.repeat(1001) }, 400, 'Tags are too long'],
    ['neither category_id nor new_category_name', { new_category_name: undefined }, 400, 'Category ID or new category name is required'],
    ['a blank new_category_name', { new_category_name: '  ' }, 400, 'Category ID or new category name is required'],
    ['a category name over 100 characters', { new_category_name: 'c'.repeat(101) }, 400, 'Category name is too long'],
    ['a video that is not a URL', { video: 'not a url' }, 400, 'Invalid video URL'],
    ['an ftp video URL', { video: 'ftp://example.com/v.mp4' }, 400, 'Invalid video URL'],
    ['a javascript: video URL', { video: 'javascript:alert(1)' }, 400, 'Invalid video URL'],
    ['a relative video URL', { video: '/videos/1' }, 400, 'Invalid video URL'],
    ['a video URL over 2048 characters', { video: `https://example.com/${'v'.repeat(2030)}` }, 400, 'Invalid video URL'],
  ];
  for (const [what, over, status, message] of cases) {
    it(`rejects ${what}: ${status} "${message}"`, async () => {
      expectError(await fx.c.upload(token, fields(over)), status, message);
    });
  }

  it('rejects a request without a file part: 400 "File is required"', async () => {
    expectError(await fx.c.upload(token, fields(), null), 400, 'File is required');
  });

  it('a file part with an empty file name counts as no file: 400 "File is required"', async () => {
    expectError(await fx.c.upload(token, fields(), enc('abc'), ''), 400, 'File is required');
  });

  it('a non-multipart body has no file: 400 "File is required"', async () => {
    expectError(await fx.c.json('POST', '/api/V1/docs/api-upload', token, { ...DEFAULT_UPLOAD }), 400, 'File is required');
  });

  it('checks in the documented order', async () => {
    const { c } = fx;
    const all = fields();
    const order: Array<[string, string]> = [
      ['title', 'Title is required'],
      ['description', 'Description is required'],
      ['tags', 'Tags are required'],
      ['cc_license', 'Invalid license'],
      ['new_category_name', 'Category ID or new category name is required'],
    ];
    expectError(await c.upload(token, {}, null), 400, 'File is required');
    const sent: Fields = {};
    for (const [field, message] of order) {
      expectError(await c.upload(token, sent), 400, message);
      sent[field] = all[field];
    }
    sent['video'] = 'nope';
    expectError(await c.upload(token, sent), 400, 'Invalid video URL');
    sent['video'] = '';
    expectSuccess(await c.upload(token, sent), 201);
  });

  it('a rejected upload changes nothing', async () => {
    const { c } = fx;
    const u = await c.register();
    expectError(await c.upload(u.token, fields({ title: '' })), 400, 'Title is required');
    expectError(await c.upload(u.token, fields(), null), 400, 'File is required');
    const stats = expectSuccess(await c.stats(u.token), 200);
    assert.equal(stats.data.total_files, 0);
    assert.deepEqual(expectSuccess(await c.files(u.token), 200).files, []);
  });
});

describe('MAX_UPLOAD_BYTES', { skip: localOnly }, () => {
  let server: Server | undefined;
  let c: Api;
  const MAX = 1024;
  before(async () => {
    server = await startServer({ MAX_UPLOAD_BYTES: String(MAX) });
    c = api(server);
  });
  after(async () => {
    if (server !== undefined) await server.dispose();
  });

  it('accepts a file of exactly MAX_UPLOAD_BYTES and rejects one byte more: 413 "File too large"', async () => {
    const u = await c.register();
    const ok = new Uint8Array(MAX).fill(7);
    const res = await c.upload(u.token, fields(), ok, 'max.bin', 'application/octet-stream');
    const body = expectSuccess(res, 201);
    expectError(await c.upload(u.token, fields(), new Uint8Array(MAX + 1).fill(7), 'over.bin', 'application/octet-stream'), 413, 'File too large');
    expectError(await c.upload(u.token, fields(), new Uint8Array(MAX * 16).fill(7), 'big.bin', 'application/octet-stream'), 413, 'File too large');
    // Only the accepted file exists.
    await eventually(async () => {
      const list = expectSuccess(await c.files(u.token), 200);
      assert.deepEqual(list.files.map((f: { file_id: number }) => f.file_id), [Number(body.file_id)]);
      assertInt(list.files[0].file_id, 'file_id');
      assert.equal(expectSuccess(await c.stats(u.token), 200).data.total_files, 1);
    });
    const d = expectSuccess(await c.download(u.token, body.file_id), 200);
    const got = await c.bytes(d.download_url);
    assert.deepEqual(new Uint8Array(got.bytes), ok);
  });
});
