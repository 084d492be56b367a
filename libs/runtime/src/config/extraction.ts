import { DEFAULT_EXTRACT_LIMITS, MAX_EXTRACT_CHARS } from '@docshare/extract';
import { intVar } from '@docshare/http';
import { concern } from './concern.ts';

/** The text extractor's budgets (`EXTRACT_*`), under their variables' names. */
export interface ExtractSettings {
  EXTRACT_TIMEOUT_MS: number; EXTRACT_MEMORY_MB: number; EXTRACT_MAX_CHARS: number; EXTRACT_MAX_BYTES: number; EXTRACT_CONCURRENCY: number;
  EXTRACT_OWNER_BACKLOG: number;
}

/** The extraction budgets: the text extractor's, and `npm start`'s (README: configuration). */
export const extraction = () => concern({
  /** Longest one file's extraction may take before its child process is killed (a failure: `timeout`). */
  EXTRACT_TIMEOUT_MS: intVar(DEFAULT_EXTRACT_LIMITS.timeoutMs, 100),
  /** Most memory (resident) one extraction child may use before it is killed (`memory`). */
  EXTRACT_MEMORY_MB: intVar(DEFAULT_EXTRACT_LIMITS.memoryMb, 64),
  /** Most characters of text kept per file (the rest is cut, `truncated`); the text travels in one event. */
  EXTRACT_MAX_CHARS: intVar(DEFAULT_EXTRACT_LIMITS.maxChars, 1, MAX_EXTRACT_CHARS),
  /** Files larger than this are not read (`too_large`). */
  EXTRACT_MAX_BYTES: intVar(DEFAULT_EXTRACT_LIMITS.maxBytes, 1),
  /** Extraction child processes, i.e. files read at once; 0: one per core, as memory allows (defaultConcurrency). */
  EXTRACT_CONCURRENCY: intVar(0, 0),
  /** Most files of one owner taken up ahead of the settled position; the rest wait in the log, in order. */
  EXTRACT_OWNER_BACKLOG: intVar(100, 1),
}, (v): ExtractSettings => ({ ...v }));
