// @docshare/client: a typed client of the docshare API (types generated from its OpenAPI document).
export { createClient, CLIENT_VERSION } from './client.ts';
export type {
  CallOptions, ClientOptions, DailyStatsInput, DocshareClient, DownloadOptions, DownloadResult, Id, ResponseInfo, ResumableEvent, ResumableOptions,
  RetryInfo, TopFilesInput, TrendingInput, UploadInput, UploadOptions,
} from './client.ts';
export { DEFAULT_PARALLEL, DEFAULT_PART_ATTEMPTS, DEFAULT_RESUMABLE_THRESHOLD, partLength, rangeSource, sendParts } from './resumable.ts';
export type { PartRetryInfo, RangeSource, SendPartsOptions } from './resumable.ts';
export type * from './resumable-types.ts';
export { defaultUploadStateDir, readUploadState, removeUploadState, uploadStatePath, writeUploadState } from './upload-state.ts';
export type { StoredUpload, UploadIdentity } from './upload-state.ts';
export { DocshareApiError, DocshareNetworkError, describeCause, parseRetryAfter, SearchWalkError } from './errors.ts';
export { MAX_RESPONSE_BYTES, request, readResponse, resolveUrl, ResponseTooLargeError } from './request.ts';
export type { FetchLike, RawRequest, RawResponse } from './request.ts';
export { downloadContent, parseContentRange, partPathOf, safeFileName } from './download.ts';
export type { ContentOptions, ContentResult, Progress } from './download.ts';
export { contentTypeFor, multipartBody, openFile } from './multipart.ts';
export type { FileSource, MultipartBody, OpenedFile } from './multipart.ts';
export type * from './types.ts';
export { webhooksApi } from './webhooks.ts';
export { accountApi } from './account.ts';
export type * from './account.ts';
export type * from './webhooks.ts';
export { WEBHOOK_EVENT_TYPES } from './webhook-payloads.ts';
export type * from './webhook-payloads.ts';
export { verifyWebhook, WebhookVerificationError } from './verify-webhook.ts';
export type { VerifyWebhookOptions, WebhookHeaders } from './verify-webhook.ts';
