import {
  invalid, notFound, LIMITS, M, oneLine, parseHttpUrl, parseLicense, parseTags, positiveId, present, storableText, text,
  unixLines, type FileChanges,
} from '@docshare/contracts';
import type { Registration } from '../commands/users.ts';
import type { CategoryChoice, UploadMetadata } from '../commands/uploads.ts';
import type { PartRef, StartUpload } from '../commands/resumable.ts';
import { cleanFileName } from './upload-form.ts';

/**
 * What a text field keeps of its line breaks: `one` (titles, names, tags) turns tabs and line
 * breaks into spaces, `many` (descriptions, comments) keeps `\n` and `\t`. Every other control
 * character is refused, never stripped (docs/api-decisions.md, "Text without control characters").
 */
type Lines = 'one' | 'many';
const linesOf = (value: string, lines: Lines): string => (lines === 'one' ? oneLine(value) : unixLines(value));

interface TextRule { missing: string; max: number; tooLong: string; invalidCharacters: string; lines: Lines }

const required = (value: unknown, rule: TextRule): string => {
  const t = text(value);
  if (t === null) throw invalid(rule.missing);
  const kept = linesOf(t, rule.lines);
  if (kept.length > rule.max) throw invalid(rule.tooLong);
  if (!storableText(kept)) throw invalid(rule.invalidCharacters);
  return kept;
};

const NAME: TextRule = { missing: M.nameRequired, max: LIMITS.name, tooLong: M.nameTooLong, invalidCharacters: M.nameInvalidCharacters, lines: 'one' };
const TITLE: TextRule = { missing: M.titleRequired, max: LIMITS.title, tooLong: M.titleTooLong, invalidCharacters: M.titleInvalidCharacters, lines: 'one' };
const DESCRIPTION: TextRule = {
  missing: M.descriptionRequired, max: LIMITS.description, tooLong: M.descriptionTooLong, invalidCharacters: M.descriptionInvalidCharacters, lines: 'many',
};
const COMMENT: TextRule = { missing: M.commentRequired, max: LIMITS.comment, tooLong: M.commentTooLong, invalidCharacters: M.commentInvalidCharacters, lines: 'many' };

/** The first `max` UTF-16 units of `value`, never half of a surrogate pair. */
const cut = (value: string, max: number): string =>
  (value.length > max && /[\ud800-\udbff]/.test(value.charAt(max - 1)) ? value.slice(0, max - 1) : value.slice(0, max));

const tagsOf = (value: unknown): string[] => {
  const raw = text(value);
  if (raw === null) throw invalid(M.tagsRequired);
  if (raw.length > LIMITS.tags) throw invalid(M.tagsTooLong);
  if (!storableText(raw)) throw invalid(M.tagsInvalidCharacters);
  const tags = parseTags(raw);
  if (tags.length === 0) throw invalid(M.tagsRequired);
  return tags;
};

/** Register input, checked in the order decisions §2 lists its messages. */
export const parseRegistration = (body: Record<string, unknown>): Registration => {
  const name = required(body.name, NAME);
  const email = text(body.email);
  if (email === null) throw invalid(M.emailRequired);
  if (email.length > LIMITS.email || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || !storableText(email)) throw invalid(M.invalidEmail);
  if (typeof body.password !== 'string' || body.password === '') throw invalid(M.passwordRequired);
  if (body.password.length < LIMITS.passwordMin) throw invalid(M.passwordTooShort);
  if (body.password.length > LIMITS.password) throw invalid(M.passwordTooLong);
  return { name, email: email.toLowerCase(), password: body.password };
};

/** Login input: the e-mail (lower-cased) and password. */
export const parseLogin = (body: Record<string, unknown>): { email: string; password: string } => {
  const email = text(body.email);
  if (email === null) throw invalid(M.emailRequired);
  if (typeof body.password !== 'string' || body.password === '') throw invalid(M.passwordRequired);
  return { email: email.toLowerCase(), password: body.password };
};

/** Upload fields, checked in the order decisions §4 lists its messages (the file itself is checked first, by the caller). */
export const parseUploadMetadata = (fields: Record<string, string>): UploadMetadata => {
  const title = required(fields.title, TITLE);
  const description = required(fields.description, DESCRIPTION);
  const tags = tagsOf(fields.tags);
  const license = parseLicense(fields.cc_license);
  if (license === null) throw invalid(M.invalidLicense);

  let category: CategoryChoice;
  if (present(fields.category_id)) {
    const categoryId = positiveId(fields.category_id);
    if (categoryId === null) throw notFound(M.categoryNotFound);
    category = { kind: 'existing', categoryId };
  } else {
    const name = text(fields.new_category_name);
    if (name === null) throw invalid(M.categoryRequired);
    if (name.length > LIMITS.categoryName) throw invalid(M.categoryNameTooLong);
    if (!storableText(name)) throw invalid(M.categoryNameInvalidCharacters);
    const categoryDescription = unixLines(text(fields.category_description) ?? '');
    if (!storableText(categoryDescription)) throw invalid(M.categoryDescriptionInvalidCharacters);
    const categoryTags = text(fields.category_tags) ?? '';
    if (!storableText(categoryTags)) throw invalid(M.categoryTagsInvalidCharacters);
    category = {
      kind: 'new', name: name.replace(/\s+/g, ' '),
      description: cut(categoryDescription, LIMITS.categoryDescription), tags: parseTags(cut(categoryTags, LIMITS.tags)),
    };
  }

  let videoUrl: string | null = null;
  const video = text(fields.video);
  if (video !== null) {
    videoUrl = video.length <= LIMITS.videoUrl ? parseHttpUrl(video) : null;
    if (videoUrl === null) throw invalid(M.invalidVideo);
  }
  return { title, description, tags, license, category, videoUrl };
};

/** The file id of a request (`file_id` or `id`), or the spec's messages. */
export const parseFileId = (value: unknown): number => {
  // A value of the wrong JSON type counts as missing, like every other field.
  if (!present(value) || (typeof value !== 'string' && typeof value !== 'number')) throw invalid(M.fileIdRequired);
  const id = positiveId(value);
  if (id === null) throw notFound(M.fileNotFound);
  return id;
};

/** The changes of an update request (decisions §11); at least one is required. */
export const parseChanges = (body: Record<string, unknown>): FileChanges => {
  const changes: FileChanges = {};
  if (body.for_sale !== undefined) {
    if (typeof body.for_sale !== 'boolean') throw invalid(M.forSaleNotBoolean);
    changes.forSale = body.for_sale;
  }
  if (body.price !== undefined) {
    const price = typeof body.price === 'string' && body.price.trim() !== '' ? Number(body.price) : body.price;
    if (typeof price !== 'number' || !Number.isFinite(price) || price < 0 || price > 1e12) throw invalid(M.invalidPrice);
    changes.price = Math.round(price * 100) / 100;
  }
  if (body.enabled !== undefined) {
    if (typeof body.enabled !== 'boolean') throw invalid(M.enabledNotBoolean);
    changes.enabled = body.enabled;
  }
  if (body.title !== undefined) changes.title = required(body.title, TITLE);
  if (body.description !== undefined) changes.description = required(body.description, DESCRIPTION);
  if (body.tags !== undefined) changes.tags = tagsOf(body.tags);
  if (Object.keys(changes).length === 0) throw invalid(M.nothingToUpdate);
  return changes;
};

/** A comment's text (decisions §10). */
export const parseComment = (value: unknown): string => required(value, COMMENT);

/** Header-safe media types: `type/subtype` with optional parameters, bounded. */
const MEDIA_TYPE = /^[\w.+-]{1,127}\/[\w.+-]{1,127}(\s*;[\x20-\x7e]{0,500})?$/;

/** A JSON field as the form would carry it: strings as they are, numbers as digits; anything else absent. */
const fieldText = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : typeof value === 'number' && Number.isFinite(value) ? String(value) : undefined;

/**
 * POST api-uploads: the file's name, size and type, then its metadata exactly as api-upload checks
 * its form fields (same messages, same order). The name is kept like a form's file name.
 */
export const parseStartUpload = (body: Record<string, unknown>): StartUpload => {
  const rawName = text(body.file_name);
  if (rawName === null) throw invalid(M.fileNameRequired);
  const size = typeof body.size === 'string' && /^\d{1,16}$/.test(body.size) ? Number(body.size) : body.size;
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 1) throw invalid(M.invalidUploadSize);
  let contentType = 'application/octet-stream';
  if (present(body.content_type)) {
    if (typeof body.content_type !== 'string' || !MEDIA_TYPE.test(body.content_type.trim())) throw invalid(M.invalidContentType);
    contentType = body.content_type.trim();
  }
  const fields: Record<string, string> = {};
  for (const name of ['title', 'description', 'tags', 'cc_license', 'category_id', 'new_category_name', 'category_description', 'category_tags', 'video']) {
    const value = fieldText(body[name]);
    if (value !== undefined) fields[name] = value;
  }
  const metadata = parseUploadMetadata(fields);
  return { fileName: cleanFileName(rawName), size, contentType, metadata };
};

/** POST api-uploads/{id}/complete: `parts` (absent: every part received), each `{part_number, etag}` once. */
export const parseParts = (body: Record<string, unknown>): PartRef[] | undefined => {
  if (body.parts === undefined || body.parts === null) return undefined;
  if (!Array.isArray(body.parts) || body.parts.length > 10_000) throw invalid(M.invalidParts);
  const seen = new Set<number>();
  return body.parts.map((part: unknown) => {
    const { part_number: partNumber, etag } = (typeof part === 'object' && part !== null ? part : {}) as Record<string, unknown>;
    if (typeof partNumber !== 'number' || !Number.isSafeInteger(partNumber) || partNumber < 1 || seen.has(partNumber)) throw invalid(M.invalidParts);
    if (typeof etag !== 'string' || etag.length === 0 || etag.length > 200) throw invalid(M.invalidParts);
    seen.add(partNumber);
    return { partNumber, etag };
  });
};

/** A part number in a part URL's path: 1 to 10,000, else null. */
export const parsePartNumber = (value: string | undefined): number | null => {
  const n = /^[1-9]\d{0,4}$/.test(value ?? '') ? Number(value) : NaN;
  return n <= 10_000 ? n : null;
};

/** `POST api-erase`: the account's password, asked again before anything is erased. */
export const parseErasure = (body: Record<string, unknown>): string => {
  const { password } = body;
  if (typeof password !== 'string' || password === '') throw invalid(M.passwordRequired);
  return password;
};
