/**
 * Text extraction from uploaded files (PDF, DOCX, ODT, PPTX, HTML, Markdown, plain text, CSV),
 * contained in child processes with time and memory budgets. See sandbox.ts.
 */
export { defaultConcurrency, makeExtractor, MAX_EXTRACT_CHARS } from './sandbox.ts';
export type { Extractor, ExtractorOptions, ExtractorStats, ExtractOutcome, WorkerExit } from './sandbox.ts';
export { makeFairQueue, nextOwner } from './fair-queue.ts';
export type { FairQueue, FairQueueOptions, FairQueueStats, OwnerTurns } from './fair-queue.ts';
export { detectFormat } from './formats.ts';
export type { FormatHint } from './formats.ts';
export { detectLanguage } from './extract.ts';

/**
 * The default budgets for one file: 30 s and 512 MB for its child, 100,000 characters of text kept
 * (MAX_EXTRACT_CHARS is the ceiling), files above 50 MiB refused as `too_large`.
 */
export const DEFAULT_EXTRACT_LIMITS = Object.freeze({
  timeoutMs: 30_000,
  memoryMb: 512,
  maxChars: 100_000,
  maxBytes: 50 * 1024 * 1024,
});
