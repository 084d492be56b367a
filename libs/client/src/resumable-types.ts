// The resumable-upload protocol's requests and answers (issue 22: POST/GET/DELETE
// /api/V1/docs/api-uploads, PUT <part url>, POST .../complete), taken from the generated OpenAPI
// types (openapi.ts) like those of types.ts.
import type { JsonRequest, SuccessBody } from './types.ts';

/** The metadata of `POST /api/V1/docs/api-uploads` (fields as api-upload's form, with the file's name and size). */
export type CreateUploadRequest = JsonRequest<'createUpload'>;
/** 201 of `POST /api/V1/docs/api-uploads`: the session and a URL for every part. */
export type CreateUploadResponse = SuccessBody<'createUpload'>;
/** A part to PUT: its number (from 1) and its URL (opaque: presigned object-store URL or docshare's). */
export type PartUrl = CreateUploadResponse['parts'][number];
/** `GET /api/V1/docs/api-uploads/{upload_id}`. */
export type UploadSessionResponse = SuccessBody<'getUpload'>;
/** The session: state, received parts, fresh URLs of the missing ones (pending only), file_id once completed. */
export type UploadSession = UploadSessionResponse['upload'];
export type UploadState = UploadSession['state'];
/** A part the server holds: its size and etag (quoted, as S3 gives it). */
export type ReceivedPart = UploadSession['received'][number];
/** A part named to `complete`: its number and the ETag its PUT answered. */
export type CompletedPart = NonNullable<JsonRequest<'completeUpload'>['parts']>[number];
/** 201 of `complete`: api-upload's success body. */
export type CompleteUploadResponse = SuccessBody<'completeUpload'>;
/** 200 of `DELETE /api/V1/docs/api-uploads/{upload_id}`. */
export type AbortUploadResponse = SuccessBody<'abortUpload'>;
