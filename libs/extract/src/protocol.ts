/**
 * The messages between the sandbox (parent) and its extraction child, and the child's handling of
 * one job. Kept apart from worker.ts so a test worker can answer jobs the same way.
 */
import type { ExtractFormat, ExtractionFailure } from '@docshare/contracts';
import { detectLanguage, ExtractionError, extractText, shortMessage } from './extract.ts';

/** Parent → child: extract the text of these bytes. */
export interface JobRequest { id: number; bytes: Uint8Array; format: ExtractFormat; maxChars: number }

/** Child → parent: the answer to the job with the same id. */
export type JobReply =
  | { id: number; ok: true; text: string; truncated: boolean; extractor: string; language: string | null }
  | { id: number; ok: false; reason: ExtractionFailure; detail: string };

/** Extracts one job's text and detects its language; never throws (a failure is a reply too). */
export async function runJob(job: JobRequest): Promise<JobReply> {
  try {
    const { text, truncated, extractor } = await extractText(job.bytes, job.format, job.maxChars);
    return { id: job.id, ok: true, text, truncated, extractor, language: detectLanguage(text) };
  } catch (error) {
    const failure = error instanceof ExtractionError ? error : new ExtractionError('error', shortMessage(error));
    return { id: job.id, ok: false, reason: failure.reason, detail: failure.message };
  }
}

/**
 * Answers the parent's jobs in this process: what a child's entry module calls. The child exits
 * when the parent goes away (its IPC channel closes), so no orphan is left behind.
 */
export function serveJobs(handle: (job: JobRequest) => Promise<JobReply> = runJob): void {
  process.on('message', (job: JobRequest) => {
    void handle(job).then((reply) => {
      process.send?.(reply, undefined, {}, () => {
        // A failed send means the parent is gone; 'disconnect' below ends this process.
      });
    });
  });
  process.on('disconnect', () => process.exit(0));
}
