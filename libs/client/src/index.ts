// @docshare/client: a typed client of the docshare API (types generated from its OpenAPI document).
export { createClient, CLIENT_VERSION } from './client.ts';
export type {
  CallOptions, ClientOptions, DailyStatsInput, DocshareClient, DownloadOptions, DownloadResult, Id, ResponseInfo, RetryInfo,
  TopFilesInput, TrendingInput, UploadInput, UploadOptions,
} from './client.ts';
export { DocshareApiError, DocshareNetworkError, describeCause, parseRetryAfter, SearchWalkError } from './errors.ts';
export { MAX_RESPONSE_BYTES, request, readResponse, resolveUrl, ResponseTooLargeError } from './request.ts';
export type { FetchLike, RawRequest, RawResponse } from './request.ts';
export { downloadContent, parseContentRange, partPathOf, safeFileName } from './download.ts';
export type { ContentOptions, ContentResult, Progress } from './download.ts';
export { contentTypeFor, multipartBody, openFile } from './multipart.ts';
export type { FileSource, MultipartBody, OpenedFile } from './multipart.ts';
export type * from './types.ts';
