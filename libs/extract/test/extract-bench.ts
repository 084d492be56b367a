/**
 * Extraction throughput per format, through the sandbox as the service runs it: for each format,
 * N generated files of English-like text (50–200 KB of text each; PDFs of many pages), extracted
 * with concurrency 1 and 2. Prints a markdown table. Run: node libs/extract/test/extract-bench.ts [files]
 */
import type { ExtractFormat } from '@docshare/contracts';
import { DEFAULT_EXTRACT_LIMITS, makeExtractor, MAX_EXTRACT_CHARS } from '../src/index.ts';
import { makeCsv, makeDocx, makeHtml, makeMarkdown, makeOdt, makePdf, makePptx } from '../src/testing.ts';

const FILES = Number(process.argv[2] ?? 20);
const MB = 1024 * 1024;

const WORDS = ('the of and to in is was for that with as on by at from his her they this which be are not or have '
  + 'had one all were when there can an been more their if will would about into time only new some could these '
  + 'two may first then do any like other than now people over such our year its most made after also did many '
  + 'before through back years where much your way well down should because each just those how too little state '
  + 'good very make world still own see men work long get here between both life being under never day same another '
  + 'know while last might great old off come since against go came right used take three report council budget '
  + 'library garden river market school history company project research meeting policy').split(' ');

/** A deterministic pseudo-random generator, so every run benchmarks the same files. */
function mulberry32(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Paragraphs of English-like sentences totalling about `chars` characters. */
function paragraphs(random: () => number, chars: number): string[] {
  const out: string[] = [];
  let total = 0;
  while (total < chars) {
    const sentences: string[] = [];
    for (let s = 0; s < 3 + Math.floor(random() * 4); s += 1) {
      const words = Array.from({ length: 8 + Math.floor(random() * 12) }, () => WORDS[Math.floor(random() * WORDS.length)]);
      const sentence = words.join(' ');
      sentences.push(`${sentence[0]?.toUpperCase()}${sentence.slice(1)}.`);
    }
    const paragraph = sentences.join(' ');
    out.push(paragraph);
    total += paragraph.length + 2;
  }
  return out;
}

const makers: Record<ExtractFormat, (text: string[]) => Promise<Uint8Array> | Uint8Array> = {
  pdf: makePdf,
  docx: makeDocx,
  odt: makeOdt,
  pptx: (text) => makePptx(Array.from({ length: Math.ceil(text.length / 6) }, (_, i) => text.slice(i * 6, i * 6 + 6))),
  html: (text) => makeHtml(text, 'Report'),
  markdown: (text) => makeMarkdown(text, 'Report'),
  text: (text) => new TextEncoder().encode(text.join('\n\n')),
  csv: (text) => makeCsv(text.map((paragraph, i) => [String(i), paragraph.slice(0, 40), paragraph])),
};
const extensions: Record<ExtractFormat, string> = {
  pdf: 'pdf', docx: 'docx', odt: 'odt', pptx: 'pptx', html: 'html', markdown: 'md', text: 'txt', csv: 'csv',
};

interface Row { format: string; concurrency: number; files: number; mbIn: number; seconds: number; chars: number; peakRssMb: number }

async function bench(format: ExtractFormat, files: Uint8Array[], concurrency: number): Promise<Row> {
  const extractor = makeExtractor({ ...DEFAULT_EXTRACT_LIMITS, maxChars: MAX_EXTRACT_CHARS, concurrency });
  const fileName = `bench.${extensions[format]}`;
  try {
    // Warm up every child (start it, load the format's libraries) outside the timing.
    await Promise.all(files.slice(0, concurrency).map((bytes) => extractor.extract(bytes, { contentType: '', fileName })));
    const started = performance.now();
    const outcomes = await Promise.all(files.map((bytes) => extractor.extract(bytes, { contentType: '', fileName })));
    const seconds = (performance.now() - started) / 1000;
    const failed = outcomes.find((outcome) => !outcome.ok);
    if (failed) throw new Error(`${format}: ${JSON.stringify(failed)}`);
    return {
      format, concurrency, files: files.length, seconds,
      mbIn: files.reduce((total, bytes) => total + bytes.length, 0) / MB,
      chars: outcomes.reduce((total, outcome) => total + (outcome.ok ? outcome.characters : 0), 0),
      peakRssMb: extractor.stats().peakChildRssBytes / MB,
    };
  } finally {
    await extractor.close();
  }
}

const rows: Row[] = [];
let peakParentRss = 0;
for (const format of Object.keys(makers) as ExtractFormat[]) {
  const random = mulberry32(42);
  const files = await Promise.all(Array.from({ length: FILES }, async () => makers[format](paragraphs(random, 50_000 + random() * 150_000))));
  for (const concurrency of [1, 2]) {
    rows.push(await bench(format, files, concurrency));
    peakParentRss = Math.max(peakParentRss, process.memoryUsage.rss());
  }
}

const fixed = (value: number, digits = 1): string => value.toFixed(digits);
console.log(`Extraction benchmark: ${FILES} files per format, 50–200 K characters of text each (kept: ${MAX_EXTRACT_CHARS}), Node ${process.version}\n`);
console.log('| format | concurrency | files | MB in | files/s | MB/s | chars/s | peak child RSS MB |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const row of rows) {
  console.log(`| ${row.format} | ${row.concurrency} | ${row.files} | ${fixed(row.mbIn)} | ${fixed(row.files / row.seconds)} | ${fixed(row.mbIn / row.seconds)} | ${Math.round(row.chars / row.seconds).toLocaleString('en')} | ${fixed(row.peakRssMb, 0)} |`);
}
console.log(`\nParent RSS: ${fixed(process.memoryUsage.rss() / MB, 0)} MB now, ${fixed(peakParentRss / MB, 0)} MB peak (between runs; includes the generated files).`);
