/**
 * Every event docshare records, in one CloudEvents 1.0 structured-JSON envelope (decisions §14).
 * `subject` is the stream (entity) id, e.g. `file-12`. The Kafka key is `partitionKeyOf(event)`:
 * the user whose read-model documents the event changes, so one stream's events stay in order and
 * one partition carries every change to a given document. `streamversion` is the event's 1-based
 * position in its stream (what an append checks for conflicts). A redelivered or replayed event
 * changes no read model: each read-model update carries the log position of the event it comes
 * from (`StoredEvent.position`), and a document applies it only when it has applied nothing at that
 * position or later (the ReadStore's `applyBatch`); the search index keeps a file's
 * `streamversion` as its document's version and ignores an older or equal one.
 */
export interface CloudEvent<TType extends string = string, TData = unknown> {
  specversion: '1.0';
  id: string;
  source: string;
  type: TType;
  time: string;
  subject: string;
  datacontenttype: 'application/json';
  data: TData;
  /** Id shared by everything one client request caused (the gateway's X-Request-Id). */
  correlationid: string;
  /** Id of what directly caused this event: the request id for commands. */
  causationid: string;
  streamversion: number;
  /**
   * `v1` when the event's personal fields are sealed under their person's data key (issue 24,
   * @docshare/personal-data: PERSONAL_FIELDS names them); absent on events written before that,
   * whose fields are in clear until `npm run migrate -- encrypt-personal-data` rewrites them.
   */
  personaldata?: 'v1';
}

export interface UserRegistered { userId: number; name: string; email: string; registeredAt: string }
/**
 * `POST /api/V1/users/api-erase` (issue 24): the account stops working now (login and tokens
 * refused); the accounts process manager then deletes the user's files, webhooks and stored
 * answers, destroys their data key and records `docs.user.erased.v1`.
 */
export interface UserErasureRequested { userId: number; erasureId: string; requestedAt: string }
/**
 * The erasure is done: every file of the user deleted, their data key destroyed (every personal
 * field sealed under it now reads `[deleted]`). The comments they wrote stay counted for the
 * files' owners; `commentsRedacted` of them now read `[deleted]`.
 */
export interface UserErased { userId: number; erasureId: string; filesDeleted: number; commentsRedacted: number; erasedAt: string }
/** `POST /api/V1/users/api-export`: the accounts process manager builds the ZIP in the background. */
export interface UserExportRequested { userId: number; exportId: string; requestedAt: string }
export interface CategoryCreated {
  categoryId: number; name: string; description: string; tags: string[]; createdBy: number; createdAt: string;
}
export interface FileUploaded {
  fileId: number; ownerId: number; ownerName: string; title: string; description: string; tags: string[];
  categoryId: number; categoryName: string; license: string; videoUrl: string | null;
  originalFileName: string; contentType: string; size: number; blobKey: string; uploadedAt: string;
}
export interface FileChanges {
  title?: string; description?: string; tags?: string[]; forSale?: boolean; price?: number; enabled?: boolean;
}
export interface FileUpdated { fileId: number; ownerId: number; changes: FileChanges; updatedAt: string }
export interface FileDeleted { fileId: number; ownerId: number; blobKey: string; deletedAt: string }
export interface FileDownloaded { fileId: number; ownerId: number; downloadedBy: number; downloadedAt: string }
export interface FileViewed { fileId: number; ownerId: number; viewedAt: string }
/**
 * Who viewed or downloaded, privately (docs/api-decisions.md: views and viewers): `u:<userId>` when
 * the request carried a valid token, else `a:` and an HMAC of the client address and User-Agent
 * under a salt of the UTC day (forgotten after two days): one visitor is one key within a day, and
 * nobody can tell who it was, nor link two days.
 */
export type ViewerKey = string;
/**
 * A view of a file's public page (v2): recorded outside the file's stream (`streamversion` 0,
 * `subject` the file's stream id), so views never conflict with each other nor with the file's
 * commands; carries who viewed. v1 (in the file's stream, no viewer) is still read from older logs.
 */
export interface FileViewedV2 { fileId: number; ownerId: number; viewer: ViewerKey; viewedAt: string }
/** A download authorized (v2): as v1, recorded outside the file's stream like a v2 view. */
export interface FileDownloadedV2 { fileId: number; ownerId: number; downloadedBy: number; downloadedAt: string }
export interface FilePurchased {
  fileId: number; ownerId: number; saleId: number; buyerId: number; price: number; purchasedAt: string;
}
/** The formats text is extracted from (docs/api-decisions.md: text extraction). */
export const EXTRACT_FORMATS = ['pdf', 'docx', 'odt', 'pptx', 'html', 'markdown', 'text', 'csv'] as const;
export type ExtractFormat = (typeof EXTRACT_FORMATS)[number];
/** Why no text was extracted from a file. */
export const EXTRACTION_FAILURES = ['unsupported_type', 'encrypted', 'corrupt', 'too_large', 'timeout', 'memory', 'error'] as const;
export type ExtractionFailure = (typeof EXTRACTION_FAILURES)[number];
/**
 * Text extracted from an uploaded file's bytes. The text is kept here, in the event (at most
 * EXTRACT_MAX_CHARS characters), so a rebuild replays it without extracting again.
 */
export interface ContentExtracted {
  fileId: number; ownerId: number; blobKey: string; format: ExtractFormat;
  /** Library and version that read the format, e.g. `pdfjs-dist@6.5.438`. */
  extractor: string;
  /** Characters (UTF-16 code units) of `text`. */
  characters: number;
  /** The document held more text than the cap; `text` is its beginning. */
  truncated: boolean;
  /** ISO 639-3 code of the text's language (franc), null when too short or unclear. */
  language: string | null;
  text: string;
  durationMs: number;
  extractedAt: string;
}
/** No text could be extracted from an uploaded file: the upload itself stands. */
export interface ContentExtractionFailed {
  fileId: number; ownerId: number; blobKey: string; format: ExtractFormat | null;
  reason: ExtractionFailure;
  /** A short human-readable explanation (never a stack). */
  detail: string;
  durationMs: number;
  failedAt: string;
}
/** What the text extractor reports for a file, before docs-command records it (as one of the two events above). */
export type ExtractionReport =
  | { ok: true; format: ExtractFormat; extractor: string; text: string; truncated: boolean; language: string | null; durationMs: number }
  | { ok: false; format: ExtractFormat | null; reason: ExtractionFailure; detail: string; durationMs: number };
export interface CommentPosted {
  commentId: number; fileId: number; fileOwnerId: number; fileTitle: string; authorId: number;
  comment: string; postedAt: string;
}

/** The category a resumable upload names, as validated when it started (created at completion when new). */
export type UploadCategory =
  | { kind: 'existing'; categoryId: number }
  | { kind: 'new'; name: string; description: string; tags: string[] };
/**
 * A resumable upload started (POST /api/V1/docs/api-uploads): its own stream `upload-<uploadId>`.
 * The file id is taken now and the blob key names it (`f<fileId>-<uploadId>`), so the file the
 * completion records, and any bytes left behind, are known from the start. The bytes go to the
 * object store's multipart upload `storeUploadId`; completion records the unchanged
 * `docs.file.uploaded.v1` on the file's stream (docs/api-decisions.md, resumable uploads).
 */
export interface UploadStarted {
  uploadId: string; ownerId: number; fileId: number; blobKey: string; storeUploadId: string;
  fileName: string; contentType: string; size: number; partSize: number; partCount: number;
  title: string; description: string; tags: string[]; license: string; category: UploadCategory; videoUrl: string | null;
  startedAt: string; expiresAt: string;
}
/** Why a resumable upload ended without a file. */
export const UPLOAD_ABORT_REASONS = ['aborted', 'expired', 'size_mismatch'] as const;
export type UploadAbortReason = (typeof UPLOAD_ABORT_REASONS)[number];
/** A resumable upload ended without a file: its parts are removed and its quota released. */
export interface UploadAborted { uploadId: string; ownerId: number; fileId: number; reason: UploadAbortReason; abortedAt: string }

/**
 * A webhook endpoint's signing secret as the event log keeps it: sealed (AES-256-GCM under
 * WEBHOOK_SECRET_KEY, the webhook's id as associated data), never in clear (issue 23). `kid` names
 * the sealing key; the rest is base64url.
 */
export interface SealedSecret { kid: string; iv: string; ct: string; tag: string }
/** The notifications a webhook endpoint may subscribe to (docs/api-decisions.md, Webhooks; the payloads: webhooks.ts). */
export const WEBHOOK_EVENT_TYPES = ['file.uploaded', 'file.processed', 'file.updated', 'file.deleted', 'comment.received', 'sale.completed'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
/** Why an endpoint was disabled by docshare (`manual`: its owner's PATCH enabled=false is an update, not this). */
export const WEBHOOK_DISABLE_REASONS = ['gone', 'failing'] as const;
export type WebhookDisableReason = (typeof WEBHOOK_DISABLE_REASONS)[number];
/** An endpoint registered: all of a user's endpoints share the stream `webhooks-<ownerId>` (the per-user limit is decided there). */
export interface WebhookRegistered {
  webhookId: number; ownerId: number; url: string; events: WebhookEventType[]; description: string; secret: SealedSecret; createdAt: string;
}
export interface WebhookChanges { url?: string; events?: WebhookEventType[]; description?: string; enabled?: boolean }
export interface WebhookUpdated { webhookId: number; ownerId: number; changes: WebhookChanges; updatedAt: string }
export interface WebhookDeleted { webhookId: number; ownerId: number; deletedAt: string }
/** A new secret signs from now on; the previous one signs beside it until `previousValidUntil` (24 h). */
export interface WebhookSecretRotated { webhookId: number; ownerId: number; secret: SealedSecret; previousValidUntil: string; rotatedAt: string }
/** docshare stopped delivering to an endpoint: it answered 410 Gone, or failed every attempt for WEBHOOK_DISABLE_AFTER. */
export interface WebhookDisabled { webhookId: number; ownerId: number; reason: WebhookDisableReason; disabledAt: string }
/** `POST …/{id}/test`: the dispatcher sends one `webhook.test` message, whose id derives from this event's. */
export interface WebhookTestRequested { webhookId: number; ownerId: number; requestedAt: string }
/**
 * `POST …/{id}/replay`: the dispatcher sends again the endpoint's messages whose event time is in
 * [since, until) or whose ids are listed, with their original `webhook-id`.
 */
export type WebhookReplayRequested = { webhookId: number; ownerId: number; requestedAt: string } & (
  | { since: string; until: string; messageIds?: undefined }
  | { messageIds: string[]; since?: undefined; until?: undefined });

export interface EventDataByType {
  'docs.user.registered.v1': UserRegistered;
  'docs.user.erasure_requested.v1': UserErasureRequested;
  'docs.user.erased.v1': UserErased;
  'docs.user.export_requested.v1': UserExportRequested;
  'docs.category.created.v1': CategoryCreated;
  'docs.file.uploaded.v1': FileUploaded;
  'docs.file.updated.v1': FileUpdated;
  'docs.file.deleted.v1': FileDeleted;
  'docs.file.downloaded.v1': FileDownloaded;
  'docs.file.viewed.v1': FileViewed;
  'docs.file.downloaded.v2': FileDownloadedV2;
  'docs.file.viewed.v2': FileViewedV2;
  'docs.file.purchased.v1': FilePurchased;
  'docs.comment.posted.v1': CommentPosted;
  'docs.file.content-extracted.v1': ContentExtracted;
  'docs.file.content-extraction-failed.v1': ContentExtractionFailed;
  'docs.upload.started.v1': UploadStarted;
  'docs.upload.aborted.v1': UploadAborted;
  'docs.webhook.registered.v1': WebhookRegistered;
  'docs.webhook.updated.v1': WebhookUpdated;
  'docs.webhook.deleted.v1': WebhookDeleted;
  'docs.webhook.secret_rotated.v1': WebhookSecretRotated;
  'docs.webhook.disabled.v1': WebhookDisabled;
  'docs.webhook.test_requested.v1': WebhookTestRequested;
  'docs.webhook.replay_requested.v1': WebhookReplayRequested;
}
export type EventType = keyof EventDataByType;

/** A docshare event of one known type, discriminated on `type`. */
export type DocshareEvent = { [T in EventType]: CloudEvent<T, EventDataByType[T]> }[EventType];

/** Event types recorded outside any stream (`streamversion` 0): EventStore.appendUnversioned. */
export const UNVERSIONED_EVENT_TYPES: ReadonlySet<string> = new Set<EventType>(['docs.file.viewed.v2', 'docs.file.downloaded.v2']);

/** The viewer key of a signed-in user (ViewerKey). */
export const userViewer = (userId: number): ViewerKey => `u:${userId}`;

/** An event as stored: `position` is its place in the store's global order (1-based). */
export interface StoredEvent<E extends CloudEvent = DocshareEvent> {
  position: number;
  event: E;
}

export const EVENT_SOURCE = '/docshare/docs-command';

export const streamIds = {
  user: (id: number): string => `user-${id}`,
  file: (id: number): string => `file-${id}`,
  category: (id: number): string => `category-${id}`,
  /** A resumable upload's session: `upload-<uploadId>` (a UUID). */
  upload: (id: string): string => `upload-${id}`,
  /** Every webhook endpoint of one user: `webhooks-<ownerId>` (at most WEBHOOK_MAX_PER_USER live ones, decided on it). */
  webhooks: (ownerId: number): string => `webhooks-${ownerId}`,
};

/**
 * The bus partition key of an event: `user-<id>` of the user whose read-model documents it changes
 * (a file's events and the comments on it: the file's owner; a registration: the user), else its
 * subject (categories). So each read-model document is written from one partition only, by one
 * consumer at a time, in log order: what lets a projection guard a document with one number
 * (the position of the last event applied) on a store whose updates are not atomic. A stream's
 * events share the key, so they keep their order too.
 */
export const partitionKeyOf = (event: CloudEvent): string => {
  const data = event.data as Partial<Record<'ownerId' | 'fileOwnerId' | 'userId', unknown>> | null;
  const owner = event.type === 'docs.comment.posted.v1' ? data?.fileOwnerId
    : event.type.startsWith('docs.user.') ? data?.userId
    : event.type.startsWith('docs.file.') || event.type.startsWith('docs.upload.') || event.type.startsWith('docs.webhook.') ? data?.ownerId
    : undefined;
  return typeof owner === 'number' && Number.isSafeInteger(owner) ? `user-${owner}` : event.subject;
};
