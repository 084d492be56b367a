/**
 * Rough numbers for docs/elasticsearch.md: index rate per refresh policy, query latency, rebuild.
 *   set -a; . ~/.cache/docshare/data/stack.env; set +a
 *   node libs/search-index/test/elasticsearch-bench.ts [docs=500] [queries=200]
 * Uses its own alias `docshare-bench-<hex>` and deletes its indices at the end.
 */
import { randomBytes } from 'node:crypto';
import { Client } from '@elastic/elasticsearch';
import { makeElasticsearchSearchIndex } from '../src/elasticsearch-search-index.ts';
import type { ElasticsearchSearchIndexOptions } from '../src/elasticsearch-search-index.ts';
import { makeMemorySearchIndex } from '../src/memory-search-index.ts';
import type { SearchDoc, SearchIndex } from '../src/port.ts';

const node = process.env.ELASTICSEARCH_URL;
if (!node) throw new Error('ELASTICSEARCH_URL is not set; e.g. set -a; . ~/.cache/docshare/data/stack.env; set +a');
const DOCS = Number(process.argv[2] ?? 500);
const QUERIES = Number(process.argv[3] ?? 200);

// A deterministic corpus: pseudo-random words over a 400-word vocabulary.
let seed = 42;
const next = (n: number): number => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed % n;
};
const LETTERS = 'bcdfghjklmnpqrstvwxz';
const VOWELS = 'aeiou';
const vocabulary = Array.from({ length: 400 }, () =>
  Array.from({ length: 4 + next(6) }, (_, i) => (i % 2 === 0 ? LETTERS[next(20)] : VOWELS[next(5)])).join(''));
const words = (n: number): string => Array.from({ length: n }, () => vocabulary[next(vocabulary.length)]).join(' ');
const corpus: SearchDoc[] = Array.from({ length: DOCS }, (_, i) => ({
  id: `b${i}`,
  title: words(3 + next(4)),
  description: words(10 + next(20)),
  tags: Array.from({ length: 1 + next(4) }, () => words(1)),
  category: ['Science', 'Arts', 'Law', 'Medicine', 'Engineering', 'History', 'Music', 'Sport'][next(8)] as string,
  categoryId: 1 + (i % 8),
  license: 'CC BY',
  content: '',
  ownerId: 1 + next(50),
  visible: next(20) !== 0,
  uploadedAt: new Date(Date.UTC(2024, 0, 1) + i * 3_600_000).toISOString(),
}));

const admin = new Client({ node });
const alias = `docshare-bench-${randomBytes(4).toString('hex')}`;
const opened: SearchIndex[] = [];
let aliasCount = 0;

async function fresh(options: Partial<ElasticsearchSearchIndexOptions> = {}): Promise<{ index: Awaited<ReturnType<typeof makeElasticsearchSearchIndex>>; name: string }> {
  const name = `${alias}-${++aliasCount}`;
  const index = await makeElasticsearchSearchIndex({ node: node as string, alias: name, ...options });
  opened.push(index);
  return { index, name };
}

const rate = (count: number, ms: number): string => `${Math.round((count * 1000) / ms)} docs/s (${(ms / count).toFixed(1)} ms/doc)`;

function percentiles(samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number): string => (sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0).toFixed(1);
  return `p50 ${at(0.5)} ms, p95 ${at(0.95)} ms, p99 ${at(0.99)} ms`;
}

async function sequential(index: SearchIndex, docs: SearchDoc[]): Promise<number> {
  const began = performance.now();
  for (const doc of docs) await index.upsert(doc, 1);
  return performance.now() - began;
}

async function concurrent(index: SearchIndex, docs: SearchDoc[], width: number): Promise<number> {
  const began = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < docs.length) {
      const doc = docs[next++] as SearchDoc;
      await index.upsert(doc, 1);
    }
  }));
  return performance.now() - began;
}

try {
  const lines: string[] = [];
  const log = (line: string): void => {
    lines.push(line);
    console.log(line);
  };
  log(`corpus: ${DOCS} documents, ${QUERIES} queries per kind, Elasticsearch at ${node}`);

  for (const refreshOnWrite of [true, false] as const) {
    const { index } = await fresh({ refreshOnWrite });
    log(`upsert, sequential, refreshOnWrite ${refreshOnWrite}: ${rate(DOCS, await sequential(index, corpus))}`);
  }
  {
    const { index } = await fresh({ refreshOnWrite: true });
    log(`upsert, 8 concurrent, refreshOnWrite true: ${rate(DOCS, await concurrent(index, corpus, 8))}`);
  }
  {
    const sample = corpus.slice(0, 20);
    const { index } = await fresh({ refreshOnWrite: 'wait_for' });
    log(`upsert, sequential, refreshOnWrite wait_for (refresh_interval 1s): ${rate(sample.length, await sequential(index, sample))}`);
    const { index: wide } = await fresh({ refreshOnWrite: 'wait_for' });
    log(`upsert, 50 concurrent, refreshOnWrite wait_for (refresh_interval 1s): ${rate(DOCS, await concurrent(wide, corpus, 50))}`);
  }

  // The rebuild path of infra/rebuild.ts: get then upsert per event, into an index without refresh.
  const { index: live, name } = await fresh();
  await sequential(live, corpus.slice(0, 10));
  {
    const began = performance.now();
    const { index: rebuild } = await live.rebuildInto();
    for (const doc of corpus) {
      const current = await rebuild.get(doc.id);
      if (!current || current.version < 1) await rebuild.upsert(doc, 1);
    }
    const filled = performance.now() - began;
    const publishing = performance.now();
    await rebuild.publish();
    log(`rebuild (get + upsert per document, no refresh): ${rate(DOCS, filled)}; publish (refresh + alias swap): ${(performance.now() - publishing).toFixed(0)} ms`);
  }
  const count = await admin.count({ index: name });
  log(`live index after rebuild: ${count.count} documents`);

  const memory = makeMemorySearchIndex();
  for (const doc of corpus) await memory.upsert(doc, 1);
  const visibleWord = (i: number): string => (corpus[(i * 37) % DOCS]?.title.split(' ')[0] ?? 'x');
  const typo = (w: string): string => w.slice(0, 2) + (w[2] === 'a' ? 'e' : 'a') + w.slice(3);
  const kinds: [string, (i: number) => string][] = [
    ['one word', visibleWord],
    ['one word with a typo', (i) => typo(visibleWord(i))],
    ['three words', (i) => `${visibleWord(i)} ${visibleWord(i + 1)} ${visibleWord(i + 2)}`],
    ['no match', (i) => `zzzzzz${i}`],
  ];
  for (const [kind, query] of kinds) {
    for (const [label, index] of [['elasticsearch', live], ['memory', memory]] as const) {
      for (let i = 0; i < 20; i++) await index.search(query(i), { from: 0, size: 20 }); // warm-up
      const samples: number[] = [];
      let hits = 0;
      for (let i = 0; i < QUERIES; i++) {
        const began = performance.now();
        const result = await index.search(query(i), { from: 0, size: 20 });
        samples.push(performance.now() - began);
        hits += result.total;
      }
      log(`search ${kind}, ${label}: ${percentiles(samples)} (mean total ${(hits / QUERIES).toFixed(1)})`);
    }
  }
} finally {
  for (const index of opened) await index.close();
  const names = Object.keys(await admin.indices.get({ index: `${alias}-*`, expand_wildcards: 'all' }));
  if (names.length > 0) await admin.indices.delete({ index: names });
  await admin.close();
}
