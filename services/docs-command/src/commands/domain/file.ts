import {
  conflict, forbidden, invalid, M, notFound,
  type FileChanges, type FileDeleted, type FileDownloaded, type FileDownloadedV2, type FilePurchased, type FileUpdated,
  type FileUploaded, type FileViewed, type FileViewedV2, type CommentPosted, type ViewerKey, type ContentExtracted, type ContentExtractionFailed,
  type ExtractFormat, type ExtractionFailure, type ExtractionReport,
} from '@docshare/contracts';
import { keptText } from './extraction-text.ts';

/**
 * The file events a decision can produce, before they get their envelope. (v1 views and downloads
 * are only read, from older logs: what is recorded now is ActivityBody, outside the stream.)
 */
export type FileEventBody =
  | { type: 'docs.file.uploaded.v1'; data: FileUploaded }
  | { type: 'docs.file.updated.v1'; data: FileUpdated }
  | { type: 'docs.file.deleted.v1'; data: FileDeleted }
  | { type: 'docs.file.downloaded.v1'; data: FileDownloaded }
  | { type: 'docs.file.viewed.v1'; data: FileViewed }
  | { type: 'docs.file.purchased.v1'; data: FilePurchased }
  | { type: 'docs.comment.posted.v1'; data: CommentPosted }
  | { type: 'docs.file.content-extracted.v1'; data: ContentExtracted }
  | { type: 'docs.file.content-extraction-failed.v1'; data: ContentExtractionFailed };

/** How many characters of the extracted text the file's state keeps (the view page shows its first lines). */
export const EXCERPT_CHARS = 2_000;

/** What the file's state remembers of its text extraction (the text itself stays in the event). */
export type ExtractionFacts =
  | { status: 'extracted'; format: ExtractFormat; extractor: string; characters: number; truncated: boolean; language: string | null; excerpt: string }
  | { status: 'failed'; format: ExtractFormat | null; reason: ExtractionFailure; detail: string };

export interface FileFacts extends FileUploaded {
  enabled: boolean;
  forSale: boolean;
  price: number;
  /** Absent while the text extractor has not reported on the file. */
  extraction?: ExtractionFacts;
  /** The file's sales, newest first (absent: none); see `saleTo`. */
  sales?: SaleRecord;
  /**
   * When what the file's public page shows last changed (its upload, an update, the extraction's
   * report): the page's Last-Modified. Absent: `uploadedAt`.
   */
  changedAt?: string;
}


/**
 * One sale of a file, linked to the one before it: a purchase adds a record in O(1) without
 * copying the others (a copied map would make folding a file with n sales O(n²)); looking a buyer
 * up walks the list, O(sales of this file), once per purchase command.
 */
export interface SaleRecord { saleId: number; buyerId: number; purchasedAt: string; previous?: SaleRecord }

/** The first sale of `file` to `buyerId` (a buyer buys a file once; streams recorded before that rule may hold repeats). */
export const saleTo = (file: FileFacts, buyerId: number): SaleRecord | undefined => {
  let first: SaleRecord | undefined;
  for (let sale = file.sales; sale; sale = sale.previous) if (sale.buyerId === buyerId) first = sale;
  return first;
};

/** The sale `saleId` of `file`, if it is one. */
export const saleById = (file: FileFacts, saleId: number): SaleRecord | undefined => {
  for (let sale = file.sales; sale; sale = sale.previous) if (sale.saleId === saleId) return sale;
  return undefined;
};

export type FileState =
  | { status: 'none' }
  | { status: 'active'; file: FileFacts }
  | { status: 'deleted'; file: FileFacts };

export const initialFileState = (): FileState => ({ status: 'none' });

/** Folds one event into the file's state. */
export const evolveFile = (state: FileState, event: FileEventBody): FileState => {
  switch (event.type) {
    case 'docs.file.uploaded.v1':
      return { status: 'active', file: { ...event.data, enabled: true, forSale: false, price: 0, changedAt: event.data.uploadedAt } };
    case 'docs.file.updated.v1': {
      if (state.status !== 'active') return state;
      const { title, description, tags, forSale, price, enabled } = event.data.changes;
      const file = { ...state.file, changedAt: event.data.updatedAt };
      if (title !== undefined) file.title = title;
      if (description !== undefined) file.description = description;
      if (tags !== undefined) file.tags = tags;
      if (forSale !== undefined) file.forSale = forSale;
      if (price !== undefined) file.price = price;
      if (enabled !== undefined) file.enabled = enabled;
      return { status: 'active', file };
    }
    case 'docs.file.deleted.v1':
      return state.status === 'active' ? { status: 'deleted', file: state.file } : state;
    case 'docs.file.purchased.v1': {
      if (state.status !== 'active') return state;
      const { saleId, buyerId, purchasedAt } = event.data;
      const sales: SaleRecord = { saleId, buyerId, purchasedAt, ...(state.file.sales ? { previous: state.file.sales } : {}) };
      return { status: 'active', file: { ...state.file, sales } };
    }
    case 'docs.file.content-extracted.v1': {
      if (state.status !== 'active') return state;
      const { format, extractor, characters, truncated, language, text, extractedAt } = event.data;
      // A copy: V8 makes a slice a view that keeps the whole text alive in every cached state.
      const excerpt = structuredClone(text.slice(0, EXCERPT_CHARS));
      return { status: 'active', file: { ...state.file, changedAt: extractedAt, extraction: { status: 'extracted', format, extractor, characters, truncated, language, excerpt } } };
    }
    case 'docs.file.content-extraction-failed.v1': {
      if (state.status !== 'active') return state;
      const { format, reason, detail, failedAt } = event.data;
      return { status: 'active', file: { ...state.file, changedAt: failedAt, extraction: { status: 'failed', format, reason, detail } } };
    }
    default:
      return state;
  }
};

export type FileCommand =
  | { type: 'UploadFile'; file: FileUploaded }
  | { type: 'UpdateFile'; fileId: number; actorId: number; changes: FileChanges; now: string }
  | { type: 'DeleteFile'; fileId: number; actorId: number; now: string }
  | { type: 'PurchaseFile'; fileId: number; actorId: number; saleId: number; now: string }
  | { type: 'PostComment'; fileId: number; actorId: number; commentId: number; comment: string; now: string }
  | { type: 'RecordExtraction'; fileId: number; blobKey: string; report: ExtractionReport; now: string };

/** The file as `actorId` may see it: owners see their disabled files, nobody sees deleted ones. */
const visibleTo = (state: FileState, actorId: number | null): FileFacts => {
  if (state.status !== 'active') throw notFound(M.fileNotFound);
  if (!state.file.enabled && state.file.ownerId !== actorId) throw notFound(M.fileNotFound);
  return state.file;
};

/**
 * Whether `actorId` may buy the file: a `new` sale, or a `repeat` (a buyer buys a file once: a
 * repeat records nothing, and is answered with the first sale, saleTo, even once the file is no
 * longer for sale); throws the refusal otherwise. The purchase use case asks it before taking a
 * sale id, so refusals and repeats take none.
 */
export const purchaseOf = (state: FileState, actorId: number): 'new' | 'repeat' => {
  const file = visibleTo(state, actorId);
  if (file.ownerId === actorId) throw forbidden(M.ownFilePurchase);
  if (saleTo(file, actorId)) return 'repeat';
  if (!file.forSale) throw conflict(M.notForSale);
  return 'new';
};

const ownedBy = (state: FileState, actorId: number): FileFacts => {
  const file = visibleTo(state, actorId);
  if (file.ownerId !== actorId) throw forbidden(M.notOwner);
  return file;
};

/** Only the changes that differ from the file as it is. */
const effectiveChanges = (file: FileFacts, changes: FileChanges): FileChanges => {
  const out: FileChanges = {};
  if (changes.title !== undefined && changes.title !== file.title) out.title = changes.title;
  if (changes.description !== undefined && changes.description !== file.description) out.description = changes.description;
  if (changes.tags !== undefined && changes.tags.join('\u0000') !== file.tags.join('\u0000')) out.tags = changes.tags;
  if (changes.forSale !== undefined && changes.forSale !== file.forSale) out.forSale = changes.forSale;
  if (changes.price !== undefined && changes.price !== file.price) out.price = changes.price;
  if (changes.enabled !== undefined && changes.enabled !== file.enabled) out.enabled = changes.enabled;
  return out;
};

/** Decides what a command on one file records; throws a DocshareError when it may not happen. Pure. */
export const decideFile = (command: FileCommand, state: FileState): FileEventBody[] => {
  switch (command.type) {
    case 'UploadFile':
      // The same bytes recorded already (a resumable upload's completion repeated or raced): done.
      if (state.status !== 'none' && state.file.blobKey === command.file.blobKey) return [];
      if (state.status !== 'none') throw conflict('File already exists');
      return [{ type: 'docs.file.uploaded.v1', data: command.file }];
    case 'UpdateFile': {
      const file = ownedBy(state, command.actorId);
      const changes = effectiveChanges(file, command.changes);
      if (Object.keys(changes).length === 0) return [];
      return [{
        type: 'docs.file.updated.v1',
        data: { fileId: file.fileId, ownerId: file.ownerId, changes, updatedAt: command.now },
      }];
    }
    case 'DeleteFile': {
      const file = ownedBy(state, command.actorId);
      return [{
        type: 'docs.file.deleted.v1',
        data: { fileId: file.fileId, ownerId: file.ownerId, blobKey: file.blobKey, deletedAt: command.now },
      }];
    }
    case 'PurchaseFile': {
      // Decided on the stream at its version, so two purchases at once (any replica) make one sale.
      if (purchaseOf(state, command.actorId) === 'repeat') return [];
      const file = visibleTo(state, command.actorId);
      return [{
        type: 'docs.file.purchased.v1',
        data: {
          fileId: file.fileId, ownerId: file.ownerId, saleId: command.saleId, buyerId: command.actorId,
          price: file.price, purchasedAt: command.now,
        },
      }];
    }
    case 'RecordExtraction': {
      // Once per file: a redelivered or repeated report, a deleted file, or bytes that are no
      // longer the file's record nothing (the extractor's work is at least once).
      if (state.status === 'none') throw notFound(M.fileNotFound);
      if (state.status === 'deleted' || state.file.extraction || state.file.blobKey !== command.blobKey) return [];
      const { fileId, ownerId, blobKey } = state.file;
      const { report } = command;
      if (report.ok) {
        const { format, extractor, language, durationMs } = report;
        // Text is bounded by the bytes the file counts against its owner's quota (TEXT_CHARS_PER_BYTE).
        const { text, cut } = keptText(report.text, state.file.size);
        return [{
          type: 'docs.file.content-extracted.v1',
          data: { fileId, ownerId, blobKey, format, extractor, characters: text.length, truncated: report.truncated || cut, language, text, durationMs, extractedAt: command.now },
        }];
      }
      const { format, reason, detail, durationMs } = report;
      return [{
        type: 'docs.file.content-extraction-failed.v1',
        data: { fileId, ownerId, blobKey, format, reason, detail, durationMs, failedAt: command.now },
      }];
    }
    case 'PostComment': {
      const file = visibleTo(state, command.actorId);
      if (command.comment.trim() === '') throw invalid(M.commentRequired);
      return [{
        type: 'docs.comment.posted.v1',
        data: {
          commentId: command.commentId, fileId: file.fileId, fileOwnerId: file.ownerId, fileTitle: file.title,
          authorId: command.actorId, comment: command.comment, postedAt: command.now,
        },
      }];
    }
  }
};

/**
 * A view or a download: recorded outside the file's stream (EventStore.appendUnversioned), so
 * that they never conflict with each other nor with the file's commands. Decided on the file's
 * state like a command, but nothing later depends on it: no version to hold.
 */
export type ActivityBody =
  | { type: 'docs.file.viewed.v2'; data: FileViewedV2 }
  | { type: 'docs.file.downloaded.v2'; data: FileDownloadedV2 };

/** A view of the file's public page by `viewer`: the file as shown (active, enabled), and the view. Pure. */
export const decideView = (state: FileState, viewer: ViewerKey, now: string): { file: FileFacts; event: ActivityBody } => {
  const file = visibleTo(state, null);
  return { file, event: { type: 'docs.file.viewed.v2', data: { fileId: file.fileId, ownerId: file.ownerId, viewer, viewedAt: now } } };
};

/** A download authorized for `actorId`: the file, and the download. Pure. */
export const decideDownload = (state: FileState, actorId: number, now: string): { file: FileFacts; event: ActivityBody } => {
  // The spec's download rule names disabled files for everyone, so no visibility check here.
  if (state.status !== 'active') throw notFound(M.fileNotFound);
  const file = state.file;
  if (file.forSale || !file.enabled) throw forbidden(M.notDownloadable);
  return {
    file,
    event: { type: 'docs.file.downloaded.v2', data: { fileId: file.fileId, ownerId: file.ownerId, downloadedBy: actorId, downloadedAt: now } },
  };
};
