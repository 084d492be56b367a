import { z } from 'zod';
import { EXTRACT_FORMATS, EXTRACTION_FAILURES, invalid, M, type ExtractionReport } from '@docshare/contracts';

/** Most characters of text a report may carry (the extractor's cap is at most this). */
export const MAX_REPORT_CHARS = 200_000;

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
