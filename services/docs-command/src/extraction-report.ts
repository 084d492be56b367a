import { z } from 'zod';
import { EXTRACT_FORMATS, EXTRACTION_FAILURES, invalid, M, type ExtractionReport } from '@docshare/contracts';

/** Most characters of text a report may carry (the extractor's cap is at most this). */
export const MAX_REPORT_CHARS = 200_000;

/**
 * Characters of extracted text a file keeps per byte it counts against its owner's storage quota
 * (docs/api-decisions.md, Text extraction). Natural text packed in a DOCX or ODT comes to about
 * 2.5 characters a byte, a PDF's to about 1, plain text, HTML, Markdown and CSV to 1 at most; a
 * file that inflates further (a 2 KB ODT of one repeated word inflating to 100,000 characters) keeps
 * its first 4 characters a byte. So a user's text is at most 4 times the bytes the quota lets them
 * store: a full quota buys no more text, and deleting files frees it.
 */
export const TEXT_CHARS_PER_BYTE = 4;

/** The most characters of text recorded for a file of `size` bytes. */
export const textAllowance = (size: number): number =>
  Number.isFinite(size) && size > 0 ? Math.floor(size * TEXT_CHARS_PER_BYTE) : 0;

/** `text` cut to the allowance of a file of `size` bytes, never between the halves of a surrogate pair. */
export const keptText = (text: string, size: number): { text: string; cut: boolean } => {
  let end = textAllowance(size);
  if (text.length <= end) return { text, cut: false };
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return { text: text.slice(0, end), cut: true };
};

const format = z.enum(EXTRACT_FORMATS);
const durationMs = z.number().int().min(0).max(24 * 3600 * 1000);

/** The body the text extractor posts to /internal/V1/files/:fileId/extraction. */
const reportSchema = z.object({
  blobKey: z.string().min(1).max(256),
  report: z.discriminatedUnion('ok', [
    z.object({
      ok: z.literal(true), format, extractor: z.string().min(1).max(100), text: z.string().max(MAX_REPORT_CHARS),
      truncated: z.boolean(), language: z.string().regex(/^[a-z]{3}$/).nullable(), durationMs,
    }),
    z.object({
      ok: z.literal(false), format: format.nullable(), reason: z.enum(EXTRACTION_FAILURES), detail: z.string().max(500), durationMs,
    }),
  ]),
});

/** A report as the extractor sent it, validated; a malformed one is refused with `Bad request`. */
export const parseExtractionReport = (body: unknown): { blobKey: string; report: ExtractionReport } => {
  const parsed = reportSchema.safeParse(body);
  if (!parsed.success) throw invalid(M.badRequest);
  return parsed.data;
};
