// Small HTTP helpers for the black-box tests. Every request goes through the SDK's low-level
// request() (libs/client): one exchange, no retry, no header of its own, never throwing on a status.
import { randomBytes } from 'node:crypto';
import { readResponse, request as sdkRequest } from '@docshare/client';
import type { Server } from './server.ts';

// Response bodies are inspected field by field in the tests, which assert their types themselves.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export interface Res {
  status: number;
  headers: Headers;
  /** Parsed JSON when the body is JSON, else undefined. */
  body: Json;
  /** Raw body text. */
  text: string;
}

export interface RegisteredUser {
  userId: number;
  token: string;
  email: string;
  password: string;
  name: string;
}

export type Fields = Record<string, string | undefined>;

let counter = 0;
export function unique(prefix = 'u'): string {
  counter += 1;
  return `${prefix}${process.pid}x${counter}x${randomBytes(4).toString('hex')}`;
}

/** A random word of lowercase letters only (good for full-text and typo tests). */
export function randomWord(length = 10): string {
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  const bytes = randomBytes(length);
  let w = '';
  for (const b of bytes) w += letters[b % 26];
  return w;
}

export async function toRes(res: Response): Promise<Res> {
  return await readResponse(res);
}

export interface RequestOptions {
  headers?: Record<string, string>;
  /** Sent as-is (a string, bytes or FormData); overrides `body`. */
  raw?: string | Uint8Array | FormData;
}

export const DEFAULT_UPLOAD: Record<string, string> = {
  title: 'A test document',
  description: 'A description of the test document',
  tags: 'alpha,beta',
  cc_license: 'CC BY',
  new_category_name: 'Testing',
  category_description: 'Documents made by the tests',
  category_tags: 'test,auto',
  video: '',
};

export function api(server: Pick<Server, 'baseUrl'>) {
  const base = server.baseUrl;

  async function request(method: string, path: string, token?: string, body?: unknown, opts: RequestOptions = {}): Promise<Res> {
    return await sdkRequest({
      baseUrl: base, method, path, redirect: 'manual',
      ...(token !== undefined ? { token } : {}),
      ...(opts.raw !== undefined ? { body: opts.raw } : body !== undefined ? { json: body } : {}),
      ...(opts.headers !== undefined ? { headers: opts.headers } : {}),
    });
  }

  async function register(overrides: { name?: string; email?: string; password?: string } = {}): Promise<RegisteredUser> {
    const name = overrides.name ?? `Tester ${unique('n')}`;
    const email = overrides.email ?? `${unique('user')}@example.com`;
    const password = overrides.password ?? `pw-${randomBytes(8).toString('hex')}`;
    const res = await request('POST', '/api/V1/users/api-register', undefined, { name, email, password });
    if (res.status !== 201 && res.status !== 200) {
      throw new Error(`register failed: ${res.status} ${res.text}`);
    }
    const b = res.body as { user_id: number; token: string };
    return { userId: b.user_id, token: b.token, email, password, name };
  }

  async function login(email: string, password: string): Promise<Res> {
    return await request('POST', '/api/V1/users/api-login', undefined, { email, password });
  }

  function uploadForm(fields: Fields, fileBytes?: Uint8Array | null, fileName = 'file.bin', contentType = 'application/octet-stream'): FormData {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) {
      if (v !== undefined) form.append(k, v);
    }
    if (fileBytes !== undefined && fileBytes !== null) {
      form.append('file', new Blob([fileBytes], { type: contentType }), fileName);
    }
    return form;
  }

  /** Multipart upload. `fileBytes === null` sends no file part. */
  async function upload(token: string | undefined, fields: Fields, fileBytes: Uint8Array | null = new TextEncoder().encode('hello'), fileName = 'file.txt', contentType = 'text/plain', opts: RequestOptions = {}): Promise<Res> {
    return await request('POST', '/api/V1/docs/api-upload', token, undefined, { ...opts, raw: uploadForm(fields, fileBytes, fileName, contentType) });
  }

  /** Upload with DEFAULT_UPLOAD merged under `fields`; fails the test unless it succeeds. Returns the file id (string). */
  async function uploadOk(token: string, fields: Fields = {}, fileBytes: Uint8Array = new TextEncoder().encode('hello world'), fileName = 'doc.txt', contentType = 'text/plain'): Promise<{ fileId: string; res: Res }> {
    const res = await upload(token, { ...DEFAULT_UPLOAD, ...fields }, fileBytes, fileName, contentType);
    if (res.status !== 201 && res.status !== 200) throw new Error(`upload failed: ${res.status} ${res.text}`);
    return { fileId: String(res.body.file_id), res };
  }

  async function json(method: string, path: string, token?: string, body?: unknown, opts: RequestOptions = {}): Promise<Res> {
    return await request(method, path, token, body, opts);
  }

  async function raw(method: string, pathOrUrl: string, init: RequestInit = {}): Promise<Res> {
    const url = /^https?:/.test(pathOrUrl) ? pathOrUrl : base + pathOrUrl;
    const res = await fetch(url, { method, redirect: 'manual', ...init });
    return await toRes(res);
  }

  /** Raw bytes of a response (for content downloads). */
  async function bytes(url: string, init: RequestInit = {}): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
    const res = await fetch(url, { redirect: 'manual', ...init });
    const buf = Buffer.from(await res.arrayBuffer());
    return { status: res.status, headers: res.headers, bytes: buf };
  }

  // Endpoint shorthands.
  const download = (token: string | undefined, fileId: string | number | undefined): Promise<Res> =>
    request('GET', `/api/V1/docs/api-download${fileId === undefined ? '' : `?file_id=${encodeURIComponent(String(fileId))}`}`, token);
  const del = (token: string | undefined, id: unknown): Promise<Res> => request('DELETE', '/api/V1/docs/api-delete', token, { id });
  const search = (token: string | undefined, body: unknown): Promise<Res> => request('POST', '/api/V1/stats/api-search', token, body);
  const stats = (token: string | undefined): Promise<Res> => request('POST', '/api/V1/stats/api-stats', token);
  const files = (token: string | undefined, query = ''): Promise<Res> =>
    request('GET', `/api/V1/users/api-files${query === '' ? '' : `?${query}`}`, token);
  const comments = (token: string | undefined): Promise<Res> => request('POST', '/api/V1/users/api-comments', token);
  const comment = (token: string | undefined, body: unknown): Promise<Res> => request('POST', '/api/V1/docs/api-comment', token, body);
  const update = (token: string | undefined, body: unknown): Promise<Res> => request('POST', '/api/V1/docs/api-update', token, body);
  const purchase = (token: string | undefined, body: unknown): Promise<Res> => request('POST', '/api/V1/docs/api-purchase', token, body);
  const categories = (token: string | undefined): Promise<Res> => request('GET', '/api/V1/docs/api-categories', token);
  const view = (fileId: string | number): Promise<Res> => raw('GET', `/docs/${fileId}`);

  return {
    baseUrl: base,
    request,
    register,
    login,
    upload,
    uploadForm,
    uploadOk,
    json,
    raw,
    bytes,
    download,
    del,
    search,
    stats,
    files,
    comments,
    comment,
    update,
    purchase,
    categories,
    view,
  };
}

export type Api = ReturnType<typeof api>;
