import {
  invalid, notFound, LIMITS, M, parseHttpUrl, parseLicense, parseTags, positiveId, present, text,
  type FileChanges, type License,
} from '@docshare/contracts';

const required = (value: unknown, missing: string, max: number, tooLong: string): string => {
  const t = text(value);
  if (t === null) throw invalid(missing);
  if (t.length > max) throw invalid(tooLong);
  return t;
};

const tagsOf = (value: unknown): string[] => {
  const raw = text(value);
  if (raw === null) throw invalid(M.tagsRequired);
  if (raw.length > LIMITS.tags) throw invalid(M.tagsTooLong);
  const tags = parseTags(raw);
  if (tags.length === 0) throw invalid(M.tagsRequired);
  return tags;
};

export interface Registration { name: string; email: string; password: string }

/** Register input, checked in the order decisions §2 lists its messages. */
export const parseRegistration = (body: Record<string, unknown>): Registration => {
  const name = required(body.name, M.nameRequired, LIMITS.name, M.nameTooLong);
  const email = text(body.email);
  if (email === null) throw invalid(M.emailRequired);
  if (email.length > LIMITS.email || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) throw invalid(M.invalidEmail);
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

export type CategoryChoice =
  | { kind: 'existing'; categoryId: number }
  | { kind: 'new'; name: string; description: string; tags: string[] };

export interface UploadMetadata {
  title: string;
  description: string;
  tags: string[];
  license: License;
  category: CategoryChoice;
  videoUrl: string | null;
}

/** Upload fields, checked in the order decisions §4 lists its messages (the file itself is checked first, by the caller). */
export const parseUploadMetadata = (fields: Record<string, string>): UploadMetadata => {
  const title = required(fields.title, M.titleRequired, LIMITS.title, M.titleTooLong);
  const description = required(fields.description, M.descriptionRequired, LIMITS.description, M.descriptionTooLong);
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
    const categoryDescription = (text(fields.category_description) ?? '').slice(0, LIMITS.categoryDescription);
    const categoryTags = parseTags((text(fields.category_tags) ?? '').slice(0, LIMITS.tags));
    category = { kind: 'new', name: name.replace(/\s+/g, ' '), description: categoryDescription, tags: categoryTags };
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
  if (body.title !== undefined) changes.title = required(body.title, M.titleRequired, LIMITS.title, M.titleTooLong);
  if (body.description !== undefined) {
    changes.description = required(body.description, M.descriptionRequired, LIMITS.description, M.descriptionTooLong);
  }
  if (body.tags !== undefined) changes.tags = tagsOf(body.tags);
  if (Object.keys(changes).length === 0) throw invalid(M.nothingToUpdate);
  return changes;
};

/** A comment's text (decisions §10). */
export const parseComment = (value: unknown): string => {
  const comment = text(value);
  if (comment === null) throw invalid(M.commentRequired);
  if (comment.length > LIMITS.comment) throw invalid(M.commentTooLong);
  return comment;
};
