// POST api-update, POST api-purchase, GET api-categories (decisions §11, docs/api-decisions.md).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { randomWord, type RegisteredUser } from '../support/client.ts';
import { assertInt, assertKeys, expectError, expectSuccess } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';
import { eventually } from '../support/wait.ts';

let owner: RegisteredUser;
let buyer: RegisteredUser;
const fx = useServer({}, async () => {
  owner = await fx.c.register();
  buyer = await fx.c.register();
});

describe('update', () => {
  it('200 "File updated successfully"; title, description and tags change everywhere', async () => {
    const { c } = fx;
    const word = randomWord(12);
    const { fileId } = await c.uploadOk(owner.token, { title: 'Draft', description: 'draft text', tags: 'a' });
    const res = await c.update(owner.token, { id: fileId, title: `Final ${word}`, description: 'final text', tags: 'x, y ,x' });
    const body = expectSuccess(res, 200);
    assertKeys(body, ['status', 'message'], 'update body');
    assert.equal(body.message, 'File updated successfully');
    await eventually(async () => {
      const s = expectSuccess(await c.search(buyer.token, { search: word }), 200);
      assert.equal(s.results.length, 1);
      assert.equal(s.results[0].title, `Final ${word}`);
      assert.equal(s.results[0].description, 'final text');
      assert.equal(s.results[0].tag, 'x,y');
      const f = (expectSuccess(await c.files(owner.token), 200).files as Array<{ file_id: number; title: string }>).find((x) => x.file_id === Number(fileId));
      assert.equal(f?.title, `Final ${word}`);
    });
  });

  it('accepts the id as a number and updates a single field', async () => {
    const { fileId } = await fx.c.uploadOk(owner.token);
    expectSuccess(await fx.c.update(owner.token, { id: Number(fileId), price: 0 }), 200);
  });

  it('enabled: false hides the file from others (list, search, view page, download); enabled: true restores it', async () => {
    const { c } = fx;
    const word = randomWord(12);
    const { fileId } = await c.uploadOk(owner.token, { title: `Toggle ${word}` });
    await eventually(async () => assert.equal(expectSuccess(await c.search(buyer.token, { search: word }), 200).results.length, 1));
    expectSuccess(await c.update(owner.token, { id: fileId, enabled: false }), 200);
    await eventually(async () => {
      expectError(await c.search(buyer.token, { search: word }), 404, 'No results found');
      const theirs = expectSuccess(await c.files(buyer.token, `user_id=${owner.userId}`), 200).files.map((f: { file_id: number }) => f.file_id);
      assert.ok(!theirs.includes(Number(fileId)));
      assert.equal((await c.view(fileId)).status, 404);
    });
    expectSuccess(await c.update(owner.token, { id: fileId, enabled: true }), 200);
    await eventually(async () => {
      assert.equal(expectSuccess(await c.search(buyer.token, { search: word }), 200).results.length, 1);
      assert.equal((await c.view(fileId)).status, 200);
      expectSuccess(await c.download(buyer.token, fileId), 200);
    });
  });

  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ['only the id', {}, 'Nothing to update'],
    ['only unknown fields', { colour: 'red' }, 'Nothing to update'],
    ['a non-boolean for_sale', { for_sale: 'yes' }, 'for_sale must be a boolean'],
    ['for_sale as the string "true"', { for_sale: 'true' }, 'for_sale must be a boolean'],
    ['a non-boolean enabled', { enabled: 'false' }, 'enabled must be a boolean'],
    ['enabled as 0', { enabled: 0 }, 'enabled must be a boolean'],
    ['a negative price', { price: -1 }, 'price must be a non-negative number'],
    ['a non-numeric price', { price: 'abc' }, 'price must be a non-negative number'],
    ['a blank title', { title: '   ' }, 'Title is required'],
    ['an empty title', { title: '' }, 'Title is required'],
    ['a title over 255 characters', { title: 't'.repeat(256) }, 'Title is too long'],
    ['a blank description', { description: '' }, 'Description is required'],
    ['a description over 5000 characters', { description: 'd'.repeat(5001) }, 'Description is too long'],
    ['blank tags', { tags: ' ' }, 'Tags are required'],
    ['tags over 1000 characters', { tags: 'g'.repeat(1001) }, 'Tags are too long'],
  ];
  for (const [what, extra, message] of invalid) {
    it(`${what} → 400 "${message}"`, async () => {
      const { fileId } = await fx.c.uploadOk(owner.token);
      expectError(await fx.c.update(owner.token, { id: fileId, ...extra }), 400, message);
    });
  }

  it('a missing id → 400 "File ID is required"', async () => {
    expectError(await fx.c.update(owner.token, { title: 'x' }), 400, 'File ID is required');
    expectError(await fx.c.update(owner.token, { id: '', title: 'x' }), 400, 'File ID is required');
  });

  it('an unknown, malformed or deleted file → 404 "File not found"', async () => {
    const { c } = fx;
    for (const id of ['99999999', 'abc', '0']) expectError(await c.update(owner.token, { id, title: 'x' }), 404, 'File not found');
    const { fileId } = await c.uploadOk(owner.token);
    expectSuccess(await c.del(owner.token, fileId), 200);
    await eventually(async () => expectError(await c.update(owner.token, { id: fileId, title: 'x' }), 404, 'File not found'));
  });

  it('someone else\'s file → 403 "You do not own this file" and nothing changes', async () => {
    const { c } = fx;
    const { fileId } = await c.uploadOk(owner.token, { title: 'Owned' });
    expectError(await c.update(buyer.token, { id: fileId, title: 'Stolen', enabled: false }), 403, 'You do not own this file');
    // Another user sees the upload once it is projected (no consistency token carries it to them).
    const f = await eventually(async () => {
      const found = (expectSuccess(await c.files(buyer.token, `user_id=${owner.userId}`), 200).files as Array<{ file_id: number; title: string }>).find((x) => x.file_id === Number(fileId));
      assert.ok(found, 'the owner\'s file in the list');
      return found;
    });
    assert.equal(f.title, 'Owned');
  });

  it('malformed JSON → 400; another method → 405', async () => {
    expectError(await fx.c.json('POST', '/api/V1/docs/api-update', owner.token, undefined, { raw: '{', headers: { 'Content-Type': 'application/json' } }), 400, 'Malformed JSON');
    expectError(await fx.c.json('GET', '/api/V1/docs/api-update', owner.token), 405, 'Invalid request method');
  });
});

describe('purchase', () => {
  it('201 "Purchase recorded" with a sale_id; total_sales of the owner +1; the file is unchanged', async () => {
    const { c } = fx;
    const seller = await c.register();
    const { fileId } = await c.uploadOk(seller.token, { title: 'For sale' });
    expectSuccess(await c.update(seller.token, { id: fileId, for_sale: true, price: 12.5 }), 200);
    const res = await eventually(async () => {
      const r = await c.purchase(buyer.token, { file_id: fileId });
      expectSuccess(r, 201);
      return r;
    });
    const body = res.body;
    assertKeys(body, ['status', 'message', 'sale_id', 'download_url'], 'purchase body');
    assert.equal(body.message, 'Purchase recorded');
    assert.ok((typeof body.sale_id === 'number' && Number.isInteger(body.sale_id)) || (typeof body.sale_id === 'string' && body.sale_id.length > 0), `sale_id: ${JSON.stringify(body.sale_id)}`);
    await eventually(async () => assert.equal(expectSuccess(await c.stats(seller.token), 200).data.total_sales, 1));
    assert.equal(expectSuccess(await c.stats(buyer.token), 200).data.total_sales, 0);
    // A buyer buys a file once: a second purchase answers the first sale (tests/conformance/purchases.test.ts).
    const again = expectSuccess(await c.purchase(buyer.token, { file_id: Number(fileId) }), 200);
    assert.deepEqual([again.message, again.sale_id], ['File already purchased', body.sale_id]);
    assert.equal(expectSuccess(await c.stats(seller.token), 200).data.total_sales, 1);
    // Still for sale: still not downloadable, still listed.
    expectError(await c.download(buyer.token, fileId), 403, 'File is either for sale or not enabled');
    const listed = expectSuccess(await c.files(buyer.token, `user_id=${seller.userId}`), 200).files.map((f: { file_id: number }) => f.file_id);
    assert.deepEqual(listed, [Number(fileId)]);
  });

  it('a file that is not for sale → 409 "File is not for sale"', async () => {
    const { fileId } = await fx.c.uploadOk(owner.token);
    expectError(await fx.c.purchase(buyer.token, { file_id: fileId }), 409, 'File is not for sale');
  });

  it('a missing file_id → 400 "File ID is required"', async () => {
    expectError(await fx.c.purchase(buyer.token, {}), 400, 'File ID is required');
    expectError(await fx.c.purchase(buyer.token, { file_id: '  ' }), 400, 'File ID is required');
  });

  it('an unknown, deleted, or (for others) disabled file → 404 "File not found"', async () => {
    const { c } = fx;
    for (const id of ['99999999', 'abc']) expectError(await c.purchase(buyer.token, { file_id: id }), 404, 'File not found');
    const { fileId: d } = await c.uploadOk(owner.token);
    expectSuccess(await c.update(owner.token, { id: d, for_sale: true }), 200);
    expectSuccess(await c.del(owner.token, d), 200);
    await eventually(async () => expectError(await c.purchase(buyer.token, { file_id: d }), 404, 'File not found'));
    const { fileId: h } = await c.uploadOk(owner.token);
    expectSuccess(await c.update(owner.token, { id: h, for_sale: true, enabled: false }), 200);
    await eventually(async () => expectError(await c.purchase(buyer.token, { file_id: h }), 404, 'File not found'));
  });

  it('another method → 405 "Invalid request method"', async () => {
    expectError(await fx.c.json('GET', '/api/V1/docs/api-purchase', buyer.token), 405, 'Invalid request method');
  });
});

describe('categories', () => {
  it('200 with data: [{id, name, description, tags}] including categories created on upload', async () => {
    const { c } = fx;
    const name = `Astronomy ${randomWord(6)}`;
    const up = expectSuccess(await c.upload(owner.token, { title: 't', description: 'd', tags: 'x', cc_license: 'CC BY', new_category_name: name, category_description: 'Stars', category_tags: 'sky, stars' }), 201);
    const body = await eventually(async () => {
      const b = expectSuccess(await c.categories(buyer.token), 200);
      assert.ok((b.data as Array<{ name: string }>).some((x) => x.name === name));
      return b;
    });
    assertKeys(body, ['status', 'data', 'total', 'page', 'per_page'], 'categories body');
    assert.deepEqual([body.page, body.per_page], [1, 100]);
    assert.equal(body.total, body.data.length, 'a short list comes whole by default');
    assert.ok(Array.isArray(body.data));
    for (const cat of body.data) {
      assertKeys(cat, ['id', 'name', 'description', 'tags'], 'category');
      assertInt(cat.id, 'category id');
      assert.equal(typeof cat.name, 'string');
      assert.equal(typeof cat.description, 'string');
      assert.equal(typeof cat.tags, 'string');
    }
    const mine = (body.data as Array<{ id: number; name: string; description: string; tags: string }>).find((x) => x.name === name);
    assert.deepEqual(mine, { id: Number(up.category_id), name, description: 'Stars', tags: 'sky,stars' });
  });

  it('pages with page / per_page (by id); invalid values → 400 "Invalid page" / "Invalid per_page"', async () => {
    const { c } = fx;
    for (let i = 0; i < 3; i += 1) {
      expectSuccess(await c.upload(owner.token, { title: 't', description: 'd', tags: 'x', cc_license: 'CC BY', new_category_name: `Paged ${randomWord(8)}` }), 201);
    }
    // The owner's reads wait for the owner's writes (consistency token): all three are listed.
    const whole = expectSuccess(await c.categories(owner.token), 200);
    const ids = (whole.data as Array<{ id: number }>).map((x) => x.id);
    assert.ok(ids.length >= 3 && whole.total === ids.length);
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b), 'ordered by id');
    const path = '/api/V1/docs/api-categories';
    const second = expectSuccess(await c.json('GET', `${path}?page=2&per_page=2`, buyer.token), 200);
    assert.deepEqual((second.data as Array<{ id: number }>).map((x) => x.id), ids.slice(2, 4));
    assert.deepEqual([second.total, second.page, second.per_page], [ids.length, 2, 2]);
    const last = expectSuccess(await c.json('GET', `${path}?page=${ids.length}&per_page=1`, buyer.token), 200);
    assert.deepEqual((last.data as Array<{ id: number }>).map((x) => x.id), [ids.at(-1)]);
    const past = expectSuccess(await c.json('GET', `${path}?page=${ids.length + 1}&per_page=1`, buyer.token), 200);
    assert.deepEqual(past.data, []);
    for (const q of ['page=0', 'page=x']) expectError(await c.json('GET', `${path}?${q}`, buyer.token), 400, 'Invalid page');
    for (const q of ['per_page=0', 'per_page=101']) expectError(await c.json('GET', `${path}?${q}`, buyer.token), 400, 'Invalid per_page');
  });

  it('another method → 405 "Invalid request method"', async () => {
    expectError(await fx.c.json('POST', '/api/V1/docs/api-categories', buyer.token, {}), 405, 'Invalid request method');
  });
});
