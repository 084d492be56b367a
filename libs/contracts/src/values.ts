import { LICENSES, type License } from './messages.ts';

/** A trimmed string, or null when the value is not a string or is blank. */
export const text = (value: unknown): string | null => {
  if (typeof value !== 'string') return null;
  const trimmed = value.trim();
  return trimmed === '' ? null : trimmed;
};

/**
 * Characters no stored text may hold: C0 controls other than tab, line feed and carriage return,
 * DEL, C1 controls (a terminal acts on ESC and CSI: clearing a screen, setting a window title,
 * writing the clipboard), and the bidi embeddings, overrides and isolates U+202A-U+202E and
 * U+2066-U+2069, which reorder what a reader sees ("Trojan Source"). The marks U+200E, U+200F and
 * U+061C stay: right-to-left text needs them and they reorder nothing beyond one neutral character.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const FORBIDDEN_CHARACTERS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/** True when `value` may be stored as text: no forbidden character and no lone surrogate. */
export const storableText = (value: string): boolean => value.isWellFormed() && !FORBIDDEN_CHARACTERS.test(value);

const FORBIDDEN_EVERYWHERE = new RegExp(FORBIDDEN_CHARACTERS.source, 'g');

/** `value` made storable by dropping what `storableText` refuses (a lone surrogate becomes U+FFFD). */
export const withoutForbidden = (value: string): string => value.toWellFormed().replace(FORBIDDEN_EVERYWHERE, '');

/** A one-line field's text: each run of tabs and line breaks becomes one space. */
export const oneLine = (value: string): string => value.replace(/[\t\n\r]+/g, ' ');

/** A multi-line field's text with its line breaks as `\n` (a browser's textarea sends `\r\n`). */
export const unixLines = (value: string): string => value.replace(/\r\n?/g, '\n');

/** A positive integer id from a JSON number or a string of digits; null when it cannot be one. */
export const positiveId = (value: unknown): number | null => {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value > 0 ? value : null;
  if (typeof value !== 'string' || !/^\s*\d{1,15}\s*$/.test(value)) return null;
  const id = Number(value.trim());
  return id > 0 ? id : null;
};

/** True when the value was sent at all (not undefined, null or a blank string). */
export const present = (value: unknown): boolean =>
  value !== undefined && value !== null && !(typeof value === 'string' && value.trim() === '');

/** Comma-separated tags: trimmed, empty pieces and case-insensitive duplicates dropped. */
export const parseTags = (value: string): string[] => {
  const seen = new Set<string>();
  const tags: string[] = [];
  for (const piece of value.split(',')) {
    const tag = piece.trim().replace(/\s+/g, ' ');
    if (tag === '' || seen.has(tag.toLowerCase())) continue;
    seen.add(tag.toLowerCase());
    tags.push(tag);
  }
  return tags;
};

export const joinTags = (tags: readonly string[]): string => tags.join(',');

const licenseByKey = new Map<string, License>(LICENSES.map((l) => [l.toLowerCase(), l]));

/** The canonical license label for a label sent in any case and spacing, or null. */
export const parseLicense = (value: unknown): License | null => {
  if (typeof value !== 'string') return null;
  const key = value.trim().replace(/\s+/g, ' ').replace(/\s*-\s*/g, '-').toLowerCase();
  return licenseByKey.get(key) ?? null;
};

/** An absolute http(s) URL, or null. */
export const parseHttpUrl = (value: string): string | null => {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.toString() : null;
  } catch {
    return null;
  }
};

/** `YYYY-MM-DD` of an ISO instant, in UTC. */
export const utcDate = (iso: string): string => new Date(iso).toISOString().slice(0, 10);

/** The public view page of a file. */
export const viewUrl = (publicBaseUrl: string, fileId: number): string => `${publicBaseUrl}/docs/${fileId}`;
