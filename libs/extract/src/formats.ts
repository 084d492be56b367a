import type { ExtractFormat } from '@docshare/contracts';

/** What the uploader told us about a file: its declared content type and its original name. */
export interface FormatHint { contentType: string; fileName: string }

/**
 * File-name extensions (lower case, without the dot) of the formats text is extracted from.
 * Maps rather than object lookups, so a name like `x.constructor` finds nothing.
 */
const BY_EXTENSION: ReadonlyMap<string, ExtractFormat> = new Map(Object.entries({
  pdf: 'pdf',
  docx: 'docx',
  odt: 'odt',
  pptx: 'pptx',
  html: 'html',
  htm: 'html',
  md: 'markdown',
  markdown: 'markdown',
  txt: 'text',
  text: 'text',
  log: 'text',
  csv: 'csv',
} as const));

/** Declared content types (media type only, lower case, parameters dropped) of the same formats. */
const BY_CONTENT_TYPE: ReadonlyMap<string, ExtractFormat> = new Map(Object.entries({
  'application/pdf': 'pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.oasis.opendocument.text': 'odt',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'pptx',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/plain': 'text',
  'text/csv': 'csv',
} as const));

/** Every PDF starts with this header (a few producers put junk before it; pdfjs tolerates that, we don't guess). */
const PDF_MAGIC = new TextEncoder().encode('%PDF-');

const extensionOf = (fileName: string): string => {
  const base = fileName.slice(Math.max(fileName.lastIndexOf('/'), fileName.lastIndexOf('\\')) + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
};

const mediaTypeOf = (contentType: string): string => (contentType.split(';', 1)[0] ?? '').trim().toLowerCase();

const startsWith = (head: Uint8Array, magic: Uint8Array): boolean =>
  head.length >= magic.length && magic.every((byte, i) => head[i] === byte);

/**
 * The format to read a file as, or null when it is none we extract (recorded as `unsupported_type`).
 * The name's extension wins over the declared type: browsers declare `application/octet-stream`
 * (or a vendor type such as `application/vnd.ms-excel` for CSV) far more often than users misname
 * files. The PDF magic bytes are the last resort, for a PDF uploaded under no useful name or type.
 * A file whose bytes do not match the format chosen is refused later by the library (`corrupt`).
 */
export function detectFormat(hint: FormatHint, head: Uint8Array): ExtractFormat | null {
  return BY_EXTENSION.get(extensionOf(hint.fileName))
    ?? BY_CONTENT_TYPE.get(mediaTypeOf(hint.contentType))
    ?? (startsWith(head, PDF_MAGIC) ? 'pdf' : null);
}
