/**
 * The Elasticsearch adapter against a running Elasticsearch (ELASTICSEARCH_URL):
 *   set -a; . /root/.cache/docshare/data/stack.env; set +a
 *   node --test libs/search-index/test/elasticsearch*.test.ts
 * Every index made here lives behind a random alias `docshare-test-<hex>` and is deleted at the end.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Client, errors } from '@elastic/elasticsearch';
import { searchIndexContract } from '../src/contract.ts';
import { makeElasticsearchSearchIndex } from '../src/elasticsearch-search-index.ts';
import type { ElasticsearchSearchIndex, ElasticsearchSearchIndexOptions } from '../src/elasticsearch-search-index.ts';
import { MAX_QUERY_WORDS, MAX_RESULT_WINDOW } from '../src/elasticsearch-mapping.ts';
import { makeMemorySearchIndex } from '../src/memory-search-index.ts';
import type { SearchIndex } from '../src/port.ts';
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
searchIndexContract('elasticsearch (refreshOnWrite: true)', () => make());
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
    { settle: async () => { await admin.indices.refresh({ index: alias }); } },
  );
}
// wait_for: the write returns after the next periodic refresh (a short interval keeps the suite quick).
searchIndexContract('elasticsearch (refreshOnWrite: wait_for)', () => make({ refreshOnWrite: 'wait_for', refreshInterval: '100ms' }));

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
      id: 'keyword', title: 'text', description: 'text', tags: 'text', category: 'text',
      ownerId: 'integer', visible: 'boolean', uploadedAt: 'date', original: 'object',
    });
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
    assert.deepEqual(await index.search('window', { from: MAX_RESULT_WINDOW - 1, size: 50 }), { total: 2, hits: [] });
    assert.deepEqual(await index.search('window', { from: MAX_RESULT_WINDOW + 5, size: 50 }), { total: 2, hits: [] });
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

  it('refuses to start on a concrete index named like the alias', async () => {
    // Named <test alias>-plain so that the cleanup finds it.
    const name = `${newAlias()}-plain`;
    await admin.indices.create({ index: name });
    await assert.rejects(makeElasticsearchSearchIndex({ node, alias: name }), /is a concrete index, not an alias/);
  });
});
