import type { ExtractionReport } from '@docshare/contracts';
import type { ExtractionCause, ExtractionRecorder } from './extraction.ts';

/** docs-command answered 5xx or 429: transient for `isTransient` (@docshare/http), so the batch is retried. */
export class ServiceUnavailableError extends Error {
  override readonly name = 'ServiceUnavailableError';
}

const check = async (res: Response, what: string): Promise<unknown> => {
  const text = await res.text();
  if (res.status === 429 || res.status >= 500) throw new ServiceUnavailableError(`docs-command ${what}: ${res.status} ${text.slice(0, 200)}`);
  if (!res.ok) throw new Error(`docs-command ${what}: ${res.status} ${text.slice(0, 200)}`);
  return JSON.parse(text) as unknown;
};

/** docs-command's internal extraction routes (distributed mode): DOCS_COMMAND_URL. */
export const makeHttpRecorder = (docsCommandUrl: string, internalToken: string, timeoutMs = 30_000): ExtractionRecorder => {
  const base = docsCommandUrl.replace(/\/+$/, '');
  const url = (fileId: number): string => `${base}/internal/V1/files/${fileId}/extraction`;
  return {
    async status(fileId) {
      const res = await fetch(url(fileId), { headers: { 'x-internal-token': internalToken }, signal: AbortSignal.timeout(timeoutMs) });
      if (res.status === 404) return 'gone';
      const body = await check(res, 'extraction status') as { extraction?: unknown };
      const status = body.extraction;
      if (status !== 'pending' && status !== 'done' && status !== 'gone') throw new Error(`docs-command extraction status: unexpected ${JSON.stringify(status)}`);
      return status;
    },
    async record(fileId: number, blobKey: string, report: ExtractionReport, cause: ExtractionCause) {
      const res = await fetch(url(fileId), {
        method: 'POST',
        // docs-command's metaOf: the request id becomes the event's causation id.
        headers: {
          'content-type': 'application/json', 'x-internal-token': internalToken, 'x-request-id': cause.eventId, 'x-correlation-id': cause.correlationId,
        },
        body: JSON.stringify({ blobKey, report }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      // The file vanished (never uploaded here): nothing to record.
      if (res.status === 404) return;
      await check(res, 'record extraction');
    },
  };
};
