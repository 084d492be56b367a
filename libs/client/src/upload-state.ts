// Where the SDK keeps the sessions of resumable uploads on disk, so that an upload interrupted by a
// crash, a lost connection or Ctrl-C can be taken up by a later process (`resume: true`,
// `docshare upload --resume`). One small JSON file per upload, named after a hash of what makes
// the upload the same one: the file's absolute path, size and mtime, and the server's base URL
// (a file changed since, or another server, is another upload). Written once the session is
// created, removed once it is completed, aborted or gone.
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** What identifies a file's upload to a server. */
export interface UploadIdentity {
  /** The file's absolute path. */
  path: string;
  size: number;
  mtimeMs: number;
  baseUrl: string;
}

/** The stored session of one upload. */
export interface StoredUpload extends UploadIdentity {
  upload_id: string;
  part_size: number;
  part_count: number;
  expires_at: string;
  created_at: string;
}

/**
 * The directory sessions are kept in by default: `$XDG_STATE_HOME/docshare/uploads`, else
 * `~/.local/state/docshare/uploads` (state, not configuration: the XDG base directory rules).
 */
export function defaultUploadStateDir(env: Record<string, string | undefined> = process.env): string {
  const xdg = env['XDG_STATE_HOME'];
  const base = xdg !== undefined && path.isAbsolute(xdg) ? xdg : path.join(env['HOME'] ?? os.homedir(), '.local', 'state');
  return path.join(base, 'docshare', 'uploads');
}

/** The session file of an upload in `dir`. */
export function uploadStatePath(dir: string, id: UploadIdentity): string {
  const key = createHash('sha256').update(JSON.stringify([id.path, id.size, id.mtimeMs, id.baseUrl.replace(/\/+$/, '')])).digest('hex');
  return path.join(dir, `${key.slice(0, 40)}.json`);
}

const isStored = (v: unknown): v is StoredUpload => {
  const s = v as Partial<StoredUpload> | null;
  return s !== null && typeof s === 'object' && typeof s.upload_id === 'string' && typeof s.part_size === 'number'
    && typeof s.part_count === 'number' && typeof s.size === 'number';
};

/** The stored session of `id` in `dir`, or undefined (none, or a file that is not one). */
export async function readUploadState(dir: string, id: UploadIdentity): Promise<StoredUpload | undefined> {
  let text: string;
  try {
    text = await readFile(uploadStatePath(dir, id), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const parsed: unknown = JSON.parse(text);
    return isStored(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** Writes the session (mode 0600: its id lets its owner's token resume it), whole, then renamed. Returns the file. */
export async function writeUploadState(dir: string, state: StoredUpload): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = uploadStatePath(dir, state);
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    await writeFile(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
    await rename(tmp, file);
  } finally {
    await rm(tmp, { force: true });
  }
  return file;
}

export async function removeUploadState(dir: string, id: UploadIdentity): Promise<void> {
  await rm(uploadStatePath(dir, id), { force: true });
}
