import type {
  CloudEvent, CommentPosted, ContentExtracted, ContentExtractionFailed, FileDeleted, FilePurchased, FileUpdated, FileUploaded,
  WebhookEventType, WebhookTestRequested,
} from './events.ts';

/**
 * What docshare sends to a user's webhook endpoints (issue 23; docs/api-decisions.md, Webhooks;
 * OpenAPI's `webhooks`): one message per event of the log about the user's own files, as the
 * Standard Webhooks specification shapes it, `{type, timestamp, data}`, with thin data (ids and
 * what changed; never a file's text or bytes). The message's id (the `webhook-id` header, the
 * receiver's deduplication key) derives from the event's id, so a retry, a replay and a delivery
 * re-sent after a crash carry the same one.
 */

/** A message type: a subscribable event type, or the test message `POST …/{id}/test` sends. */
export type WebhookMessageType = WebhookEventType | 'webhook.test';

export interface FileUploadedMessage {
  file_id: number; owner_id: number; title: string; file_name: string; content_type: string; size: number;
  category_id: number; uploaded_at: string;
}
/** After the text extractor's outcome is recorded (and the read models have it): `extracted` or `failed`. */
export interface FileProcessedMessage {
  file_id: number; owner_id: number; status: 'extracted' | 'failed';
  /** The format read, null when it was not recognised. */
  format: string | null;
  /** Characters of text extracted (0 when failed). */
  characters: number;
  truncated: boolean;
  language: string | null;
  /** Why no text was extracted (null when extracted). */
  reason: string | null;
  processed_at: string;
}
export interface FileUpdatedMessage {
  file_id: number; owner_id: number;
  /** Only what changed: title, description, tags, enabled, for_sale, price. */
  changes: { title?: string; description?: string; tags?: string[]; enabled?: boolean; for_sale?: boolean; price?: number };
  updated_at: string;
}
export interface FileDeletedMessage { file_id: number; owner_id: number; deleted_at: string }
export interface CommentReceivedMessage {
  comment_id: number; file_id: number; owner_id: number; author_id: number; comment: string; posted_at: string;
}
export interface SaleCompletedMessage {
  sale_id: number; file_id: number; owner_id: number; buyer_id: number; price: number; purchased_at: string;
}
export interface WebhookTestMessage { webhook_id: number; owner_id: number; requested_at: string }

export interface WebhookDataByType {
  'file.uploaded': FileUploadedMessage;
  'file.processed': FileProcessedMessage;
  'file.updated': FileUpdatedMessage;
  'file.deleted': FileDeletedMessage;
  'comment.received': CommentReceivedMessage;
  'sale.completed': SaleCompletedMessage;
  'webhook.test': WebhookTestMessage;
}

/** The JSON body of a delivery. `timestamp` is the event's time. */
export type WebhookPayload = { [T in WebhookMessageType]: { type: T; timestamp: string; data: WebhookDataByType[T] } }[WebhookMessageType];

/** A message to send to the endpoints of `ownerId` subscribed to `payload.type`. */
export interface WebhookMessage {
  /** The `webhook-id`: `msg_` and the event's id without its dashes. */
  id: string;
  ownerId: number;
  payload: WebhookPayload;
}

/** The `webhook-id` of the message an event makes. */
export const webhookMessageId = (eventId: string): string => `msg_${eventId.replaceAll('-', '')}`;

/** A message id as `webhookMessageId` makes them (replay's `message_ids` are checked against it). */
export const WEBHOOK_MESSAGE_ID = /^msg_[0-9a-f]{32}$/;

const message = <T extends WebhookMessageType>(
  event: CloudEvent, ownerId: number, type: T, data: WebhookDataByType[T],
): WebhookMessage => ({ id: webhookMessageId(event.id), ownerId, payload: { type, timestamp: event.time, data } as WebhookPayload });

/**
 * The webhook message an event of the log makes, or null (views, downloads, registrations, uploads'
 * sessions...). Pure: the dispatcher, the tests and the documentation's examples share it.
 */
export const webhookMessageOf = (event: CloudEvent): WebhookMessage | null => {
  switch (event.type) {
    case 'docs.file.uploaded.v1': {
      const e = event.data as FileUploaded;
      return message(event, e.ownerId, 'file.uploaded', {
        file_id: e.fileId, owner_id: e.ownerId, title: e.title, file_name: e.originalFileName, content_type: e.contentType,
        size: e.size, category_id: e.categoryId, uploaded_at: e.uploadedAt,
      });
    }
    case 'docs.file.content-extracted.v1': {
      const e = event.data as ContentExtracted;
      return message(event, e.ownerId, 'file.processed', {
        file_id: e.fileId, owner_id: e.ownerId, status: 'extracted', format: e.format, characters: e.characters,
        truncated: e.truncated, language: e.language, reason: null, processed_at: e.extractedAt,
      });
    }
    case 'docs.file.content-extraction-failed.v1': {
      const e = event.data as ContentExtractionFailed;
      return message(event, e.ownerId, 'file.processed', {
        file_id: e.fileId, owner_id: e.ownerId, status: 'failed', format: e.format, characters: 0,
        truncated: false, language: null, reason: e.reason, processed_at: e.failedAt,
      });
    }
    case 'docs.file.updated.v1': {
      const e = event.data as FileUpdated;
      const c = e.changes;
      const changes: FileUpdatedMessage['changes'] = {};
      if (c.title !== undefined) changes.title = c.title;
      if (c.description !== undefined) changes.description = c.description;
      if (c.tags !== undefined) changes.tags = c.tags;
      if (c.enabled !== undefined) changes.enabled = c.enabled;
      if (c.forSale !== undefined) changes.for_sale = c.forSale;
      if (c.price !== undefined) changes.price = c.price;
      return message(event, e.ownerId, 'file.updated', { file_id: e.fileId, owner_id: e.ownerId, changes, updated_at: e.updatedAt });
    }
    case 'docs.file.deleted.v1': {
      const e = event.data as FileDeleted;
      return message(event, e.ownerId, 'file.deleted', { file_id: e.fileId, owner_id: e.ownerId, deleted_at: e.deletedAt });
    }
    case 'docs.comment.posted.v1': {
      const e = event.data as CommentPosted;
      return message(event, e.fileOwnerId, 'comment.received', {
        comment_id: e.commentId, file_id: e.fileId, owner_id: e.fileOwnerId, author_id: e.authorId, comment: e.comment, posted_at: e.postedAt,
      });
    }
    case 'docs.file.purchased.v1': {
      const e = event.data as FilePurchased;
      return message(event, e.ownerId, 'sale.completed', {
        sale_id: e.saleId, file_id: e.fileId, owner_id: e.ownerId, buyer_id: e.buyerId, price: e.price, purchased_at: e.purchasedAt,
      });
    }
    case 'docs.webhook.test_requested.v1': {
      const e = event.data as WebhookTestRequested;
      return message(event, e.ownerId, 'webhook.test', { webhook_id: e.webhookId, owner_id: e.ownerId, requested_at: e.requestedAt });
    }
    default:
      return null;
  }
};
