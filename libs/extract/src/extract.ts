/**
 * Text extraction, in-process. Only ever called inside the sandbox child (worker.ts): the libraries
 * here parse untrusted bytes, so a file that makes one loop, balloon or crash takes down that child
 * only. The heavy libraries are imported lazily, per format, so the child starts fast and loads only
 * what the files it is given need.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { withoutForbidden, type ExtractFormat, type ExtractionFailure } from '@docshare/contracts';
import type { SaxesParser, SaxesTagPlain } from 'saxes';
import { franc } from 'franc-min';

/** What `extractText` gives back for a file it could read. */
export interface ExtractedText {
  /** Normalised text, at most `maxChars` UTF-16 code units. */
  text: string;
  /** The document held more text than `maxChars`: `text` is its beginning. */
  truncated: boolean;
  /** `<library>@<version>` that read the format, e.g. `pdfjs-dist@6.5.438`. */
  extractor: string;
}

/** Why a file could not be read, as the worker reports it: a failure reason and a one-line detail. */
export class ExtractionError extends Error {
  readonly reason: ExtractionFailure;
  constructor(reason: ExtractionFailure, detail: string) {
    super(detail);
    this.name = 'ExtractionError';
    this.reason = reason;
  }
}

/**
 * The most bytes the XML parts read from one ZIP-based file (DOCX, ODT, PPTX) may inflate to, as
 * their central directory declares. Far above any real document's text parts; what stops a zip
 * bomb before a single byte is inflated. (A bomb that lies about its sizes is stopped by the
 * sandbox's memory budget instead.)
 */
export const MAX_XML_BYTES = 64 * 1024 * 1024;

/**
 * The most characters of HTML or Markdown source handed to the converters: they build a whole
 * document tree, so the source is cut first (and the result marked truncated) rather than letting a
 * 50 MB page take the whole time budget. Mirrors html-to-text's own default input limit.
 */
export const MAX_MARKUP_CHARS = 16 * 1024 * 1024;

/** Bytes handed to the streaming parsers (saxes, csv-parse) at a time, so they can stop early. */
const CHUNK_BYTES = 64 * 1024;

/**
 * Collects raw text as a reader produces it, and tells the reader when to stop. Readers stop at a
 * budget of twice the cap (plus slack) rather than at the cap itself: normalisation (collapsing
 * spaces, blank lines) shrinks raw text, and the cap applies to the normalised text.
 */
class TextSink {
  readonly #budget: number;
  readonly #parts: string[] = [];
  #length = 0;
  /** The reader stopped before the end of the document because the budget was reached. */
  overflowed = false;

  constructor(maxChars: number) {
    this.#budget = maxChars * 2 + 1024;
  }

  /** Characters the sink still takes before it is full. */
  get room(): number {
    return Math.max(0, this.#budget - this.#length);
  }

  get full(): boolean {
    return this.#length >= this.#budget;
  }

  /**
   * Appends `text`; false once the budget is reached: the reader should then stop, calling
   * `markTruncated` if anything of the document is left unread.
   */
  add(text: string): boolean {
    if (this.full) {
      this.overflowed ||= text.length > 0;
      return false;
    }
    this.#parts.push(text);
    this.#length += text.length;
    return !this.full;
  }

  /** The reader stopped early on its own (e.g. it cut its input): the text is a beginning. */
  markTruncated(): void {
    this.overflowed = true;
  }

  text(): string {
    return this.#parts.join('');
  }
}

type Reader = (bytes: Uint8Array, sink: TextSink) => Promise<void>;

// ---------------------------------------------------------------------------------------------
// Library loading and versions

/**
 * Imports a library, turning a failure into `error` (the deployment is broken, not the file), so
 * it is never mistaken for the library rejecting the bytes.
 */
async function load<T>(name: string, importer: () => Promise<T>): Promise<T> {
  try {
    return await importer();
  } catch (error) {
    throw new ExtractionError('error', `could not load ${name}: ${shortMessage(error)}`);
  }
}

const versions = new Map<string, string>();

/**
 * The installed version of a package, read once from its package.json. Found by walking up from
 * the module the package resolves to, since not every package exports its package.json.
 */
function packageVersion(name: string): string {
  const known = versions.get(name);
  if (known !== undefined) return known;
  let dir = dirname(fileURLToPath(import.meta.resolve(name)));
  let version = 'unknown';
  for (;;) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (manifest.name === name && typeof manifest.version === 'string') {
        version = manifest.version;
        break;
      }
    } catch {
      // No (readable) package.json at this level: keep walking up.
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  versions.set(name, version);
  return version;
}

/** The library credited with reading each format (the one that understood its structure). */
const LIBRARY_OF: Readonly<Record<ExtractFormat, string>> = {
  pdf: 'pdfjs-dist',
  docx: 'mammoth',
  odt: 'saxes',
  pptx: 'saxes',
  html: 'html-to-text',
  markdown: 'marked',
  text: 'node',
  csv: 'csv-parse',
};

/** `<library>@<version>` for a format; plain text is decoded by Node itself. */
export function extractorOf(format: ExtractFormat): string {
  const library = LIBRARY_OF[format];
  return library === 'node' ? `node@${process.versions.node}` : `${library}@${packageVersion(library)}`;
}

// ---------------------------------------------------------------------------------------------
// Decoding helpers

/**
 * Decodes text bytes, honouring a UTF-16 byte-order mark (LE or BE) and otherwise reading UTF-8
 * (a UTF-8 BOM is dropped). Never throws: invalid sequences become U+FFFD. At most `maxUnits`
 * UTF-16 code units are needed, so at most 4 bytes per unit are decoded; `cut` says whether
 * bytes were left over.
 */
export function decodeText(bytes: Uint8Array, maxUnits = Infinity): { text: string; cut: boolean } {
  const encoding = bytes[0] === 0xff && bytes[1] === 0xfe ? 'utf-16le'
    : bytes[0] === 0xfe && bytes[1] === 0xff ? 'utf-16be'
      : 'utf-8';
  const limit = Number.isFinite(maxUnits) ? maxUnits * 4 + 4 : bytes.length;
  const cut = bytes.length > limit;
  // stream: true when cut, so a character split by the cut is dropped rather than shown as U+FFFD.
  const text = new TextDecoder(encoding, { fatal: false }).decode(cut ? bytes.subarray(0, limit) : bytes, { stream: cut });
  return { text, cut };
}

/** Splits bytes into chunks (views, no copies) for the streaming parsers. */
function* chunksOf(bytes: Uint8Array, size = CHUNK_BYTES): Generator<Uint8Array> {
  for (let start = 0; start < bytes.length; start += size) yield bytes.subarray(start, start + size);
}

/** Cuts markup source to MAX_MARKUP_CHARS, telling the sink the result will be a beginning only. */
function markupSource(bytes: Uint8Array, sink: TextSink): string {
  const { text, cut } = decodeText(bytes, MAX_MARKUP_CHARS);
  if (cut || text.length > MAX_MARKUP_CHARS) sink.markTruncated();
  return text.length > MAX_MARKUP_CHARS ? text.slice(0, MAX_MARKUP_CHARS) : text;
}

// ---------------------------------------------------------------------------------------------
// ZIP + XML (ODT, PPTX; the size check for DOCX)

/**
 * Inflates the entries of a ZIP archive that `wanted` selects, refusing (`too_large`) an archive
 * whose selected entries declare more than MAX_XML_BYTES in total, before inflating anything.
 * Entries not selected are skipped without being inflated.
 */
async function unzipParts(bytes: Uint8Array, wanted: (name: string) => boolean): Promise<Record<string, Uint8Array>> {
  const { unzipSync } = await load('fflate', () => import('fflate'));
  let declared = 0;
  return unzipSync(bytes, {
    filter: (file) => {
      if (!wanted(file.name)) return false;
      declared += file.originalSize;
      if (declared > MAX_XML_BYTES) {
        throw new ExtractionError('too_large', `the archive's text parts inflate to more than ${MAX_XML_BYTES / 1024 / 1024} MiB`);
      }
      return true;
    },
  });
}

/** Callbacks for a streaming XML read; `depth` bookkeeping is the caller's. */
interface XmlHandlers {
  open(tag: SaxesTagPlain): void;
  close(tag: SaxesTagPlain): void;
  text(text: string): void;
}

/**
 * Streams an XML part through saxes in chunks, stopping as soon as the sink is full. Malformed XML
 * throws (saxes' default error handler), which the caller classifies as `corrupt`.
 */
async function readXml(xml: Uint8Array, sink: TextSink, handlers: XmlHandlers): Promise<void> {
  const { SaxesParser } = await load('saxes', () => import('saxes'));
  const parser: SaxesParser = new SaxesParser();
  parser.on('opentag', (tag) => handlers.open(tag));
  parser.on('closetag', (tag) => handlers.close(tag));
  parser.on('text', (text) => handlers.text(text));
  parser.on('cdata', (text) => handlers.text(text));
  const decoder = new TextDecoder('utf-8', { fatal: false });
  for (const chunk of chunksOf(xml)) {
    parser.write(decoder.decode(chunk, { stream: true }));
    if (sink.full) {
      sink.markTruncated();
      return;
    }
  }
  parser.write(decoder.decode());
  parser.close();
}

/** ODF text elements that are paragraphs (a newline after each). */
const ODT_PARAGRAPHS = new Set(['text:p', 'text:h']);
/** ODF empty elements that stand for characters. */
const ODT_CHARACTERS = new Map([['text:s', ' '], ['text:tab', '\t'], ['text:line-break', '\n']]);

/** ODT: the text of `content.xml`'s paragraphs and headings (styles, metadata and images are not read). */
const readOdt: Reader = async (bytes, sink) => {
  const parts = await unzipParts(bytes, (name) => name === 'content.xml');
  const content = parts['content.xml'];
  if (!content) throw new ExtractionError('corrupt', 'the ODT has no content.xml');
  let depth = 0;
  await readXml(content, sink, {
    open: (tag) => {
      if (ODT_PARAGRAPHS.has(tag.name)) depth += 1;
      else if (depth > 0 && ODT_CHARACTERS.has(tag.name)) sink.add(ODT_CHARACTERS.get(tag.name) ?? '');
    },
    close: (tag) => {
      if (!ODT_PARAGRAPHS.has(tag.name)) return;
      depth = Math.max(0, depth - 1);
      sink.add('\n');
    },
    text: (text) => {
      if (depth > 0) sink.add(text);
    },
  });
};

const SLIDE_PART = /^ppt\/slides\/slide(\d+)\.xml$/;

/** PPTX: the `a:t` runs of each slide, a newline per `a:p`, slides in number order separated by a blank line. */
const readPptx: Reader = async (bytes, sink) => {
  const parts = await unzipParts(bytes, (name) => SLIDE_PART.test(name));
  const slides = Object.keys(parts)
    .map((name) => ({ name, number: Number(SLIDE_PART.exec(name)?.[1]) }))
    .sort((a, b) => a.number - b.number);
  if (slides.length === 0) throw new ExtractionError('corrupt', 'the PPTX has no slides');
  for (const { name } of slides) {
    let inText = 0;
    await readXml(parts[name] ?? new Uint8Array(), sink, {
      open: (tag) => {
        if (tag.name === 'a:t') inText += 1;
        else if (tag.name === 'a:br') sink.add('\n');
      },
      close: (tag) => {
        if (tag.name === 'a:t') inText = Math.max(0, inText - 1);
        else if (tag.name === 'a:p') sink.add('\n');
      },
      text: (text) => {
        if (inText > 0) sink.add(text);
      },
    });
    if (!sink.add('\n\n')) {
      sink.markTruncated();
      return;
    }
  }
};

// ---------------------------------------------------------------------------------------------
// The other formats

/**
 * PDF: pdfjs-dist's legacy build, page by page, stopping once the budget is reached. In Node
 * pdfjs runs its "worker" in-process (a fake worker, no thread). Fonts are never loaded, nor
 * system fonts used: text extraction needs only the PDF's own encodings. (pdfjs 6 no longer
 * compiles fonts with eval, so there is no `isEvalSupported` to turn off.)
 */
const readPdf: Reader = async (bytes, sink) => {
  const pdfjs = await load('pdfjs-dist', () => import('pdfjs-dist/legacy/build/pdf.mjs'));
  const task = pdfjs.getDocument({
    // A plain Uint8Array view: pdfjs refuses a Buffer.
    data: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    disableFontFace: true,
    useSystemFonts: false,
    useWorkerFetch: false,
    useWasm: false,
    isOffscreenCanvasSupported: false,
    isImageDecoderSupported: false,
    disableAutoFetch: true,
    disableStream: true,
    verbosity: pdfjs.VerbosityLevel.ERRORS,
  });
  try {
    const document = await task.promise;
    for (let number = 1; number <= document.numPages; number += 1) {
      if (sink.full) {
        sink.markTruncated();
        break;
      }
      const page = await document.getPage(number);
      const content = await page.getTextContent();
      let hasText = false;
      for (const item of content.items) {
        if (!('str' in item)) continue;
        hasText ||= item.str.length > 0;
        sink.add(item.str);
        if (item.hasEOL) sink.add('\n');
      }
      // Only pages with text add a separator: blank pages must not use up the character budget.
      if (hasText) sink.add('\n\n');
      page.cleanup();
    }
  } finally {
    await task.destroy();
  }
};

/**
 * DOCX: mammoth's raw text. Mammoth inflates the parts it reads whole, so the archive's declared
 * sizes are checked first (a zip bomb is refused as `too_large` without inflating anything).
 */
const readDocx: Reader = async (bytes, sink) => {
  const declared = await declaredXmlBytes(bytes);
  if (declared > MAX_XML_BYTES) {
    throw new ExtractionError('too_large', `the archive's text parts inflate to more than ${MAX_XML_BYTES / 1024 / 1024} MiB`);
  }
  const mammoth = (await load('mammoth', () => import('mammoth'))).default;
  const result = await mammoth.extractRawText({ buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) });
  sink.add(result.value);
};

/** The total size the XML parts of a ZIP declare, read from its central directory (nothing inflated). */
async function declaredXmlBytes(bytes: Uint8Array): Promise<number> {
  const { unzipSync } = await load('fflate', () => import('fflate'));
  let total = 0;
  unzipSync(bytes, {
    filter: (file) => {
      if (/\.(xml|rels)$/i.test(file.name)) total += file.originalSize;
      return false;
    },
  });
  return total;
}

/** The html-to-text converter, compiled once: text only (no link targets, no images, no wrapping, case kept). */
let htmlConverter: ((html: string) => string) | undefined;

async function htmlToText(html: string): Promise<string> {
  if (!htmlConverter) {
    const { compile } = await load('html-to-text', () => import('html-to-text'));
    htmlConverter = compile({
      wordwrap: false,
      selectors: [
        { selector: 'a', options: { ignoreHref: true } },
        { selector: 'img', format: 'skip' },
        { selector: 'script', format: 'skip' },
        { selector: 'style', format: 'skip' },
        { selector: 'template', format: 'skip' },
        ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: { uppercase: false } })),
        { selector: 'table', options: { uppercaseHeaderCells: false } },
      ],
    });
  }
  return htmlConverter(html);
}

/** HTML: html-to-text over the (UTF-8 or BOM-declared UTF-16) source. */
const readHtml: Reader = async (bytes, sink) => {
  sink.add(await htmlToText(markupSource(bytes, sink)));
};

/** Markdown: rendered to HTML by marked, then read as HTML (so markup characters do not reach the text). */
const readMarkdown: Reader = async (bytes, sink) => {
  const { marked } = await load('marked', () => import('marked'));
  const html = await marked.parse(markupSource(bytes, sink), { async: true, gfm: true });
  sink.add(await htmlToText(html));
};

/** Plain text: decoded, only as much as the budget needs. */
const readPlainText: Reader = async (bytes, sink) => {
  const { text, cut } = decodeText(bytes, sink.room);
  if (cut) sink.markTruncated();
  sink.add(text);
};

/**
 * CSV: csv-parse's streaming parser (so it can stop once the budget is reached), lenient about
 * ragged rows and stray quotes; cells joined by spaces, rows by newlines.
 */
const readCsv: Reader = async (bytes, sink) => {
  const { parse } = await load('csv-parse', () => import('csv-parse'));
  const records = Readable.from(chunksOf(bytes)).pipe(parse({
    bom: true,
    relax_column_count: true,
    relax_quotes: true,
    skip_empty_lines: true,
  }));
  for await (const record of records as AsyncIterable<string[]>) {
    if (!sink.add(`${record.join(' ')}\n`)) {
      sink.markTruncated();
      break;
    }
  }
};

const READERS: Readonly<Record<ExtractFormat, Reader>> = {
  pdf: readPdf,
  docx: readDocx,
  odt: readOdt,
  pptx: readPptx,
  html: readHtml,
  markdown: readMarkdown,
  text: readPlainText,
  csv: readCsv,
};

// ---------------------------------------------------------------------------------------------
// Errors, normalisation, language

/** The first line of an error's message, shortened: a `detail` is never a stack. */
export function shortMessage(error: unknown, max = 200): string {
  const message = error instanceof Error ? error.message : String(error);
  const line = (message.split('\n', 1)[0] ?? '').trim() || 'unknown error';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** V8's way of saying an allocation could not be made: the file needs more memory than allowed. */
const ALLOCATION_FAILED = /allocation failed|invalid (string|array buffer|typed array) length|array buffer allocation/i;

/**
 * What went wrong while a library read the bytes: a password prompt is `encrypted`, a failed
 * allocation `memory`, an ExtractionError keeps its reason, and anything else the library threw is
 * it rejecting the bytes: `corrupt`.
 */
export function classifyError(error: unknown, format: ExtractFormat): ExtractionError {
  if (error instanceof ExtractionError) return error;
  const name = error instanceof Error ? error.name : '';
  if (name === 'PasswordException') return new ExtractionError('encrypted', 'the PDF is encrypted (password-protected)');
  if (error instanceof RangeError && ALLOCATION_FAILED.test(error.message)) {
    return new ExtractionError('memory', `out of memory: ${shortMessage(error)}`);
  }
  return new ExtractionError('corrupt', `${LIBRARY_OF[format]} could not read the ${format} file: ${shortMessage(error)}`);
}

/**
 * Tidies extracted text for indexing: line breaks unified, control characters other than newline
 * and tab removed, runs of spaces collapsed, spaces at line ends dropped, at most one blank line in
 * a row, trimmed.
 */
export function normaliseText(raw: string): string {
  // Line breaks first (a lone \r is one), then what no stored text may hold: controls, and the bidi
  // overrides a document can carry into snippets and the view page as well as a title can.
  return withoutForbidden(raw.replace(/\r\n?/g, '\n'))
    .replace(/ {2,}/g, ' ')
    .replace(/ *\n */g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** Cuts text to at most `maxChars` UTF-16 code units, never between the halves of a surrogate pair. */
export function cutText(text: string, maxChars: number): { text: string; cut: boolean } {
  if (text.length <= maxChars) return { text, cut: false };
  let end = maxChars;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return { text: text.slice(0, end).trimEnd(), cut: true };
}

/** Texts shorter than this are not worth a guess: franc is unreliable on a few words. */
const MIN_LANGUAGE_CHARS = 50;
/** franc reads this much of the text: plenty for a trigram guess, and bounded in time. */
const LANGUAGE_SAMPLE_CHARS = 5_000;

/** The text's language as an ISO 639-3 code (franc-min), or null when too short or unclear. */
export function detectLanguage(text: string): string | null {
  const sample = text.slice(0, LANGUAGE_SAMPLE_CHARS);
  if (sample.trim().length < MIN_LANGUAGE_CHARS) return null;
  const language = franc(sample, { minLength: MIN_LANGUAGE_CHARS });
  return language === 'und' ? null : language;
}

/**
 * Extracts the text of a file in a known format, normalised and cut at `maxChars`. Throws an
 * ExtractionError: `encrypted`, `corrupt` (the library rejected the bytes), `too_large` (a zip
 * whose parts declare too much), `memory` or `error` (the library could not be loaded).
 */
export async function extractText(bytes: Uint8Array, format: ExtractFormat, maxChars: number): Promise<ExtractedText> {
  const sink = new TextSink(maxChars);
  try {
    await READERS[format](bytes, sink);
  } catch (error) {
    throw classifyError(error, format);
  }
  const { text, cut } = cutText(normaliseText(sink.text()), maxChars);
  return { text, truncated: cut || sink.overflowed, extractor: extractorOf(format) };
}
