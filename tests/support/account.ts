// The account's way out (issue 24, design §3): erasure and export, as the black-box tests drive them.
import assert from 'node:assert/strict';
import type { Api, Json, RegisteredUser, Res } from './client.ts';
import { assertKeys, expectSuccess } from './expect.ts';
import { waitFor } from './wait.ts';

export const ERASE = '/api/V1/users/api-erase';
export const EXPORT = '/api/V1/users/api-export';
/** An erasure or an export runs in the background; on a busy machine (or after a restart) that takes a while. */
export const BACKGROUND = { timeoutMs: 180_000, intervalMs: 200 };

export interface ErasureAccepted {
  erasure_id: string;
  status_url: string;
}

/** POST api-erase with the user's password; the 202's body (checked field by field). */
export async function requestErasure(c: Api, user: RegisteredUser): Promise<ErasureAccepted> {
  return erasureAccepted(await c.json('POST', ERASE, user.token, { password: user.password }));
}

/** An erasure request's answer: a 202 with the erasure's id and status link (checked field by field). */
export function erasureAccepted(res: Res): ErasureAccepted {
  const body = expectSuccess(res, 202);
  assertKeys(body, ['status', 'message', 'erasure_id', 'status_url'], 'erasure answer');
  assert.equal(body.message, 'Account erasure started');
  assert.match(body.erasure_id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'erasure_id is a uuid');
  assert.equal(typeof body.status_url, 'string');
  return { erasure_id: body.erasure_id as string, status_url: body.status_url as string };
}

/** GET the signed status link (no token): `{state, files_deleted, comments_redacted}`. */
export async function erasureStatus(c: Api, accepted: ErasureAccepted): Promise<Json> {
  const body = expectSuccess(await c.raw('GET', accepted.status_url), 200);
  assertKeys(body, ['status', 'erasure_id', 'state', 'files_deleted', 'comments_redacted'], 'erasure status');
  assert.equal(body.erasure_id, accepted.erasure_id);
  assert.ok(body.state === 'pending' || body.state === 'done', `state: ${JSON.stringify(body.state)}`);
  return body;
}

/** Polls the status link until the erasure is done (through a restart: a failed request is retried); its last answer. */
export async function erasureDone(c: Api, accepted: ErasureAccepted): Promise<Json> {
  return await waitFor(async () => {
    const body = await erasureStatus(c, accepted);
    assert.equal(body.state, 'done', `erasure still ${body.state}`);
    return body;
  }, BACKGROUND);
}

/** POST api-export; the export_id of the 202. */
export async function requestExport(c: Api, user: RegisteredUser): Promise<string> {
  const body = expectSuccess(await c.json('POST', EXPORT, user.token), 202);
  assertKeys(body, ['status', 'message', 'export_id'], 'export answer');
  assert.equal(body.message, 'Export started');
  assert.match(body.export_id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'export_id is a uuid');
  return body.export_id as string;
}

export interface ReadyExport {
  state: 'ready';
  download_url: string;
  sha256: string;
  bytes: number;
  expires_at: string;
}

/** Polls GET api-export until the export is ready; its `export` object (checked field by field). */
export async function exportReady(c: Api, user: RegisteredUser, exportId: string): Promise<ReadyExport> {
  return await waitFor(async () => {
    const body = expectSuccess(await c.json('GET', `${EXPORT}?export_id=${encodeURIComponent(exportId)}`, user.token), 200);
    assertKeys(body, ['status', 'export'], 'export status');
    if (body.export.state === 'pending') {
      assertKeys(body.export, ['state'], 'pending export');
      return false;
    }
    assertKeys(body.export, ['state', 'download_url', 'sha256', 'bytes', 'expires_at'], 'ready export');
    assert.equal(body.export.state, 'ready');
    return body.export as ReadyExport;
  }, BACKGROUND);
}
