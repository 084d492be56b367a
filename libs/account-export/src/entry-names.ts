/**
 * Entry names for the originals. A file name is whatever a user typed (or an attacker crafted), and a
 * ZIP entry's name becomes a path when it is extracted: so the name keeps only its last path segment
 * (no `../`, no absolute path, no drive), loses control and invisible formatting characters (no
 * terminal escapes, no right-to-left override hiding an `.exe`), the characters Windows refuses, and
 * is kept short. The file id in front makes it unique per file; names that still collide (the same
 * file twice, or names differing only in case, which a case-insensitive disk would merge) get a
 * ` (2)` suffix.
 */

/** Control characters, format characters (bidi overrides, zero-width), line and paragraph separators. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;
/** Characters a Windows file name cannot hold (path separators are handled before). */
const RESERVED = /[<>:"|?*]/g;
/** Longest name kept, in UTF-8 bytes (file systems allow 255; room is left for the id and a suffix). */
const MAX_NAME_BYTES = 200;
/** Longest extension kept whole when a name is shortened. */
const MAX_EXTENSION_CHARS = 16;
const FALLBACK = 'file';

/** The longest prefix of `text` (whole code points) that fits in `maxBytes` UTF-8 bytes. */
const truncateUtf8 = (text: string, maxBytes: number): string => {
  let out = '';
  let bytes = 0;
  for (const char of text) {
    const size = Buffer.byteLength(char);
    if (bytes + size > maxBytes) break;
    out += char;
    bytes += size;
  }
  return out;
};

const splitExtension = (name: string): { stem: string; extension: string } => {
  const dot = name.lastIndexOf('.');
  if (dot <= 0 || name.length - dot > MAX_EXTENSION_CHARS) return { stem: name, extension: '' };
  return { stem: name.slice(0, dot), extension: name.slice(dot) };
};

/** A file name that is one harmless path segment (never empty, never `.` or `..`). */
export const safeFileName = (name: string): string => {
  const cleaned = name.toWellFormed().normalize('NFC').replace(INVISIBLE, '');
  const segments = cleaned.split(/[/\\]/).map((s) => s.trim()).filter((s) => s !== '' && s !== '.' && s !== '..');
  // Windows drops trailing dots and spaces, so two names would meet on disk: drop them here.
  const last = (segments.at(-1) ?? '').replace(RESERVED, '_').replace(/[. ]+$/, '');
  if (last === '') return FALLBACK;
  if (Buffer.byteLength(last) <= MAX_NAME_BYTES) return last;
  const { stem, extension } = splitExtension(last);
  const shortened = truncateUtf8(stem, MAX_NAME_BYTES - Buffer.byteLength(extension)).trimEnd();
  return (shortened === '' ? FALLBACK : shortened) + extension;
};

/**
 * Hands out `originals/<fileId>-<safe name>` paths, each unique within one export (compared without
 * case). One per export: it remembers the names it gave.
 */
export const makeOriginalNamer = (): ((fileId: number, fileName: string) => string) => {
  const taken = new Set<string>();
  return (fileId, fileName) => {
    if (!Number.isSafeInteger(fileId) || fileId < 0) throw new TypeError(`file id must be a non-negative integer, got ${String(fileId)}`);
    const name = `${fileId}-${safeFileName(fileName)}`;
    const { stem, extension } = splitExtension(name);
    let candidate = name;
    for (let n = 2; taken.has(candidate.toLowerCase()); n++) candidate = `${stem} (${n})${extension}`;
    taken.add(candidate.toLowerCase());
    return `originals/${candidate}`;
  };
};
