// Sales that mean something (issue 17, item 9; docs/api-decisions.md "Purchases"): an owner cannot
// buy their own file; a buyer buys a file once (also two purchases at once); the buyer gets the
// bytes through a signed link (the purchase answer's, api-purchases') while api-download still
// refuses a file for sale; categories emptied by deletions leave the list.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { createClient, downloadContent } from '@docshare/client';
import { api, randomWord, type Api, type RegisteredUser } from '../support/client.ts';
import { assertInt, assertKeys, expectError, expectSuccess } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';
import { localOnly, startServer, type Server } from '../support/server.ts';
import { eventually } from '../support/wait.ts';

let owner: RegisteredUser;
let buyer: RegisteredUser;
let stranger: RegisteredUser;
const fx = useServer({}, async () => {
  owner = await fx.c.register();
  buyer = await fx.c.register();
  stranger = await fx.c.register();
});

const BYTES = 'what the buyer paid for';
const PURCHASES = '/api/V1/users/api-purchases';

/** A file of `seller`'s, for sale at `price`, visible to others (projected). */
const forSale = async (c: Api, seller: RegisteredUser, price = 3, title = `Sold ${randomWord(8)}`): Promise<string> => {
  const { fileId } = await c.uploadOk(seller.token, { title }, new TextEncoder().encode(BYTES), 'paid.txt', 'text/plain');
  expectSuccess(await c.update(seller.token, { id: fileId, for_sale: true, price }), 200);
  return fileId;
};

const purchases = async (c: Api, user: RegisteredUser, query = '') => expectSuccess(await c.json('GET', `${PURCHASES}${query}`, user.token), 200);
const totalSales = async (c: Api, user: RegisteredUser): Promise<number> => expectSuccess(await c.stats(user.token), 200).data.total_sales as number;

describe('who may buy, and how often', () => {
  it('the owner cannot buy their own file: 403 "You cannot purchase your own file", no sale counted', async () => {
    const { c } = fx;
    const seller = await c.register();
    const fileId = await forSale(c, seller);
    expectError(await c.purchase(seller.token, { file_id: fileId }), 403, 'You cannot purchase your own file');
    assert.equal(await totalSales(c, seller), 0);
  });

  it('a buyer buys once: a repeat answers 200 "File already purchased" with the first sale_id; total_sales counts one', async () => {
    const { c } = fx;
    const seller = await c.register();
    const fileId = await forSale(c, seller);
    const first = expectSuccess(await c.purchase(buyer.token, { file_id: fileId }), 201);
    assertKeys(first, ['status', 'message', 'sale_id', 'download_url'], 'purchase body');
    assert.equal(first.message, 'Purchase recorded');
    assertInt(first.sale_id, 'sale_id');
    for (let i = 0; i < 4; i += 1) {
      const again = expectSuccess(await c.purchase(buyer.token, { file_id: Number(fileId) }), 200);
      assertKeys(again, ['status', 'message', 'sale_id', 'download_url'], 'repeat body');
      assert.deepEqual([again.message, again.sale_id], ['File already purchased', first.sale_id]);
    }
    // Still the buyer's once the owner takes it off sale: the first sale, not "File is not for sale".
    expectSuccess(await c.update(seller.token, { id: fileId, for_sale: false }), 200);
    assert.equal(expectSuccess(await c.purchase(buyer.token, { file_id: fileId }), 200).sale_id, first.sale_id);
    assert.equal(await totalSales(c, seller), 1);
    // Another buyer is another sale.
    expectSuccess(await c.update(seller.token, { id: fileId, for_sale: true }), 200);
    assert.notEqual(expectSuccess(await c.purchase(stranger.token, { file_id: fileId }), 201).sale_id, first.sale_id);
    assert.equal(await totalSales(c, seller), 2);
  });

  it('purchases sent at once by one buyer make one sale, and every answer names it', async () => {
    const { c } = fx;
    const seller = await c.register();
    const fileId = await forSale(c, seller);
    const answers = await Promise.all(Array.from({ length: 8 }, () => c.purchase(buyer.token, { file_id: fileId })));
    for (const a of answers) assert.ok(a.status === 201 || a.status === 200, `status ${a.status}: ${a.text}`);
    assert.equal(answers.filter((a) => a.status === 201).length, 1, 'one 201');
    assert.equal(new Set(answers.map((a) => a.body.sale_id)).size, 1, 'one sale_id');
    assert.equal(await totalSales(c, seller), 1);
    assert.equal((await purchases(c, buyer)).data.filter((p: { id: number }) => p.id === Number(fileId)).length, 1);
  });
});

describe('what a buyer gets', () => {
  it('the purchase\'s download_url opens the bytes while api-download still refuses the file for sale, to its buyer too', async () => {
    const { c } = fx;
    const fileId = await forSale(c, owner);
    const { download_url: url } = expectSuccess(await c.purchase(buyer.token, { file_id: fileId }), 201);
    assert.match(url, new RegExp(`/files/${fileId}/content\\?sale=\\d+&expires=\\d+&signature=[0-9a-f]{64}$`));
    const got = await c.bytes(url);
    assert.equal(got.status, 200);
    assert.equal(got.bytes.toString(), BYTES);
    expectError(await c.download(buyer.token, fileId), 403, 'File is either for sale or not enabled');
    expectError(await c.download(owner.token, fileId), 403, 'File is either for sale or not enabled');
    // The owner's price change: still the buyer's.
    expectSuccess(await c.update(owner.token, { id: fileId, price: 99 }), 200);
    assert.equal((await c.bytes(url)).status, 200);
  });

  it('a link altered to another sale, another file or without its sale → 403 "Invalid or expired download link"', async () => {
    const { c } = fx;
    const fileId = await forSale(c, owner);
    const other = await forSale(c, owner);
    const { download_url: url } = expectSuccess(await c.purchase(buyer.token, { file_id: fileId }), 201);
    const u = new URL(url);
    const variants: URL[] = [];
    const otherSale = new URL(u); otherSale.searchParams.set('sale', String(Number(u.searchParams.get('sale')) + 1)); variants.push(otherSale);
    const noSale = new URL(u); noSale.searchParams.delete('sale'); variants.push(noSale);
    const otherFile = new URL(u); otherFile.pathname = `/files/${other}/content`; variants.push(otherFile);
    const badSale = new URL(u); badSale.searchParams.set('sale', 'x'); variants.push(badSale);
    for (const v of variants) expectError(await c.raw('GET', v.toString()), 403, 'Invalid or expired download link');
  });

  it('GET api-purchases lists what the caller bought, newest first, each with a working download_url; nobody else\'s', async () => {
    const { c } = fx;
    const me = await c.register();
    const a = await forSale(c, owner, 1, `First ${randomWord(6)}`);
    const b = await forSale(c, owner, 2, `Second ${randomWord(6)}`);
    const saleA = expectSuccess(await c.purchase(me.token, { file_id: a }), 201).sale_id;
    const saleB = expectSuccess(await c.purchase(me.token, { file_id: b }), 201).sale_id;
    // The buyer's own read waits for the buyer's write (consistency token): listed at once.
    const body = await purchases(c, me);
    assertKeys(body, ['status', 'data', 'total', 'page', 'per_page'], 'purchases body');
    assert.deepEqual([body.total, body.page, body.per_page], [2, 1, 20]);
    assert.deepEqual(body.data.map((p: { id: number; sale_id: number }) => [p.id, p.sale_id]), [[Number(b), saleB], [Number(a), saleA]]);
    for (const p of body.data) {
      assertKeys(p, ['id', 'title', 'sale_id', 'purchased_at', 'download_url'], 'purchase item');
      assert.match(p.purchased_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
      const got = await c.bytes(p.download_url);
      assert.equal(got.status, 200);
      assert.equal(got.bytes.toString(), BYTES);
    }
    const second = await purchases(c, me, '?page=2&per_page=1');
    assert.deepEqual([second.data.map((p: { id: number }) => p.id), second.total, second.page, second.per_page], [[Number(a)], 2, 2, 1]);
    assert.deepEqual((await purchases(c, stranger)).data.filter((p: { id: number }) => [Number(a), Number(b)].includes(p.id)), []);
    for (const q of ['page=0', 'page=x']) expectError(await c.json('GET', `${PURCHASES}?${q}`, me.token), 400, 'Invalid page');
    for (const q of ['per_page=0', 'per_page=101']) expectError(await c.json('GET', `${PURCHASES}?${q}`, me.token), 400, 'Invalid per_page');
    expectError(await c.json('POST', PURCHASES, me.token, {}), 405, 'Invalid request method');
    expectError(await c.json('GET', PURCHASES), 401, 'Missing JWT token');
  });

  it('disabled: out of the list and the link refused until enabled again; deleted: gone for the buyer too', async () => {
    const { c } = fx;
    const me = await c.register();
    const fileId = await forSale(c, owner);
    const { download_url: url } = expectSuccess(await c.purchase(me.token, { file_id: fileId }), 201);
    expectSuccess(await c.update(owner.token, { id: fileId, enabled: false }), 200);
    expectError(await c.raw('GET', url), 403, 'File is either for sale or not enabled');
    await eventually(async () => assert.deepEqual((await purchases(c, me)).data, []));
    expectSuccess(await c.update(owner.token, { id: fileId, enabled: true }), 200);
    assert.equal((await c.bytes(url)).status, 200);
    await eventually(async () => assert.equal((await purchases(c, me)).data.length, 1));
    expectSuccess(await c.del(owner.token, fileId), 200);
    expectError(await c.raw('GET', url), 404, 'File not found');
    await eventually(async () => assert.deepEqual((await purchases(c, me)).data, []));
    expectError(await c.purchase(me.token, { file_id: fileId }), 404, 'File not found');
  });
});

describe('the SDK', () => {
  it('purchase() answers the sale and its link; purchases() lists it; downloadContent() fetches the bytes', async () => {
    const { c } = fx;
    const fileId = await forSale(c, owner);
    const me = await c.register();
    const client = createClient({ baseUrl: fx.server.baseUrl, token: me.token });
    const sale = await client.purchase(fileId);
    assert.equal(sale.message, 'Purchase recorded');
    assert.equal((await client.purchase(fileId)).message, 'File already purchased');
    const listed = await client.purchases({ per_page: 5 });
    assert.deepEqual([listed.data.map((p) => [p.id, p.sale_id]), listed.total, listed.per_page], [[[Number(fileId), sale.sale_id]], 1, 5]);
    const chunks: Buffer[] = [];
    await downloadContent(listed.data[0]!.download_url, { to: new Writable({ write(chunk: Buffer, _e, done) { chunks.push(chunk); done(); } }) });
    assert.equal(Buffer.concat(chunks).toString(), BYTES);
  });
});

describe('a buyer\'s link expires (DOWNLOAD_URL_TTL_SECONDS)', { skip: localOnly }, () => {
  let server: Server | undefined;
  let c: Api;
  before(async () => {
    server = await startServer({ DOWNLOAD_URL_TTL_SECONDS: '2' });
    c = api(server);
  });
  after(async () => {
    if (server !== undefined) await server.dispose();
  });

  it('works for the buyer while valid, then answers 403 "Invalid or expired download link"; a new read signs a fresh one', async () => {
    const seller = await c.register();
    const me = await c.register();
    const fileId = await forSale(c, seller);
    const { download_url: url } = expectSuccess(await c.purchase(me.token, { file_id: fileId }), 201);
    const expires = Number(new URL(url).searchParams.get('expires'));
    assert.ok(expires <= Math.floor(Date.now() / 1000) + 3, 'expires follows DOWNLOAD_URL_TTL_SECONDS');
    // Polled until it expires, bounded only by the test's own timeout.
    await eventually(async () => expectError(await c.raw('GET', url), 403, 'Invalid or expired download link'), { timeoutMs: 120_000, intervalMs: 250 });
    const fresh = (await purchases(c, me)).data[0].download_url as string;
    assert.equal(Number(new URL(fresh).searchParams.get('sale')), Number(new URL(url).searchParams.get('sale')));
    // Fetched at once after it was signed (2 s of validity); a slow machine may take longer: retried with a fresh one.
    await eventually(async () => assert.equal((await c.bytes((await purchases(c, me)).data[0].download_url)).status, 200), { timeoutMs: 120_000 });
  });

  it('a purchase replayed by its Idempotency-Key after its link expired answers the same sale with a fresh link', async () => {
    const seller = await c.register();
    const me = await c.register();
    const fileId = await forSale(c, seller);
    const keyed = { headers: { 'Idempotency-Key': `purchase-${randomWord(12)}` } };
    const first = expectSuccess(await c.json('POST', '/api/V1/docs/api-purchase', me.token, { file_id: fileId }, keyed), 201);
    await eventually(async () => expectError(await c.raw('GET', first.download_url), 403, 'Invalid or expired download link'), { timeoutMs: 120_000, intervalMs: 250 });
    await eventually(async () => {
      const replay = await c.json('POST', '/api/V1/docs/api-purchase', me.token, { file_id: fileId }, keyed);
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      expectSuccess(replay, 201);
      assert.deepEqual([replay.body.message, replay.body.sale_id], ['Purchase recorded', first.sale_id]);
      assert.equal((await c.bytes(replay.body.download_url)).status, 200);
    }, { timeoutMs: 120_000 });
  });
});

describe('categories left empty', () => {
  it('a category whose files were all deleted leaves api-categories, and comes back with its next file', async () => {
    const { c } = fx;
    const name = `Fleeting ${randomWord(8)}`;
    const up = expectSuccess(await c.upload(owner.token, { title: 't', description: 'd', tags: 'x', cc_license: 'CC BY', new_category_name: name }), 201);
    const listed = async (user: RegisteredUser) => (expectSuccess(await c.categories(user.token), 200).data as Array<{ name: string }>).some((x) => x.name === name);
    assert.equal(await listed(owner), true);
    expectSuccess(await c.del(owner.token, up.file_id), 200);
    assert.equal(await listed(owner), false);
    await eventually(async () => assert.equal(await listed(stranger), false));
    // The category still exists: its id is still accepted, and lists it again.
    expectSuccess(await c.upload(owner.token, { title: 't', description: 'd', tags: 'x', cc_license: 'CC BY', category_id: up.category_id }), 201);
    assert.equal(await listed(owner), true);
  });

  it('a category whose only file is disabled is not listed, until the file is enabled again', async () => {
    const { c } = fx;
    const name = `Hidden ${randomWord(8)}`;
    const up = expectSuccess(await c.upload(owner.token, { title: 't', description: 'd', tags: 'x', cc_license: 'CC BY', new_category_name: name }), 201);
    const listed = async () => (expectSuccess(await c.categories(owner.token), 200).data as Array<{ name: string }>).some((x) => x.name === name);
    assert.equal(await listed(), true);
    expectSuccess(await c.update(owner.token, { id: up.file_id, enabled: false }), 200);
    assert.equal(await listed(), false);
    expectSuccess(await c.update(owner.token, { id: up.file_id, enabled: true }), 200);
    assert.equal(await listed(), true);
  });

  it('50 zero-byte uploads, each deleted, each in a new category, leave none of those categories listed', async () => {
    const { c } = fx;
    const prefix = `Empty ${randomWord(8)}`;
    for (let i = 0; i < 50; i += 1) {
      const up = expectSuccess(await c.upload(owner.token, { title: 't', description: 'd', tags: 'x', cc_license: 'CC BY', new_category_name: `${prefix} ${i}` }, new Uint8Array(0)), 201);
      expectSuccess(await c.del(owner.token, up.file_id), 200);
    }
    const all = expectSuccess(await c.json('GET', '/api/V1/docs/api-categories?per_page=100', owner.token), 200);
    assert.deepEqual((all.data as Array<{ name: string }>).filter((x) => x.name.startsWith(prefix)), []);
    assert.equal(all.total, all.data.length);
  });
});
