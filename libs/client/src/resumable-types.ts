// The resumable-upload protocol's requests and answers (issue 22: POST/GET/DELETE
// /api/V1/docs/api-uploads, PUT <part url>, POST .../complete). Written by hand from the team's
// wire design until the regenerated openapi.ts carries the five operations; then each type is
// taken from it like those of types.ts.
import type { UploadResponse } from './types.ts';

/** The metadata of `POST /api/V1/docs/api-uploads` (fields as api-upload's form, `size` a number). */
export interface CreateUploadRequest {
  file_name: string;
  size: number;
  content_type?: string;
  title: string;
  description: string;
  tags: string;
  cc_license: string;
  category_id?: string;
  new_category_name?: string;
  category_description?: string;
  category_tags?: string;
  video?: string;
}

/** A part to PUT: its number (from 1) and its URL (opaque: presigned object-store URL or docshare's). */
export interface PartUrl {
  part_number: number;
  url: string;
}

/** A part the server holds: its size and etag (quoted, as S3 gives it). */
export interface ReceivedPart {
  part_number: number;
  size: number;
  etag: string;
}

/** 201 of `POST /api/V1/docs/api-uploads`: the session and a URL for every part. */
export interface CreateUploadResponse {
  status: 'success';
  message: string;
  upload_id: string;
  part_size: number;
  part_count: number;
  /** ISO date: the URLs and the session end then. */
  expires_at: string;
  parts: PartUrl[];
}

export type UploadState = 'pending' | 'completed' | 'aborted' | 'expired';

/** The session as `GET /api/V1/docs/api-uploads/{upload_id}` gives it. */
export interface UploadSession {
  upload_id: string;
  state: UploadState;
  file_name: string;
  size: number;
  part_size: number;
  part_count: number;
  expires_at: string;
  received: ReceivedPart[];
  /** Pending only: the parts not yet received, freshly signed; [] otherwise. */
  parts: PartUrl[];
  /** When completed. */
  file_id?: string;
}

export interface UploadSessionResponse {
  status: 'success';
  upload: UploadSession;
}

/** A part named to `complete`: its number and the ETag its PUT answered. */
export interface CompletedPart {
  part_number: number;
  etag: string;
}

/** 201 of `complete`: api-upload's success body. */
export type CompleteUploadResponse = UploadResponse;

/** 200 of `DELETE /api/V1/docs/api-uploads/{upload_id}`. */
export interface AbortUploadResponse {
  status: 'success';
  message: string;
}
