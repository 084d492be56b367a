import type { EventType } from '@docshare/contracts';

/** What a personal field reads when its person's key is gone (issue 24). */
export const REDACTED = '[deleted]';

/** How a field is redacted: text as REDACTED, a list as [], a nullable value (a video URL) as null. */
export type FieldKind = 'string' | 'list' | 'nullable';

export interface PersonalField {
  /** Where the value is in the event's data. */
  path: readonly string[];
  /** The data field holding the id of the person the value belongs to (whose key seals it). */
  owner: string;
  kind: FieldKind;
}

const of = (owner: string, fields: Record<string, FieldKind>): PersonalField[] =>
  Object.entries(fields).map(([path, kind]) => ({ path: path.split('.'), owner, kind }));

/**
 * Every personal field of every event, and whose it is: what is sealed at append and opened where
 * events are read. Not personal, so in clear: ids, sizes, times, licences, prices, counters,
 * content types, blob keys, and categories (a category's name is shared vocabulary of every
 * user's files, not about its creator: docs/api-decisions.md). A comment holds two people's data:
 * its text is its author's, the file title its file owner's.
 */
export const PERSONAL_FIELDS: Readonly<Partial<Record<EventType, readonly PersonalField[]>>> = {
  'docs.user.registered.v1': of('userId', { name: 'string', email: 'string' }),
  'docs.file.uploaded.v1': of('ownerId', {
    ownerName: 'string', title: 'string', description: 'string', tags: 'list', videoUrl: 'nullable', originalFileName: 'string',
  }),
  'docs.file.updated.v1': of('ownerId', { 'changes.title': 'string', 'changes.description': 'string', 'changes.tags': 'list' }),
  'docs.comment.posted.v1': [...of('authorId', { comment: 'string' }), ...of('fileOwnerId', { fileTitle: 'string' })],
  'docs.file.content-extracted.v1': of('ownerId', { text: 'string' }),
  // Why no text came out: a library's message, which might quote the document.
  'docs.file.content-extraction-failed.v1': of('ownerId', { detail: 'string' }),
  'docs.upload.started.v1': of('ownerId', {
    fileName: 'string', title: 'string', description: 'string', tags: 'list', videoUrl: 'nullable',
  }),
  'docs.webhook.registered.v1': of('ownerId', { url: 'string', description: 'string' }),
  'docs.webhook.updated.v1': of('ownerId', { 'changes.url': 'string', 'changes.description': 'string' }),
};

export const redactedValue = (kind: FieldKind): unknown => (kind === 'string' ? REDACTED : kind === 'list' ? [] : null);
