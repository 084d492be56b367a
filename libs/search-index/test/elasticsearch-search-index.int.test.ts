/**
 * The Elasticsearch adapter against a running Elasticsearch (ELASTICSEARCH_URL):
 *   set -a; . /root/.cache/docshare/data/stack.env; set +a
 *   node --test libs/search-index/test/elasticsearch*.test.ts
 * Every index made here lives behind a random alias `docshare-test-<hex>` and is deleted at the end.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, errors } from '@elastic/elasticsearch';
import { isTransient } from '@docshare/http';
import { searchIndexContract } from '../src/contract.ts';
import { makeElasticsearchSearchIndex, SearchBulkError } from '../src/elasticsearch-search-index.ts';
import type { ElasticsearchSearchIndex, ElasticsearchSearchIndexOptions } from '../src/elasticsearch-search-index.ts';
import { MAX_QUERY_WORDS, MAX_RESULT_WINDOW, SCHEMA_VERSION, SEARCH_INDEX_MAPPINGS } from '../src/elasticsearch-mapping.ts';
import { makeMemorySearchIndex } from '../src/memory-search-index.ts';
import { InvalidCursor } from '../src/port.ts';
import type { SearchIndex, SearchResult } from '../src/port.ts';
import { file, fill, ids, page, relevanceSuite } from './relevance.ts';

const url = process.env.ELASTICSEARCH_URL;
if (!url) {
  throw new Error(
    'ELASTICSEARCH_URL is not set: these integration tests need a running Elasticsearch. Start the local stack '
    + '(infra/local/start.sh es) and load its settings: set -a; . ~/.cache/docshare/data/stack.env; set +a',
  );
}
const node = url;

const admin = new Client({ node });
const aliases = new Set<string>();
const opened = new Set<SearchIndex>();

function newAlias(): string {
  const alias = `docshare-test-${randomBytes(6).toString('hex')}`;
  aliases.add(alias);
  return alias;
}

async function open(options: Partial<ElasticsearchSearchIndexOptions> = {}): Promise<{ index: ElasticsearchSearchIndex; alias: string }> {
  const alias = newAlias();
  const index = await makeElasticsearchSearchIndex({ node, alias, ...options });
  opened.add(index);
  return { index, alias };
}

const make = async (options: Partial<ElasticsearchSearchIndexOptions> = {}): Promise<ElasticsearchSearchIndex> => (await open(options)).index;

/** Concrete indices named after `alias` (behind it or not). */
async function indicesOf(alias: string): Promise<string[]> {
  const found = await admin.indices.get({ index: `${alias}-*`, expand_wildcards: 'all' });
  return Object.keys(found).sort();
}

async function aliasTargets(alias: string): Promise<string[]> {
  const found = await admin.indices.getAlias({ name: alias }, { ignore: [404] });
  return Object.keys(found).filter((name) => name !== 'error' && name !== 'status').sort();
}

/**
 * An HTTP proxy to Elasticsearch that logs each request (`METHOD /path?query`) and lets a test
 * rewrite the JSON answers of one path (e.g. make items of a `_bulk` fail).
 */
interface RecordingProxy {
  url: string;
  requests: string[];
  rewrite: ((path: string, body: Record<string, unknown>) => Record<string, unknown>) | undefined;
  close(): Promise<void>;
}

async function startRecordingProxy(): Promise<RecordingProxy> {
  const proxy: RecordingProxy = { url: '', requests: [], rewrite: undefined, close: async () => {} };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const path = req.url ?? '/';
        proxy.requests.push(`${req.method} ${path}`);
        const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(req.headers)) {
          if (typeof value === 'string' && !['host', 'content-length', 'connection', 'accept-encoding'].includes(name)) headers[name] = value;
        }
        const answer = await fetch(`${node}${path}`, { method: req.method ?? 'GET', headers, body });
        let text = await answer.text();
        if (proxy.rewrite && text.startsWith('{')) text = JSON.stringify(proxy.rewrite(path, JSON.parse(text) as Record<string, unknown>));
        const out: Record<string, string> = {};
        answer.headers.forEach((value, name) => {
          if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(name)) out[name] = value;
        });
        res.writeHead(answer.status, out).end(text);
      })().catch((error: unknown) => res.writeHead(502).end(String(error)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () => new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
  return proxy;
}

after(async () => {
  for (const index of opened) await index.close().catch(() => {});
  // Wildcard deletes are refused (action.destructive_requires_name): delete by name.
  for (const alias of aliases) {
    const names = await indicesOf(alias);
    if (names.length > 0) await admin.indices.delete({ index: names });
  }
  await admin.close();
});

// Default policy: every write refreshes, so no settle is needed: a client reads its own writes.
/** The contract's indices with other cursor options: closed and deleted with the others at the end. */
const makeWith = { makeWith: (options: Partial<ElasticsearchSearchIndexOptions>) => make(options) };

searchIndexContract('elasticsearch (refreshOnWrite: true)', () => make(), makeWith);
// No refresh on write: the contract's settle refreshes before searching.
{
  let alias = '';
  searchIndexContract(
    'elasticsearch (refreshOnWrite: false, settle refreshes)',
    async () => {
      const opening = await open({ refreshOnWrite: false });
      alias = opening.alias;
      return opening.index;
    },
    // Through the alias: clear() puts another index behind it.
    { settle: async () => { await admin.indices.refresh({ index: alias }); }, ...makeWith },
  );
}
// wait_for: the write returns after the next periodic refresh (a short interval keeps the suite quick).
searchIndexContract('elasticsearch (refreshOnWrite: wait_for)', () => make({ refreshOnWrite: 'wait_for', refreshInterval: '100ms' }), makeWith);

// Each test on a fresh index behind its own alias, refreshed on every write.
relevanceSuite('elasticsearch', () => make());

describe('elasticsearch search index', () => {
  it('keeps its documents in one concrete index <alias>-<timestamp> behind the alias', async () => {
    const { index, alias } = await open();
    const targets = await aliasTargets(alias);
    assert.equal(targets.length, 1);
    assert.match(targets[0] as string, new RegExp(`^${alias}-\\d{8}-\\d{6}-\\d{3}$`));
    assert.deepEqual(await index.indices(), targets);
    assert.deepEqual(await indicesOf(alias), targets);
    const doc = file();
    await index.upsert(doc, 1);
    const stored = await admin.get({ index: targets[0] as string, id: doc.id });
    assert.equal(stored.found, true);
    await index.ready();
  });

  it('reuses the index behind an existing alias', async () => {
    const { index: first, alias } = await open();
    const doc = file();
    await first.upsert(doc, 4);
    const second = await makeElasticsearchSearchIndex({ node, alias });
    opened.add(second);
    assert.deepEqual(await second.get(doc.id), { doc, version: 4 });
    assert.deepEqual(await second.indices(), await first.indices());
  });

  it('ends with one index behind the alias when several processes start at once', async () => {
    const alias = newAlias();
    const starts = await Promise.all(Array.from({ length: 4 }, () => makeElasticsearchSearchIndex({ node, alias })));
    for (const index of starts) opened.add(index);
    const targets = await aliasTargets(alias);
    assert.equal(targets.length, 1);
    assert.deepEqual(await indicesOf(alias), targets);
    const doc = file();
    assert.equal(await starts[0]?.upsert(doc, 1), true);
    assert.deepEqual(await starts[3]?.get(doc.id), { doc, version: 1 });
  });

  it('creates the index with the explicit mapping (dynamic: strict) and settings', async () => {
    const index = await make();
    const [name] = (await index.indices()) as [string];
    const mapping = (await admin.indices.getMapping({ index: name }))[name]?.mappings;
    assert.equal(mapping?.dynamic, 'strict');
    const types = Object.fromEntries(Object.entries(mapping?.properties ?? {}).map(([field, spec]) => [field, spec.type]));
    assert.deepEqual(types, {
      id: 'keyword', title: 'text', description: 'text', tags: 'text', category: 'text', content: 'text',
      categoryId: 'integer', categoryName: 'keyword', license: 'keyword', tagKeys: 'keyword',
      ownerId: 'integer', visible: 'boolean', uploadedAt: 'date', original: 'object',
    });
    assert.deepEqual(mapping?._meta, { schema: SCHEMA_VERSION });
    const settings = (await admin.indices.getSettings({ index: name }))[name]?.settings?.index;
    assert.equal(settings?.refresh_interval, '1s');
    assert.equal(String(settings?.number_of_shards), '1');
    assert.equal(String(settings?.number_of_replicas), '0');
    assert.equal(String(settings?.max_result_window), String(MAX_RESULT_WINDOW));
    // dynamic: strict refuses a field the mapping does not name.
    await assert.rejects(
      admin.index({ index: name, id: 'x', document: { id: 'x', unexpected: 1 } }),
      (error: unknown) => error instanceof errors.ResponseError && error.statusCode === 400
        && JSON.stringify(error.body).includes('strict_dynamic_mapping_exception'),
    );
  });

  it('refuses an older external version, through the adapter and directly', async () => {
    const { index, alias } = await open();
    const doc = file();
    assert.equal(await index.upsert(doc, 5), true);
    assert.equal(await index.upsert({ ...doc, title: 'older' }, 4), false);
    await assert.rejects(
      admin.index({ index: alias, id: doc.id, version: 4, version_type: 'external', document: { id: doc.id } }),
      (error: unknown) => error instanceof errors.ResponseError && error.statusCode === 409,
    );
    const stored = await admin.get({ index: alias, id: doc.id });
    assert.equal(stored._version, 5);
    assert.deepEqual(await index.get(doc.id), { doc, version: 5 });
    await assert.rejects(index.upsert(doc, -1), /non-negative integer/);
    await assert.rejects(index.upsert(doc, 1.5), /non-negative integer/);
  });

  it('rebuilds into a fresh index while searches keep answering from the old one, then swaps atomically', async () => {
    const { index, alias } = await open();
    const [old] = (await index.indices()) as [string];
    const before = file({ title: 'Yesterday quorvantel' });
    await fill(index, [before]);

    const { index: rebuild } = await index.rebuildInto();
    assert.notEqual(rebuild.indexName, old);
    assert.deepEqual(await aliasTargets(alias), [old], 'the new index is not behind the alias yet');
    const rebuilt = file({ title: 'Today quorvantel' });
    assert.equal(await rebuild.upsert(rebuilt, 3), true);
    assert.equal(await rebuild.upsert(rebuilt, 2), false);
    assert.deepEqual(await rebuild.get(rebuilt.id), { doc: rebuilt, version: 3 });
    // The live index still answers, from the old data only.
    assert.deepEqual(ids(await index.search('quorvantel', page)), [before.id]);
    assert.equal(await index.get(rebuilt.id), null);
    // Not refreshed periodically during the rebuild.
    const settings = await admin.indices.getSettings({ index: rebuild.indexName });
    assert.equal(settings[rebuild.indexName]?.settings?.index?.refresh_interval, '-1');

    await rebuild.publish();
    assert.deepEqual(await aliasTargets(alias), [rebuild.indexName]);
    assert.equal(await admin.indices.exists({ index: old }), false, 'the old index is deleted');
    assert.deepEqual(ids(await index.search('quorvantel', page)), [rebuilt.id]);
    assert.deepEqual(await index.get(rebuilt.id), { doc: rebuilt, version: 3 });
    assert.equal(await index.get(before.id), null);
    const published = await admin.indices.getSettings({ index: rebuild.indexName });
    assert.equal(published[rebuild.indexName]?.settings?.index?.refresh_interval, '1s');
    await rebuild.publish(); // idempotent
    assert.deepEqual(await aliasTargets(alias), [rebuild.indexName]);
    await assert.rejects(rebuild.discard(), /published/);
  });

  it('publishes rebuilds one after the other, each replacing the live index', async () => {
    const { index, alias } = await open();
    const { index: first } = await index.rebuildInto();
    const { index: second } = await index.rebuildInto();
    await first.publish();
    await second.publish();
    assert.deepEqual(await aliasTargets(alias), [second.indexName]);
    assert.deepEqual(await indicesOf(alias), [second.indexName]);
    // A published rebuild writes through the alias, like the search index.
    const doc = file();
    assert.equal(await second.upsert(doc, 1), true);
    assert.deepEqual(ids(await index.search(doc.title, page)), [doc.id]);
  });

  it('never leaves two indices behind the alias when swaps race', async () => {
    const { index, alias } = await open();
    const rebuilds = await Promise.all(Array.from({ length: 3 }, async () => (await index.rebuildInto()).index));
    const outcomes = await Promise.allSettled([...rebuilds.map((rebuild) => rebuild.publish()), index.clear()]);
    const targets = await aliasTargets(alias);
    assert.equal(targets.length, 1);
    // A swap that lost the race changed nothing and said so; the winners' indices replaced each other.
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') assert.match(String(outcome.reason), /changed while .* was being published/);
    }
    const unpublished = rebuilds.filter((_, i) => outcomes[i]?.status === 'rejected').map((rebuild) => rebuild.indexName);
    const leftovers = (await indicesOf(alias)).filter((name) => !targets.includes(name));
    assert.ok(leftovers.every((name) => unpublished.includes(name)), `only unpublished rebuilds remain: ${leftovers}`);
  });

  it('discards an unpublished rebuild', async () => {
    const { index, alias } = await open();
    const live = await index.indices();
    const { index: rebuild } = await index.rebuildInto();
    await rebuild.upsert(file(), 1);
    await rebuild.clear();
    await rebuild.upsert(file(), 1);
    await rebuild.discard();
    assert.deepEqual(await indicesOf(alias), live);
    // Writing on would auto-create an index of that name with a dynamic mapping: refused.
    await assert.rejects(rebuild.upsert(file(), 2), /was discarded/);
    await assert.rejects(rebuild.upsertMany([{ doc: file(), version: 2 }]), /was discarded/);
    await assert.rejects(rebuild.getMany(['x']), /was discarded/);
    await assert.rejects(rebuild.refresh(), /was discarded/);
    await assert.rejects(rebuild.publish(), /was discarded/);
    assert.deepEqual(await indicesOf(alias), live);
  });

  it('clears by putting a fresh index behind the alias and deleting the old one', async () => {
    const { index, alias } = await open();
    const [old] = (await index.indices()) as [string];
    await fill(index, [file()]);
    await index.clear();
    const [fresh] = (await index.indices()) as [string];
    assert.notEqual(fresh, old);
    assert.deepEqual(await indicesOf(alias), [fresh]);
  });

  it('splits words on anything but letters and digits, like the memory index', async () => {
    const index = await make();
    const doc = file({ title: 'report_v2.pdf', tags: ["don't", 'ﬁles'] });
    await fill(index, [doc]);
    for (const query of ['report', 'v2', 'pdf', 'don', 'files']) {
      assert.deepEqual(ids(await index.search(query, page)), [doc.id], query);
    }
  });

  it(`answers pages beyond ${MAX_RESULT_WINDOW} (max_result_window) empty, with the total, instead of failing`, async () => {
    const index = await make();
    await fill(index, [file({ title: 'window' }), file({ title: 'window' })]);
    assert.deepEqual(await index.search('window', { from: MAX_RESULT_WINDOW - 1, size: 50 }), { total: 2, hits: [], from: MAX_RESULT_WINDOW - 1 });
    assert.deepEqual(await index.search('window', { from: MAX_RESULT_WINDOW + 5, size: 50 }), { total: 2, hits: [], from: MAX_RESULT_WINDOW + 5 });
    assert.equal((await index.search('window', { from: 0, size: MAX_RESULT_WINDOW + 1 })).hits.length, 2);
    await assert.rejects(index.search('window', { from: -1, size: 10 }), /non-negative integer/);
  });

  it(`searches with the first ${MAX_QUERY_WORDS} distinct words of a long query, ignoring the rest`, async () => {
    const index = await make();
    const doc = file({ title: 'needle' });
    await fill(index, [doc]);
    // Fuzzy clauses are costly: 150 such words trip the request circuit breaker of a 512 MB heap.
    const words = Array.from({ length: 300 }, (_, i) => `wordlong${i.toString(36)}x`);
    assert.deepEqual(ids(await index.search(`needle ${words.join(' ')}`, page)), [doc.id]);
    assert.deepEqual(ids(await index.search(`${'needle '.repeat(40)} ${words.slice(0, MAX_QUERY_WORDS - 1).join(' ')} needle`, page)), [doc.id]);
    assert.deepEqual(ids(await index.search(`${words.slice(0, MAX_QUERY_WORDS).join(' ')} needle`, page)), []);
  });

  it('finds the same documents as the memory index', async () => {
    const { index: es, alias } = await open({ refreshOnWrite: false });
    const memory = makeMemorySearchIndex();
    const vocabulary = ['budget', 'budgets', 'report', 'café', 'cafe', 'résumé', 'lamp', 'lantern', 'notes',
      'ox', 'quarterly', 'summary', 'zoë', 'straße', 'naïve', 'data', 'date', 'dates', 'plan', 'plans'];
    const pick = (i: number, n: number): string[] => Array.from({ length: n }, (_, k) => vocabulary[(i * 7 + k * 3) % vocabulary.length] as string);
    const docs = Array.from({ length: 120 }, (_, i) => file({
      title: pick(i, 2).join(' '),
      description: pick(i + 5, 4).join(', '),
      tags: pick(i + 11, 2),
      category: pick(i + 3, 1).join(''),
      visible: i % 9 !== 0,
      uploadedAt: new Date(Date.UTC(2024, 0, 1 + i)).toISOString(),
      content: i % 3 === 0 ? pick(i + 17, 30).join(' ') : '',
      categoryId: 1 + (i % 4),
      license: ['CC BY', 'CC0', 'CC BY-SA'][i % 3] as string,
    }));
    for (const doc of docs) {
      assert.equal(await es.upsert(doc, 1), true);
      await memory.upsert(doc, 1);
    }
    await admin.indices.refresh({ index: alias });
    for (const query of ['budjet', 'cafe', 'CAFÉ', 'resume', 'lamb', 'lanturn', 'ox', 'notes plan', 'strasse', 'naive', 'datum', 'zzzz']) {
      const [fromEs, fromMemory] = [await es.search(query, { from: 0, size: 200 }), await memory.search(query, { from: 0, size: 200 })];
      assert.equal(fromEs.total, fromMemory.total, query);
      assert.deepEqual(ids(fromEs).sort(), ids(fromMemory).sort(), query);
      const options = { facets: true, filters: { license: 'CC0' } };
      const [facetsEs, facetsMemory] = [await es.search(query, { from: 0, size: 5 }, options), await memory.search(query, { from: 0, size: 5 }, options)];
      assert.equal(facetsEs.total, facetsMemory.total, query);
      assert.deepEqual(facetsEs.facets, facetsMemory.facets, query);
    }
  });

  it('is ready while Elasticsearch answers, and fails to start with a clear error when it does not', async () => {
    const index = await make();
    await index.ready();
    await assert.rejects(
      makeElasticsearchSearchIndex({ node: 'http://127.0.0.1:1', alias: newAlias(), maxRetries: 0 }),
      /Elasticsearch at http:\/\/127\.0\.0\.1:1: cannot prepare alias/,
    );
  });

  it('upsertMany never refreshes, whatever refreshOnWrite; refresh() makes the batch searchable', async () => {
    // No periodic refresh: only an explicit one makes a write searchable.
    const index = await make({ refreshOnWrite: true, refreshInterval: '-1' });
    const docs = [file({ title: 'unrefreshed' }), file({ title: 'unrefreshed' })];
    assert.equal(await index.upsertMany(docs.map((doc) => ({ doc, version: 1 }))), 2);
    assert.deepEqual(await index.search('unrefreshed', page), { total: 0, hits: [], from: 0 });
    // Real-time by id, before any refresh: what a batch projector reads back.
    assert.equal((await index.getMany(docs.map((doc) => doc.id))).size, 2);
    await index.refresh();
    assert.equal((await index.search('unrefreshed', page)).total, 2);
  });

  it('fills a rebuild with upsertMany; its refresh() makes it searchable there, not through the alias', async () => {
    const index = await make();
    const { index: rebuild } = await index.rebuildInto();
    const doc = file({ title: 'rebuilt' });
    assert.equal(await rebuild.upsertMany([{ doc, version: 2 }]), 1);
    await rebuild.refresh();
    assert.deepEqual(ids(await rebuild.search('rebuilt', page)), [doc.id]);
    assert.deepEqual(await index.getMany([doc.id]), new Map());
    await rebuild.publish();
    assert.deepEqual(await index.getMany([doc.id]), new Map([[doc.id, { doc, version: 2 }]]));
  });

  it('sends one request per upsertMany, getMany and refresh, none for an empty call, and never refresh=true with a batch', async () => {
    const proxy = await startRecordingProxy();
    try {
      const { index, alias } = await open({ node: proxy.url });
      const docs = [file(), file(), file()];
      proxy.requests.length = 0;
      assert.equal(await index.upsertMany([]), 0);
      assert.deepEqual(await index.getMany([]), new Map());
      assert.equal(proxy.requests.length, 0);
      assert.equal(await index.upsertMany(docs.map((doc) => ({ doc, version: 1 }))), 3);
      assert.equal(proxy.requests.length, 1);
      assert.match(proxy.requests[0] as string, new RegExp(`^(POST|PUT) /${alias}/_bulk\\?`));
      assert.match(proxy.requests[0] as string, /refresh=false/);
      assert.match(proxy.requests[0] as string, /require_alias=true/);
      assert.equal((await index.getMany([...docs.map((doc) => doc.id), 'absent'])).size, 3);
      assert.match(proxy.requests[1] as string, new RegExp(`^(GET|POST) /${alias}/_mget`));
      await index.refresh();
      assert.match(proxy.requests[2] as string, new RegExp(`^(GET|POST) /${alias}/_refresh`));
      assert.equal(proxy.requests.length, 3);
    } finally {
      await proxy.close();
    }
  });

  it('rejects an upsertMany whose entry hits a mapping error, as permanent, naming it; the other entries are stored', async () => {
    const index = await make();
    const [good, bad, older] = [file(), file({ uploadedAt: 'not a date' }), file()];
    assert.equal(await index.upsert(older, 5), true);
    const error = await index.upsertMany([{ doc: good, version: 1 }, { doc: bad, version: 1 }, { doc: older, version: 4 }])
      .then(() => assert.fail('should reject'), (caught: unknown) => caught);
    assert.ok(error instanceof SearchBulkError, String(error));
    assert.equal(error.transient, false);
    assert.equal(isTransient(error), false);
    // The version conflict is no failure; the mapping error is.
    assert.deepEqual(error.failures.map(({ id, status }) => ({ id, status })), [{ id: bad.id, status: 400 }]);
    assert.match(error.message, new RegExp(`1 of 3 documents failed \\(permanent; 1 stored\\): ${bad.id}: 400 \\w+_exception`));
    assert.ok(error.cause instanceof errors.ResponseError);
    assert.deepEqual([...(await index.getMany([good.id, bad.id])).keys()], [good.id]);
  });

  it('rejects an upsertMany whose entries got 429 or 5xx as transient (isTransient), and a replay stores the rest', async () => {
    const proxy = await startRecordingProxy();
    try {
      const { index } = await open({ node: proxy.url });
      const docs = [file(), file(), file(), file()];
      const entries = docs.map((doc) => ({ doc, version: 1 }));
      // Elasticsearch answers an overloaded write queue per item, inside a 200 answer.
      const failItems = (failing: Record<number, [number, string]>) => (path: string, body: Record<string, unknown>) => {
        if (!path.includes('/_bulk')) return body;
        const items = body.items as { index: Record<string, unknown> }[];
        for (const [i, [status, type]] of Object.entries(failing)) {
          items[Number(i)] = { index: { _index: 'x', _id: docs[Number(i)]?.id, status, error: { type, reason: `${type} (injected)` } } };
        }
        return { ...body, errors: true, items };
      };
      proxy.rewrite = failItems({ 1: [429, 'es_rejected_execution_exception'], 3: [503, 'unavailable_shards_exception'] });
      const error = await index.upsertMany(entries).then(() => assert.fail('should reject'), (caught: unknown) => caught);
      assert.ok(error instanceof SearchBulkError, String(error));
      assert.equal(error.transient, true);
      assert.equal(isTransient(error), true);
      assert.deepEqual(error.failures.map(({ id, status, type }) => ({ id, status, type })), [
        { id: docs[1]?.id, status: 429, type: 'es_rejected_execution_exception' },
        { id: docs[3]?.id, status: 503, type: 'unavailable_shards_exception' },
      ]);
      assert.match(error.message, /2 of 4 documents failed \(transient, retry; 2 stored\)/);
      assert.equal((error.cause as errors.ResponseError).statusCode, 429);

      // A permanent failure among transient ones makes the whole call permanent: a retry cannot fix it.
      proxy.rewrite = failItems({ 0: [429, 'es_rejected_execution_exception'], 2: [400, 'document_parsing_exception'] });
      const mixed = await index.upsertMany(entries).then(() => assert.fail('should reject'), (caught: unknown) => caught);
      assert.ok(mixed instanceof SearchBulkError);
      assert.equal(mixed.transient, false);
      assert.equal(isTransient(mixed), false);
      assert.equal((mixed.cause as errors.ResponseError).statusCode, 400);

      // The replay: what the failed call stored (docs 0 and 2 the first time, 1 and 3 the second) is a version conflict now.
      proxy.rewrite = undefined;
      assert.equal(await index.upsertMany(entries), 0);
      assert.equal((await index.getMany(docs.map((doc) => doc.id))).size, 4);
    } finally {
      await proxy.close();
    }
  });

  it('fails upsertMany and getMany when the alias is gone, without auto-creating an index', async () => {
    const { index, alias } = await open();
    const names = await index.indices();
    await admin.indices.delete({ index: names });
    const error = await index.upsertMany([{ doc: file(), version: 1 }]).then(() => assert.fail('should reject'), (caught: unknown) => caught);
    assert.ok(error instanceof SearchBulkError, String(error));
    assert.equal(error.transient, false);
    assert.equal(error.failures[0]?.status, 404);
    await assert.rejects(index.getMany(['x']), (caught: unknown) => caught instanceof Error && /index_not_found_exception/.test(caught.message) && !isTransient(caught));
    assert.equal(await admin.indices.exists({ index: alias }), false);
  });

  it('upgrades an index made with the schema 1 mapping at start: adds the new fields, keeps the old documents', async () => {
    const alias = newAlias();
    const name = `${alias}-20200101-000000-000`;
    const text = { type: 'text', analyzer: 'whitespace' } as const;
    // The mapping as it was before content, filters and facets.
    await admin.indices.create({
      index: name,
      settings: { number_of_shards: 1, number_of_replicas: 0 },
      mappings: {
        dynamic: 'strict',
        properties: {
          id: { type: 'keyword' }, title: text, description: text, tags: text, category: text, ownerId: { type: 'integer' },
          visible: { type: 'boolean' }, uploadedAt: { type: 'date', format: 'strict_date_optional_time' }, original: { type: 'object', enabled: false },
        },
      },
      aliases: { [alias]: {} },
    });
    const old = { id: 'old1', title: 'Ancient quorbelt', description: '', tags: ['x'], category: 'General', ownerId: 1, visible: true, uploadedAt: '2024-01-01T00:00:00.000Z' };
    await admin.index({
      index: alias, id: old.id, version: 3, version_type: 'external', refresh: true,
      document: { ...old, title: 'ancient quorbelt', description: '', tags: ['x'], category: 'general', original: { title: old.title, description: '', tags: ['x'], category: 'General' } },
    });
    const index = await makeElasticsearchSearchIndex({ node, alias });
    opened.add(index);
    const mapping = (await admin.indices.getMapping({ index: name }))[name]?.mappings;
    assert.deepEqual(Object.keys(mapping?.properties ?? {}).sort(), Object.keys(SEARCH_INDEX_MAPPINGS.properties).sort());
    assert.deepEqual(mapping?._meta, { schema: SCHEMA_VERSION, upgradedFrom: 1 });
    assert.equal(mapping?.dynamic, 'strict');
    // The old document reads with defaults, and is still found by its words (not by the new fields until a rebuild).
    assert.deepEqual(await index.get(old.id), { doc: { ...old, categoryId: 0, license: '', content: '' }, version: 3 });
    const doc = file({ title: 'Modern quorbelt', content: 'Extracted zyxomatic text', categoryId: 4, license: 'CC0', tags: ['Fresh'] });
    assert.equal(await index.upsert(doc, 1), true);
    assert.deepEqual(ids(await index.search('zyxomatic', page)), [doc.id]);
    const both = await index.search('quorbelt', page, { facets: true });
    assert.deepEqual(ids(both).sort(), [old.id, doc.id].sort());
    assert.deepEqual(both.facets?.category, [{ id: 4, name: 'General', count: 1 }]);
    assert.deepEqual(ids(await index.search('quorbelt', page, { filters: { license: 'CC0', tags: ['fresh'] } })), [doc.id]);
    // Opening it again changes nothing.
    const again = await makeElasticsearchSearchIndex({ node, alias });
    opened.add(again);
    assert.deepEqual((await admin.indices.getMapping({ index: name }))[name]?.mappings?._meta, { schema: SCHEMA_VERSION, upgradedFrom: 1 });
  });

  /** Follows the cursors from `first`, with pages of `size`. */
  async function walkAll(index: SearchIndex, text: string, first: SearchResult, size: number): Promise<SearchResult[]> {
    const pages = [first];
    for (let cursor = first.nextCursor; cursor !== undefined; cursor = pages[pages.length - 1]?.nextCursor) {
      pages.push(await index.search(text, { from: 0, size }, { cursor }));
    }
    return pages;
  }

  it('pages past max_result_window with cursors, where from/size paging stops (maxResultWindow: 10)', async () => {
    const { index, alias } = await open({ maxResultWindow: 10, refreshOnWrite: false });
    const docs = Array.from({ length: 25 }, (_, i) => file({ title: 'windowed', uploadedAt: new Date(Date.UTC(2024, 0, 1 + i)).toISOString() }));
    assert.equal(await index.upsertMany(docs.map((doc) => ({ doc, version: 1 }))), 25);
    await index.refresh();
    const [name] = (await index.indices()) as [string];
    assert.equal(String((await admin.indices.getSettings({ index: name }))[name]?.settings?.index?.max_result_window), '10');
    assert.deepEqual(await index.search('windowed', { from: 10, size: 5 }), { total: 25, hits: [], from: 10 });
    assert.equal((await index.search('windowed', { from: 8, size: 5 })).hits.length, 2);
    const pages = await walkAll(index, 'windowed', await index.search('windowed', { from: 0, size: 4 }), 4);
    const walked = pages.flatMap(ids);
    assert.equal(walked.length, 25);
    assert.deepEqual([...walked].sort(), docs.map((doc) => doc.id).sort());
    // Newest first: the tie-break of equal scores.
    assert.deepEqual(walked, docs.map((doc) => doc.id).reverse());
    assert.ok(alias);
  });

  it('pages past 10,000 matches with cursors', async () => {
    const { index } = await open({ refreshOnWrite: false });
    const total = MAX_RESULT_WINDOW + 1;
    const docs = Array.from({ length: total }, (_, i) => file({ id: `deep${i}`, title: 'deep', uploadedAt: new Date(Date.UTC(2020, 0, 1) + i * 60_000).toISOString() }));
    for (let i = 0; i < total; i += 2500) await index.upsertMany(docs.slice(i, i + 2500).map((doc) => ({ doc, version: 1 })));
    await index.refresh();
    assert.deepEqual(await index.search('deep', { from: MAX_RESULT_WINDOW, size: 10 }), { total, hits: [], from: MAX_RESULT_WINDOW });
    const pages = await walkAll(index, 'deep', await index.search('deep', { from: 0, size: 2000 }), 2000);
    assert.equal(pages.length, 6);
    const last = pages[5] as SearchResult;
    assert.equal(last.from, 10_000);
    assert.deepEqual(ids(last), ['deep0']);
    assert.equal(new Set(pages.flatMap(ids)).size, total);
  });

  it('answers InvalidCursor when the point in time is gone: closed, or its index cleared', async () => {
    const { index } = await open({ cursorTtlSeconds: 5 });
    const docs = Array.from({ length: 6 }, () => file({ title: 'expiring' }));
    await fill(index, docs);
    const isInvalid = (error: unknown): boolean => error instanceof InvalidCursor;
    // Closed behind its back.
    const first = await index.search('expiring', { from: 0, size: 2 });
    const payload = JSON.parse(Buffer.from((first.nextCursor as string).split('.')[0] as string, 'base64url').toString()) as { p: string };
    await admin.closePointInTime({ id: payload.p });
    await assert.rejects(index.search('expiring', { from: 0, size: 2 }, { cursor: first.nextCursor as string }), isInvalid);
    // An expired one answers the same 404 (search_context_missing_exception), but Elasticsearch reaps
    // expired contexts only every search.keep_alive_interval (1 min): not waited for here.
    // Cleared: the index behind the point in time is deleted.
    await fill(index, [file({ title: 'cleared' }), file({ title: 'cleared' })]);
    const third = await index.search('cleared', { from: 0, size: 1 });
    await index.clear();
    await assert.rejects(index.search('cleared', { from: 0, size: 1 }, { cursor: third.nextCursor as string }), isInvalid);
  });

  it('shares one point in time among the searches that need a cursor, and opens none for a single page', async () => {
    const proxy = await startRecordingProxy();
    try {
      const { index } = await open({ node: proxy.url, pitReuseMs: 60_000 });
      const [one, two] = [file({ title: 'sharing alpha' }), file({ title: 'sharing alpha' })];
      await fill(index, [one, two, file({ title: 'sharing beta' }), file({ title: 'sharing beta' })]);
      proxy.requests.length = 0;
      const pits = (): number => proxy.requests.filter((request) => /\/_pit\b/.test(request) && request.startsWith('POST')).length;
      await index.search('alpha', { from: 0, size: 5 });
      assert.equal(pits(), 0, 'every match on the page: no point in time');
      const alpha = await index.search('alpha', { from: 0, size: 1 });
      const beta = await index.search('beta', { from: 0, size: 1 });
      assert.equal(pits(), 1);
      assert.equal((await index.search('alpha', { from: 0, size: 1 }, { cursor: alpha.nextCursor as string })).hits.length, 1);
      assert.equal((await index.search('beta', { from: 0, size: 1 }, { cursor: beta.nextCursor as string })).hits.length, 1);
      // A write the shared point in time does not hold: the next first page takes a new one, and finds the new document.
      const three = file({ title: 'sharing alpha' });
      await fill(index, [three]);
      const after = await index.search('alpha', { from: 0, size: 1 });
      assert.equal(after.total, 3);
      assert.equal(pits(), 2);
      const walked = [...ids(after), ...ids(await index.search('alpha', { from: 0, size: 5 }, { cursor: after.nextCursor as string }))];
      assert.deepEqual(walked.sort(), [one.id, two.id, three.id].sort());
      await index.close();
      opened.delete(index);
      assert.ok(proxy.requests.some((request) => request.startsWith('DELETE /_pit')), 'close() closes the shared point in time');
    } finally {
      await proxy.close();
    }
  });

  it('refuses to start on a concrete index named like the alias', async () => {
    // Named <test alias>-plain so that the cleanup finds it.
    const name = `${newAlias()}-plain`;
    await admin.indices.create({ index: name });
    await assert.rejects(makeElasticsearchSearchIndex({ node, alias: name }), /is a concrete index, not an alias/);
  });
});
