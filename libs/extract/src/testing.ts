/**
 * Fixture files for tests, built with libraries (pdf-lib, fflate) rather than downloaded: the
 * ordinary formats with the given text, and hostile files (encrypted, a million pages, a zip bomb,
 * corrupt). Used by this package's tests and by the HTTP conformance tests, so: plain functions, no
 * test framework. pdf-lib is a dev dependency: only tests import this module.
 */
import { randomBytes } from 'node:crypto';
import { constants as zlibConstants, crc32, deflateRawSync } from 'node:zlib';
import { strToU8, Zip, ZipDeflate, zipSync } from 'fflate';
import type { ZipInputFile, Zippable } from 'fflate';
import { PDFDocument, PDFHexString, StandardFonts } from 'pdf-lib';

const escapeXml = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';

// ---------------------------------------------------------------------------------------------
// PDF

const PAGE_WIDTH = 612;
const PAGE_HEIGHT = 792;
const MARGIN = 56;
const FONT_SIZE = 11;
const LINE_HEIGHT = 14;

/** Splits a paragraph into lines that fit `width` points at the font size (pdf-lib draws no wrapped text itself). */
function wrap(paragraph: string, fits: (line: string) => boolean): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of paragraph.split(/\s+/).filter(Boolean)) {
    const candidate = line ? `${line} ${word}` : word;
    if (line && !fits(candidate)) {
      lines.push(line);
      line = word;
    } else {
      line = candidate;
    }
  }
  if (line) lines.push(line);
  return lines;
}

/**
 * A PDF of the paragraphs (ASCII: Helvetica's WinAnsi encoding), wrapped to the page width, a blank
 * line between paragraphs, as many US Letter pages as they need.
 */
export async function makePdf(paragraphs: string[]): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const fits = (line: string): boolean => font.widthOfTextAtSize(line, FONT_SIZE) <= PAGE_WIDTH - 2 * MARGIN;
  let page = doc.addPage([PAGE_WIDTH, PAGE_HEIGHT]);
  let y = PAGE_HEIGHT - MARGIN;
  for (const paragraph of paragraphs) {
    for (const line of [...wrap(paragraph, fits), '']) {
      if (y < MARGIN) {
        page = doc.addPage([PAGE_WIDTH, PAGE_HEIGHT]);
        y = PAGE_HEIGHT - MARGIN;
      }
      if (line) page.drawText(line, { x: MARGIN, y, size: FONT_SIZE, font });
      y -= LINE_HEIGHT;
    }
  }
  return doc.save();
}

/**
 * A PDF with an /Encrypt dictionary (Standard security handler, V 1, R 2, random 32-byte O and U)
 * and an /ID: no password, not even the empty one, matches U, so pdfjs asks for a password.
 */
export async function encryptedPdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  doc.addPage([PAGE_WIDTH, PAGE_HEIGHT]).drawText('locked away', { x: MARGIN, y: PAGE_HEIGHT - MARGIN, size: FONT_SIZE, font });
  const hex = (bytes: number): PDFHexString => PDFHexString.of(randomBytes(bytes).toString('hex'));
  const encrypt = doc.context.obj({ Filter: 'Standard', V: 1, R: 2, O: hex(32), U: hex(32), P: -44 });
  const id = hex(16);
  doc.context.trailerInfo.Encrypt = doc.context.register(encrypt);
  doc.context.trailerInfo.ID = doc.context.obj([id, id]);
  // A classic trailer (no cross-reference stream) carries /Encrypt and /ID where every reader looks.
  return doc.save({ useObjectStreams: false });
}

/** PDF bytes from numbered object bodies (object n is `objects[n - 1]`), with a correct xref table. */
function assemblePdf(objects: string[]): Uint8Array {
  let body = '%PDF-1.7\n';
  const offsets: number[] = [];
  objects.forEach((object, index) => {
    offsets.push(body.length);
    body += `${index + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xrefAt = body.length;
  const entries = offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('');
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${entries}`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xrefAt}\n%%EOF\n`;
  return strToU8(body, true);
}

/**
 * A ~12 KB PDF whose page tree declares 1,000,000 pages: the root /Pages lists one intermediate
 * /Pages node 1,000 times, which lists one empty page 1,000 times. Reading it page by page takes
 * far longer than any time budget.
 */
export function millionPagePdf(): Uint8Array {
  const thousand = (ref: string): string => Array.from({ length: 1000 }, () => ref).join(' ');
  return assemblePdf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Count 1000000 /Kids [${thousand('3 0 R')}] >>`,
    `<< /Type /Pages /Parent 2 0 R /Count 1000 /Kids [${thousand('4 0 R')}] >>`,
    '<< /Type /Page /Parent 3 0 R /MediaBox [0 0 612 792] >>',
  ]);
}

/** A PDF header followed by bytes that are no PDF structure at all. */
export function corruptPdf(): Uint8Array {
  const garbage = Uint8Array.from({ length: 4096 }, (_, i) => (i * 37 + 11) % 251);
  return concat([strToU8('%PDF-1.7\n%\u00e2\u00e3\u00cf\u00d3\n', true), garbage]);
}

// ---------------------------------------------------------------------------------------------
// DOCX

const CONTENT_TYPES_NS = 'http://schemas.openxmlformats.org/package/2006/content-types';
const RELATIONSHIPS_NS = 'http://schemas.openxmlformats.org/package/2006/relationships';
const OFFICE_DOCUMENT_REL = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument';
const WORD_NS = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';

const docxContentTypes = XML_DECLARATION
  + `<Types xmlns="${CONTENT_TYPES_NS}">`
  + '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
  + '<Default Extension="xml" ContentType="application/xml"/>'
  + '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
  + '</Types>';

const packageRels = (target: string): string => XML_DECLARATION
  + `<Relationships xmlns="${RELATIONSHIPS_NS}"><Relationship Id="rId1" Type="${OFFICE_DOCUMENT_REL}" Target="${target}"/></Relationships>`;

const docxParagraph = (text: string): string => `<w:p><w:r><w:t xml:space="preserve">${escapeXml(text)}</w:t></w:r></w:p>`;
const DOCX_BODY_START = `${XML_DECLARATION}<w:document xmlns:w="${WORD_NS}"><w:body>`;
const DOCX_BODY_END = '</w:body></w:document>';

/** A minimal DOCX (content types, package relationships, word/document.xml) with one paragraph per string. */
export function makeDocx(paragraphs: string[]): Uint8Array {
  return zipSync({
    '[Content_Types].xml': strToU8(docxContentTypes),
    '_rels/.rels': strToU8(packageRels('word/document.xml')),
    'word/document.xml': strToU8(DOCX_BODY_START + paragraphs.map(docxParagraph).join('') + DOCX_BODY_END),
  });
}

/**
 * Raw-deflate segments that can be concatenated into one stream: each ends with a full flush
 * (byte-aligned, no back-references into earlier segments), so one compressed megabyte can be
 * repeated a thousand times for a gigabyte of inflated text. Only the last segment is final.
 */
const deflateSegment = (text: Uint8Array, final: boolean): Uint8Array<ArrayBuffer> =>
  new Uint8Array(deflateRawSync(text, { level: 9, finishFlush: final ? zlibConstants.Z_FINISH : zlibConstants.Z_FULL_FLUSH }));

/**
 * A ~3 MB DOCX whose word/document.xml inflates to about 1 GB
 * (`<w:p><w:r><w:t xml:space="preserve">bomb</w:t></w:r></w:p>` over and over). The compressed
 * stream is built from one deflated megabyte repeated (see deflateSegment) and handed to fflate's
 * streaming Zip as pre-compressed data with its CRC, so building it never holds the gigabyte and
 * takes well under a second. The central directory declares the true size, unless `lieAboutSize`:
 * then it claims 1 KB, so only a reader's own limits (or the sandbox's memory budget) stop it.
 */
export function zipBombDocx(options: { inflatedBytes?: number; lieAboutSize?: boolean } = {}): Uint8Array {
  const inflatedBytes = options.inflatedBytes ?? 1024 * 1024 * 1024;
  const parts: Uint8Array[] = [];
  const zip = new Zip((error, chunk) => {
    if (error) throw error;
    parts.push(chunk);
  });
  for (const [name, text] of [['[Content_Types].xml', docxContentTypes], ['_rels/.rels', packageRels('word/document.xml')]] as const) {
    const entry = new ZipDeflate(name);
    zip.add(entry);
    entry.push(strToU8(text), true);
  }
  const head = strToU8(DOCX_BODY_START);
  const tail = strToU8(DOCX_BODY_END);
  const paragraph = docxParagraph('bomb');
  const block = strToU8(paragraph.repeat(Math.floor((1024 * 1024) / paragraph.length)));
  const blocks = Math.ceil(inflatedBytes / block.length);
  let crc = crc32(head);
  for (let i = 0; i < blocks; i += 1) crc = crc32(block, crc);
  crc = crc32(tail, crc);
  const document: ZipInputFile = {
    filename: 'word/document.xml',
    size: options.lieAboutSize ? 1024 : head.length + blocks * block.length + tail.length,
    crc,
    compression: 8,
  };
  zip.add(document);
  const send = (chunk: Uint8Array<ArrayBuffer>, final: boolean): void => document.ondata?.(null, chunk, final);
  send(deflateSegment(head, false), false);
  const compressedBlock = deflateSegment(block, false);
  for (let i = 0; i < blocks; i += 1) send(compressedBlock, false);
  send(deflateSegment(tail, true), true);
  zip.end();
  return concat(parts);
}

/** ZIP's local-file-header signature followed by bytes that are no archive. */
export function corruptDocx(): Uint8Array {
  const garbage = Uint8Array.from({ length: 2048 }, (_, i) => (i * 53 + 7) % 256);
  return concat([Uint8Array.of(0x50, 0x4b, 0x03, 0x04), garbage]);
}

// ---------------------------------------------------------------------------------------------
// ODT

const ODT_MIMETYPE = 'application/vnd.oasis.opendocument.text';

/**
 * A minimal ODT: `mimetype` first and stored (the ODF rule that lets tools sniff the type),
 * a manifest, and content.xml with one paragraph per string.
 */
export function makeOdt(paragraphs: string[]): Uint8Array {
  const manifest = XML_DECLARATION
    + '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">'
    + `<manifest:file-entry manifest:full-path="/" manifest:media-type="${ODT_MIMETYPE}"/>`
    + '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
    + '</manifest:manifest>';
  const content = XML_DECLARATION
    + '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"'
    + ' xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2">'
    + '<office:body><office:text>'
    + paragraphs.map((text) => `<text:p>${escapeXml(text)}</text:p>`).join('')
    + '</office:text></office:body></office:document-content>';
  const files: Zippable = {
    mimetype: [strToU8(ODT_MIMETYPE), { level: 0 }],
    'META-INF/manifest.xml': strToU8(manifest),
    'content.xml': strToU8(content),
  };
  return zipSync(files);
}

// ---------------------------------------------------------------------------------------------
// PPTX

const PRESENTATION_NS = 'http://schemas.openxmlformats.org/presentationml/2006/main';
const DRAWING_NS = 'http://schemas.openxmlformats.org/drawingml/2006/main';
const DOC_RELS_NS = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
const SLIDE_REL = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide';

/** One slide: a text box with a paragraph per string. */
function pptxSlide(paragraphs: string[]): string {
  const body = paragraphs
    .map((text) => `<a:p><a:r><a:rPr lang="en-US"/><a:t>${escapeXml(text)}</a:t></a:r></a:p>`)
    .join('');
  return XML_DECLARATION
    + `<p:sld xmlns:a="${DRAWING_NS}" xmlns:r="${DOC_RELS_NS}" xmlns:p="${PRESENTATION_NS}"><p:cSld><p:spTree>`
    + '<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>'
    + '<p:sp><p:nvSpPr><p:cNvPr id="2" name="Text 1"/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr><p:spPr/>'
    + `<p:txBody><a:bodyPr/><a:lstStyle/>${body}</p:txBody></p:sp>`
    + '</p:spTree></p:cSld></p:sld>';
}

/**
 * A minimal PPTX: content types, the presentation part listing its slides, and one slide part per
 * entry of `slides` (each a list of paragraphs). No masters, layouts or theme: enough for readers
 * of the text, not for PowerPoint to open.
 */
export function makePptx(slides: string[][]): Uint8Array {
  const numbers = slides.map((_, index) => index + 1);
  const contentTypes = XML_DECLARATION
    + `<Types xmlns="${CONTENT_TYPES_NS}">`
    + '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    + '<Default Extension="xml" ContentType="application/xml"/>'
    + '<Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"/>'
    + numbers.map((n) => `<Override PartName="/ppt/slides/slide${n}.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.slide+xml"/>`).join('')
    + '</Types>';
  const presentation = XML_DECLARATION
    + `<p:presentation xmlns:a="${DRAWING_NS}" xmlns:r="${DOC_RELS_NS}" xmlns:p="${PRESENTATION_NS}">`
    + `<p:sldIdLst>${numbers.map((n) => `<p:sldId id="${255 + n}" r:id="rId${n}"/>`).join('')}</p:sldIdLst>`
    + '<p:sldSz cx="9144000" cy="6858000"/><p:notesSz cx="6858000" cy="9144000"/></p:presentation>';
  const presentationRels = XML_DECLARATION
    + `<Relationships xmlns="${RELATIONSHIPS_NS}">`
    + numbers.map((n) => `<Relationship Id="rId${n}" Type="${SLIDE_REL}" Target="slides/slide${n}.xml"/>`).join('')
    + '</Relationships>';
  const files: Zippable = {
    '[Content_Types].xml': strToU8(contentTypes),
    '_rels/.rels': strToU8(packageRels('ppt/presentation.xml')),
    'ppt/presentation.xml': strToU8(presentation),
    'ppt/_rels/presentation.xml.rels': strToU8(presentationRels),
  };
  slides.forEach((paragraphs, index) => {
    files[`ppt/slides/slide${index + 1}.xml`] = strToU8(pptxSlide(paragraphs));
  });
  return zipSync(files);
}

// ---------------------------------------------------------------------------------------------
// Text formats

/** An HTML page: the title in <title> and <h1>, a <p> per paragraph. */
export function makeHtml(paragraphs: string[], title = 'Document'): Uint8Array {
  const body = paragraphs.map((text) => `<p>${escapeXml(text)}</p>`).join('\n');
  return strToU8(`<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${escapeXml(title)}</title></head>`
    + `<body><h1>${escapeXml(title)}</h1>\n${body}\n</body></html>\n`);
}

/** A Markdown document: the title as a heading, then the paragraphs separated by blank lines. */
export function makeMarkdown(paragraphs: string[], title = 'Document'): Uint8Array {
  return strToU8(`# ${title}\n\n${paragraphs.join('\n\n')}\n`);
}

/** A CSV (RFC 4180 quoting where needed) of the rows. */
export function makeCsv(rows: string[][]): Uint8Array {
  const cell = (text: string): string => (/[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);
  return strToU8(rows.map((row) => row.map(cell).join(',')).join('\r\n') + '\r\n');
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((total, part) => total + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
