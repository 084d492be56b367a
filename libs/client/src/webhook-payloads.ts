// What docshare POSTs to a webhook endpoint (issue 23): the Standard Webhooks body
// `{type, timestamp, data}` of each message type. The SDK is published on its own and depends on no
// docshare package, so this is its copy of @docshare/contracts' webhooks.ts catalogue (the names and
// fields are the wire's: snake_case); the SDK's tests check the two agree.

/** The event types an endpoint subscribes to. */
export const WEBHOOK_EVENT_TYPES = ['file.uploaded', 'file.processed', 'file.updated', 'file.deleted', 'comment.received', 'sale.completed'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
/** A message type: a subscribable event type, or the test message `webhooks.test(id)` sends. */
export type WebhookMessageType = WebhookEventType | 'webhook.test';

export interface FileUploadedMessage {
  file_id: number; owner_id: number; title: string; file_name: string; content_type: string; size: number;
  category_id: number; uploaded_at: string;
}
/** Sent once the text extractor's outcome is recorded and readable through the API: `extracted` or `failed`. */
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
  /** Only what changed. */
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

/** A delivery's body, discriminated by `type`. `timestamp` is the event's time (ISO 8601). */
export type WebhookPayload = { [T in WebhookMessageType]: { type: T; timestamp: string; data: WebhookDataByType[T] } }[WebhookMessageType];
