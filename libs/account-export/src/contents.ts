import type { Readable } from 'node:stream';

/** One of the user's files whose bytes go into `originals/`: opened only when its turn comes, so one is read at a time. */
export interface ExportOriginal {
  fileId: number;
  /** The name the user gave the file: anything (it is made safe for the entry's path). */
  fileName: string;
  open(): Promise<Readable>;
}

/**
 * What an export holds, each JSON part as the API answers it. `originals` is iterated lazily, one at
 * a time, so a caller can page through a user's files without holding the list.
 */
export interface ExportContents {
  account: unknown;
  files: unknown[];
  commentsWritten: unknown[];
  purchases: unknown[];
  stats: unknown;
  /** The daily statistics, or null where there are none (then no `daily.json`). */
  daily: unknown[] | null;
  originals: AsyncIterable<ExportOriginal>;
}

/** One original as written: its path inside the ZIP, and the SHA-256 (hex) and length of its bytes. */
export interface ExportedOriginal { path: string; sha256: string; bytes: number }

/** What `writeAccountExport` wrote: the whole ZIP's SHA-256 (hex) and length, and each original. */
export interface ExportResult { sha256: string; bytes: number; originals: ExportedOriginal[] }

/** The last entry, `manifest.json`: how a user checks the originals they got. */
export interface ExportManifest {
  exported_at: string;
  originals: Array<{ path: string; file_id: number; sha256: string; bytes: number }>;
}
