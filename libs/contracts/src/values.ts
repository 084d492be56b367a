import { LICENSES, type License } from './messages.ts';

/** A trimmed string, or null when the value is not a string or is blank. */
export const text = (value: unknown): string | null => {
  if (typeof value !== 'string') return null;
  const trimmed = value.trim();
  return trimmed === '' ? null : trimmed;
};

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
