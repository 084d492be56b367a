/**
 * The memory index with large extracted contents (not a test):
 *   node --expose-gc libs/search-index/test/memory-bench.ts [docs=1000] [contentKiB=50]
 * Upserts `docs` documents with ~`contentKiB` KiB of content each (words drawn from a 20,000-word
 * vocabulary, Zipf-like), replaces 10% of them, then times searches (one word, a typo, three words,
 * with facets, and a cursor walk).
 */
import { makeMemorySearchIndex } from '../src/memory-search-index.ts';
import type { SearchDoc } from '../src/port.ts';

const DOCS = Number(process.argv[2] ?? 1000);
const KIB = Number(process.argv[3] ?? 50);
// mulberry32: an LCG's low bits repeat too soon for a large vocabulary.
let seed = 7;
const next = (n: number): number => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
};
const LETTERS = 'bcdfghjklmnpqrstvwxz';
const VOWELS = 'aeiou';
const vocabulary = Array.from({ length: 20_000 }, () =>
  Array.from({ length: 3 + next(8) }, (_, i) => (i % 2 === 0 ? LETTERS[next(20)] : VOWELS[next(5)])).join(''));
// Zipf-like: low ranks are much more frequent.
const zipf = (): string => vocabulary[Math.floor(vocabulary.length ** (next(1_000_000) / 1_000_000)) - 1] as string;
function content(): string {
  const parts: string[] = [];
  let length = 0;
  while (length < KIB * 1024) {
    const word = zipf();
    parts.push(word);
    length += word.length + 1;
  }
  return parts.join(' ');
}
const docs: SearchDoc[] = Array.from({ length: DOCS }, (_, i) => ({
  id: `m${i}`, title: `${zipf()} ${zipf()} ${zipf()}`, description: Array.from({ length: 20 }, zipf).join(' '), tags: [zipf(), zipf()],
  category: 'General', categoryId: 1 + (i % 8), license: 'CC BY', content: content(), ownerId: 1, visible: true,
  uploadedAt: new Date(Date.UTC(2024, 0, 1) + i * 60_000).toISOString(),
}));

const index = makeMemorySearchIndex();
globalThis.gc?.();
const heapBefore = process.memoryUsage().heapUsed;
let began = performance.now();
for (const doc of docs) await index.upsert(doc, 1);
const upsertMs = performance.now() - began;
globalThis.gc?.();
const heapAfter = process.memoryUsage().heapUsed;
console.log(`${DOCS} docs x ${KIB} KiB content: upsert ${upsertMs.toFixed(0)} ms (${(upsertMs / DOCS).toFixed(2)} ms/doc), heap +${((heapAfter - heapBefore) / 2 ** 20).toFixed(0)} MiB`);
console.log(`distinct words: vocabulary ${new Set(vocabulary).size}, first document ${new Set(docs[0]?.content.split(' ')).size}`);
console.log(`totals: common word ${(await index.search(vocabulary[3] as string, { from: 0, size: 1 })).total}, rare word ${(await index.search(vocabulary[5000] as string, { from: 0, size: 1 })).total}`);
began = performance.now();
for (let i = 0; i < DOCS; i += 10) await index.upsert({ ...(docs[i] as SearchDoc), content: content() }, 2);
console.log(`replace 10%: ${((performance.now() - began) / (DOCS / 10)).toFixed(2)} ms/doc`);

async function time(label: string, run: (i: number) => Promise<unknown>, n = 50): Promise<void> {
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await run(i);
    samples.push(performance.now() - t);
  }
  samples.sort((a, b) => a - b);
  console.log(`${label}: p50 ${samples[Math.floor(n / 2)]?.toFixed(1)} ms, p95 ${samples[Math.floor(n * 0.95)]?.toFixed(1)} ms`);
}
const rare = (i: number): string => vocabulary[5000 + i * 17] as string;
const common = (i: number): string => vocabulary[3 + i] as string;
const typo = (w: string): string => w.slice(0, 2) + (w[2] === 'a' ? 'e' : 'a') + w.slice(3);
await time('search rare word', (i) => index.search(rare(i), { from: 0, size: 20 }));
await time('search common word (~every doc)', (i) => index.search(common(i), { from: 0, size: 20 }));
await time('search rare word with a typo', (i) => index.search(typo(rare(i)), { from: 0, size: 20 }));
await time('search three words + facets', (i) => index.search(`${rare(i)} ${common(i)} ${rare(i + 1)}`, { from: 0, size: 20 }, { facets: true }));
await time('cursor walk of a common word, pages of 100', async (i) => {
  let page = await index.search(common(i), { from: 0, size: 100 });
  while (page.nextCursor) page = await index.search(common(i), { from: 0, size: 100 }, { cursor: page.nextCursor });
}, 10);

// What the index retains beyond the documents' own strings: heap with it, minus heap once it is dropped.
globalThis.gc?.();
const withIndex = process.memoryUsage().heapUsed;
await index.clear();
globalThis.gc?.();
console.log(`index structures (postings, vocabulary, entries): ${((withIndex - process.memoryUsage().heapUsed) / 2 ** 20).toFixed(0)} MiB${globalThis.gc ? '' : ' (run with --expose-gc)'}`);
