// client.account against a fetch that plays the server: erase (the password, the token), the
// status link and the export link fetched as the server gave them without the token, export and its
// state, the ZIP into memory, to a file (through `.part`) and to a stream, and errors as
// DocshareApiError.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { after, describe, it } from 'node:test';
import { createClient, DocshareApiError, type FetchLike } from '../src/index.ts';

interface Call { method: string; url: string; headers: Headers; body: unknown }

const ZIP = Buffer.concat([Buffer.from('PK\u0003\u0004'), Buffer.alloc(70_000, 7)]);
const EXPORT_ID = 'd1e8a3b5-7c2f-4e9a-b6d4-3a5c7e9f1b28';
const DOWNLOAD_URL = `https://files.example/api/V1/users/api-export/${EXPORT_ID}/content?user=4&expires=1&signature=ab`;
const STATUS_URL = 'https://files.example/api/V1/users/api-erase/status/9c4d?user=4&expires=1&signature=cd';

/** A client whose fetch records each request; the ZIP link answers the bytes, anything else the next of `answers` (the last repeats). */
function fake(...answers: [number, unknown][]): { client: ReturnType<typeof createClient>; calls: Call[] } {
  const calls: Call[] = [];
  const fetch_: FetchLike = async (input, init) => {
    const text = typeof init?.body === 'string' ? init.body : undefined;
    calls.push({ method: init?.method ?? 'GET', url: String(input), headers: new Headers(init?.headers), body: text === undefined ? undefined : JSON.parse(text) });
    if (String(input) === DOWNLOAD_URL) {
      return new Response(ZIP, { status: 200, headers: { 'Content-Type': 'application/zip', 'Content-Length': String(ZIP.byteLength) } });
    }
    const [status, body] = (answers.length > 1 ? answers.shift() : answers[0]) as [number, unknown];
    return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
  };
  return { client: createClient({ baseUrl: 'http://api.test', token: 'tok', fetch: fetch_, retryBaseDelayMs: 1 }), calls };
}

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('client.account', () => {
  it('erase POSTs the password with the token; the status link is fetched as given, without the token', async () => {
    const accepted = { status: 'success', message: 'Account erasure started', erasure_id: '9c4d', status_url: STATUS_URL };
    const { client, calls } = fake([202, accepted], [200, { status: 'success', erasure_id: '9c4d', state: 'done', files_deleted: 3, comments_redacted: 1 }]);
    assert.deepEqual(await client.account.erase({ password: 'correct horse battery' }), accepted);
    assert.equal(calls[0]?.method, 'POST');
    assert.equal(calls[0]?.url, 'http://api.test/api/V1/users/api-erase');
    assert.deepEqual(calls[0]?.body, { password: 'correct horse battery' });
    assert.equal(calls[0]?.headers.get('x-authorization'), 'Bearer tok');
    const state = await client.account.erasureStatus(STATUS_URL);
    assert.equal(state.state, 'done');
    assert.equal(state.files_deleted, 3);
    assert.equal(calls[1]?.url, STATUS_URL);
    assert.equal(calls[1]?.headers.get('x-authorization'), null, 'the signed link needs no token');
  });

  it('a wrong password is a DocshareApiError with the server\'s status and message', async () => {
    const { client } = fake([403, { status: 'error', message: 'Password is incorrect' }]);
    await assert.rejects(client.account.erase({ password: 'nope' }), (error: unknown) => {
      assert.ok(error instanceof DocshareApiError);
      assert.equal(error.status, 403);
      assert.equal(error.message, 'Password is incorrect');
      return true;
    });
  });

  it('export POSTs with the token and no body; exportStatus asks by export_id', async () => {
    const ready = { state: 'ready', download_url: DOWNLOAD_URL, sha256: 'a'.repeat(64), bytes: ZIP.byteLength, expires_at: '2025-11-30T14:06:27.000Z' };
    const { client, calls } = fake(
      [202, { status: 'success', message: 'Export started', export_id: EXPORT_ID }],
      [200, { status: 'success', export: { state: 'pending' } }],
      [200, { status: 'success', export: ready }],
    );
    assert.equal((await client.account.export()).export_id, EXPORT_ID);
    assert.equal(calls[0]?.method, 'POST');
    assert.equal(calls[0]?.url, 'http://api.test/api/V1/users/api-export');
    assert.equal(calls[0]?.body, undefined);
    assert.equal(calls[0]?.headers.get('x-authorization'), 'Bearer tok');
    assert.deepEqual((await client.account.exportStatus(EXPORT_ID)).export, { state: 'pending' });
    assert.deepEqual((await client.account.exportStatus(EXPORT_ID)).export, ready);
    assert.equal(calls[1]?.method, 'GET');
    assert.equal(calls[1]?.url, `http://api.test/api/V1/users/api-export?export_id=${EXPORT_ID}`);
  });

  it('an unknown export is a 404 DocshareApiError', async () => {
    const { client } = fake([404, { status: 'error', message: 'Export not found' }]);
    await assert.rejects(client.account.exportStatus(EXPORT_ID), (error: unknown) => error instanceof DocshareApiError && error.status === 404);
  });

  it('downloadExport: into memory, to a file (through .part), to a stream; never with the token', async () => {
    const { client, calls } = fake([200, {}]);
    const inMemory = await client.account.downloadExport(DOWNLOAD_URL);
    assert.ok(inMemory.data?.equals(ZIP));
    assert.equal(inMemory.bytes, ZIP.byteLength);

    const dir = await mkdtemp(path.join(tmpdir(), 'docshare-export-'));
    dirs.push(dir);
    const file = path.join(dir, 'export.zip');
    const seen: number[] = [];
    const toFile = await client.account.downloadExport(DOWNLOAD_URL, { to: file, onProgress: ({ loaded }) => seen.push(loaded) });
    assert.equal(toFile.path, file);
    assert.ok((await readFile(file)).equals(ZIP));
    assert.equal(toFile.data, undefined);
    assert.equal(seen.at(-1), ZIP.byteLength);
    await assert.rejects(stat(`${file}.part`), 'the part was renamed');

    const sink = new PassThrough();
    const chunks: Buffer[] = [];
    sink.on('data', (chunk: Buffer) => chunks.push(chunk));
    await client.account.downloadExport(DOWNLOAD_URL, { to: sink });
    assert.ok(Buffer.concat(chunks).equals(ZIP));
    for (const call of calls) {
      assert.equal(call.url, DOWNLOAD_URL);
      assert.equal(call.headers.get('x-authorization'), null);
    }
  });
});
