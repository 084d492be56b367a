// Resumable uploads (issue 22; docs/api-decisions.md "Resumable uploads"): POST api-uploads starts a
// session with a URL per part, each part is PUT to its URL, GET answers what arrived and fresh URLs
// for the rest, complete records the file, DELETE aborts. Seen from the client only, in the mode the
// file runs in: embedded (docshare's signed part URLs), distributed (docshare's, and presigned MinIO
// URLs when the server is given BLOB_PUBLIC_URL: the MinIO the stack runs, MINIO_ENDPOINT).
//
// Small sizes keep it quick: parts of 5 MiB (UPLOAD_PART_BYTES' minimum), MAX_UPLOAD_BYTES = 1 MiB
// so a file of 3 parts is far beyond what api-upload takes, a quota of 16 MiB, MAX_RESUMABLE_BYTES
// of 20 MiB. Every wait polls until what it waits for happens; nothing asserts how long anything took.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { randomWord, unique, type Json, type RegisteredUser, type Res } from '../support/client.ts';
import { assertIdString, assertKeys, expectError, expectSuccess } from '../support/expect.ts';
import { enc, useServer, type Fixture } from '../support/fixture.ts';
import {
  byNumber, createBody, interruptedPut, MiB, missing, partOf, putPart, sha256, uploads, type PartUrl, type Received,
} from '../support/resumable.ts';
import { localOnly, TARGET } from '../support/server.ts';
import { eventually } from '../support/wait.ts';

const PART = 5 * MiB;
const QUOTA = 16 * MiB;
const MAX_RESUMABLE = 20 * MiB;
/** Three parts (5 MiB, 5 MiB, 1 MiB + 123 B): more than MAX_UPLOAD_BYTES, less than the quota. */
const BIG = 2 * PART + MiB + 123;
/** Three parts whose last is small (1,000 B): cheap to send again and again, or to get wrong. */
const SMALL_LAST = 2 * PART + 1000;
const ENV = {
  UPLOAD_PART_BYTES: String(PART), MAX_UPLOAD_BYTES: String(MiB), STORAGE_QUOTA_BYTES: String(QUOTA),
  MAX_RESUMABLE_BYTES: String(MAX_RESUMABLE),
};
/** Waits on projections and sweepers: bounded generously, never measured. */
const SETTLE = { timeoutMs: 60_000, intervalMs: 200 };

const M = {
  started: 'Upload started',
  fileNameRequired: 'file_name is required',
  invalidSize: 'size must be a positive integer',
  invalidContentType: 'content_type must be a media type such as application/pdf',
  tooLarge: 'File too large for a resumable upload',
  quota: 'Storage quota exceeded',
  categoryNotFound: 'Category not found',
  notFound: 'Upload not found',
  aborted: 'Upload aborted',
  wasAborted: 'Upload was aborted',
  expired: 'Upload has expired',
  completed: 'Upload is already completed',
  invalidParts: 'parts must be a list of {part_number, etag}',
  partsMissing: 'Upload is missing parts',
  sizeMismatch: 'Uploaded size does not match the declared size',
  badLink: 'Invalid or expired upload link',
  partSize: 'Part size does not match the upload',
  partReceived: 'Part received',
  uploaded: 'File uploaded successfully',
};

/** Where part URLs point: docshare's signed URLs, or (distributed, BLOB_PUBLIC_URL set) MinIO's presigned ones. */
interface Flavour { name: string; presigned: boolean; env: Record<string, string | undefined> }
const MINIO = process.env['MINIO_ENDPOINT']?.replace(/\/+$/, '');
const FLAVOURS: Flavour[] = [
  { name: 'docshare part URLs', presigned: false, env: { BLOB_PUBLIC_URL: undefined } },
  ...(TARGET === 'distributed' ? [{ name: 'presigned MinIO part URLs', presigned: true, env: { BLOB_PUBLIC_URL: MINIO } }] : []),
];

/** A file of `size` random bytes that starts like a PNG (its type is sniffed from its bytes). */
const fileOf = (size: number): Buffer => {
  const data = randomBytes(size);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(data);
  return data;
};

const ETAG = /^"[^"]+"$/;

for (const flavour of FLAVOURS) {
  /** The URL of part `n` is of the flavour's kind. */
  const assertPartUrl = (baseUrl: string, uploadId: string, p: PartUrl): void => {
    assert.equal(typeof p.url, 'string', `part ${p.part_number} url`);
    const url = new URL(p.url);
    if (flavour.presigned) {
      assert.equal(url.origin, new URL(MINIO ?? 'http://minio.invalid').origin, `a presigned part URL points at MinIO: ${p.url}`);
      assert.equal(url.searchParams.get('partNumber'), String(p.part_number), p.url);
      assert.ok(url.searchParams.get('uploadId'), p.url);
    } else {
      assert.equal(`${url.origin}${url.pathname}`, `${baseUrl}/api/V1/docs/api-uploads/${uploadId}/parts/${p.part_number}`, p.url);
      assert.match(url.searchParams.get('expires') ?? '', /^\d+$/, p.url);
      assert.match(url.searchParams.get('signature') ?? '', /^[0-9a-f]+$/, p.url);
    }
  };

  /** PUTs a part; 200 and a quoted ETag (and docshare's JSON answer on its URLs). Returns the etag. */
  const sendPart = async (url: string, bytes: Uint8Array, partNumber: number): Promise<string> => {
    const { res, etag } = await putPart(url, bytes);
    assert.equal(res.status, 200, `PUT part ${partNumber}: HTTP ${res.status} ${res.text.slice(0, 300)}`);
    assert.match(etag ?? '', ETAG, `PUT part ${partNumber}: ETag header`);
    if (!flavour.presigned) {
      const body = expectSuccess(res, 200);
      assertKeys(body, ['status', 'message', 'part_number', 'etag'], 'part answer');
      assert.equal(body.message, M.partReceived);
      assert.equal(body.part_number, partNumber);
      assert.equal(body.etag, etag);
    }
    return etag as string;
  };

  /** Creates a session; 201 with the documented body. Returns the body. */
  const start = async (fx: Fixture, token: string, size: number, over: Record<string, unknown> = {}): Promise<Json> => {
    const body = expectSuccess(await uploads(fx.c).create(token, createBody(size, over)), 201);
    assertKeys(body, ['status', 'message', 'upload_id', 'part_size', 'part_count', 'expires_at', 'parts'], 'create body');
    assert.equal(body.message, M.started);
    assert.match(body.upload_id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'upload_id is a lower-case UUID v4');
    assert.equal(body.part_size, PART);
    assert.equal(body.part_count, Math.ceil(size / PART));
    assert.ok(!Number.isNaN(Date.parse(body.expires_at)), `expires_at ${body.expires_at}`);
    assert.deepEqual(body.parts.map((p: PartUrl) => p.part_number), Array.from({ length: body.part_count }, (_, i) => i + 1));
    for (const p of body.parts as PartUrl[]) {
      assertKeys(p, ['part_number', 'url'], 'part');
      assertPartUrl(fx.server.baseUrl, body.upload_id, p);
    }
    return body;
  };

  /** GET of a session; 200 with the documented body. Returns `upload`. */
  const state = async (fx: Fixture, token: string, id: string): Promise<Json> => {
    const body = expectSuccess(await uploads(fx.c).get(token, id), 200);
    assertKeys(body, ['status', 'upload'], 'session body');
    const u = body.upload;
    const keys = ['upload_id', 'state', 'file_name', 'size', 'part_size', 'part_count', 'expires_at', 'received', 'parts'];
    assertKeys(u, u.state === 'completed' ? [...keys, 'file_id'] : keys, 'upload');
    assert.equal(u.upload_id, id);
    assert.ok(['pending', 'completed', 'aborted', 'expired'].includes(u.state), `state ${u.state}`);
    for (const r of u.received as Received[]) {
      assertKeys(r, ['part_number', 'size', 'etag'], 'received part');
      assert.match(r.etag, ETAG);
    }
    if (u.state !== 'pending') assert.deepEqual(u.parts, [], `a ${u.state} session offers no part URLs`);
    for (const p of u.parts as PartUrl[]) assertPartUrl(fx.server.baseUrl, id, p);
    return u;
  };

  /** The bytes behind a file's download_url (following a redirect to the object store). */
  const downloaded = async (fx: Fixture, token: string, fileId: string): Promise<Response> => {
    const link = expectSuccess(await fx.c.download(token, fileId), 200);
    const res = await fetch(String(link.download_url));
    assert.equal(res.status, 200, `download_url: HTTP ${res.status}`);
    return res;
  };

  const fileIdsOf = async (fx: Fixture, token: string): Promise<string[]> =>
    (expectSuccess(await fx.c.files(token), 200).files as Array<{ file_id: number }>).map((f) => String(f.file_id));

  describe(`resumable uploads (${flavour.name})`, { skip: localOnly }, () => {
    const fx = useServer({ ...ENV, ...flavour.env });

    it('a file larger than MAX_UPLOAD_BYTES goes up in parts (out of order, in parallel), completes once, downloads with the same SHA-256 and is found by search', async () => {
      const { c } = fx;
      const api = uploads(c);
      const u = await c.register();
      const data = fileOf(BIG);
      const word = randomWord(14);
      const category = `Parts ${unique('c')}`;
      const created = await start(fx, u.token, BIG, { title: `Resumable ${word}`, new_category_name: category, file_name: 'big.png' });
      assert.equal(created.part_count, 3);
      const id: string = created.upload_id;
      const urls = new Map((created.parts as PartUrl[]).map((p) => [p.part_number, p.url]));

      const order = [3, 1, 2];
      const etags = await Promise.all(order.map((n) => sendPart(urls.get(n) as string, partOf(data, PART, n), n)));
      const sent = new Map(order.map((n, i) => [n, etags[i] as string]));

      const pending = await state(fx, u.token, id);
      assert.equal(pending.state, 'pending');
      assert.equal(pending.size, BIG);
      assert.equal(pending.part_size, PART);
      assert.equal(pending.part_count, 3);
      assert.equal(pending.file_name, 'big.png');
      assert.equal(pending.expires_at, created.expires_at);
      assert.deepEqual(byNumber(pending.received as Received[]), [1, 2, 3].map((n) => ({ part_number: n, size: partOf(data, PART, n).length, etag: sent.get(n) })));
      assert.deepEqual(pending.parts, [], 'nothing is missing');

      const parts = [1, 2, 3].map((n) => ({ part_number: n, etag: sent.get(n) }));
      const done = expectSuccess(await api.complete(u.token, id, { parts }), 201);
      // api-upload's success body, field for field.
      const form = expectSuccess(await c.upload(u.token, { title: 'small', description: 'd', tags: 'x', cc_license: 'CC BY', new_category_name: category }, enc('small')), 201);
      assertKeys(done, Object.keys(form), 'complete body (api-upload\'s)');
      assert.equal(done.message, M.uploaded);
      assertIdString(done.file_id, 'file_id');
      assertIdString(done.category_id, 'category_id');
      assert.equal(done.category_name, category);
      assert.equal(done.category_id, form.category_id, 'the same new category name is the same category');

      // Completion again, with the list or without it: the same file, recorded once.
      assert.deepEqual(expectSuccess(await api.complete(u.token, id, { parts }), 201), done);
      assert.deepEqual(expectSuccess(await api.complete(u.token, id), 201), done);
      const completed = await state(fx, u.token, id);
      assert.equal(completed.state, 'completed');
      assert.equal(completed.file_id, done.file_id);
      await eventually(async () => assert.deepEqual((await fileIdsOf(fx, u.token)).sort(), [done.file_id, form.file_id].sort()), SETTLE);

      const res = await downloaded(fx, u.token, done.file_id);
      const got = Buffer.from(await res.arrayBuffer());
      assert.equal(got.length, BIG);
      assert.equal(sha256(got), sha256(data), 'the downloaded bytes are the uploaded ones');
      assert.equal((res.headers.get('content-type') ?? '').split(';')[0]?.trim(), 'image/png', 'the type is sniffed from the bytes, over the declared application/octet-stream');

      await eventually(async () => {
        const found = expectSuccess(await c.search(u.token, { search: word }), 200);
        assert.deepEqual(found.results.map((r: { id: string }) => r.id), [done.file_id]);
      }, SETTLE);

      // The stored file counts against the quota like any other.
      expectError(await api.create(u.token, createBody(QUOTA - BIG - 5 + 1)), 413, M.quota);
    });

    it('resumes after an interruption: GET lists exactly the finished parts and fresh URLs for the missing ones only', async () => {
      const { c } = fx;
      const api = uploads(c);
      const u = await c.register();
      const data = fileOf(BIG);
      const created = await start(fx, u.token, BIG);
      const id: string = created.upload_id;
      const first = created.parts as PartUrl[];
      const etag1 = await sendPart(first[0]?.url as string, partOf(data, PART, 1), 1);
      const part2 = partOf(data, PART, 2);
      await interruptedPut(first[1]?.url as string, part2.length, part2.subarray(0, part2.length / 2));

      // A crashed client starts again from one GET.
      const resumed = await state(fx, u.token, id);
      assert.equal(resumed.state, 'pending');
      assert.deepEqual(resumed.received, [{ part_number: 1, size: PART, etag: etag1 }], 'only the part that arrived whole');
      assert.deepEqual(missing(resumed), [2, 3]);

      const etags = new Map([[1, etag1]]);
      await Promise.all((resumed.parts as PartUrl[]).map(async (p) => {
        etags.set(p.part_number, await sendPart(p.url, partOf(data, PART, p.part_number), p.part_number));
      }));
      const all = await state(fx, u.token, id);
      assert.deepEqual(byNumber(all.received as Received[]).map((r) => [r.part_number, r.size, r.etag]), [1, 2, 3].map((n) => [n, partOf(data, PART, n).length, etags.get(n)]));
      assert.deepEqual(all.parts, []);

      // Without a list, complete takes every received part.
      const done = expectSuccess(await api.complete(u.token, id), 201);
      const got = Buffer.from(await (await downloaded(fx, u.token, done.file_id)).arrayBuffer());
      assert.equal(sha256(got), sha256(data));
    });

    it('a part sent again replaces the earlier one', async () => {
      const { c } = fx;
      const u = await c.register();
      const data = fileOf(SMALL_LAST);
      const created = await start(fx, u.token, SMALL_LAST);
      const urls = created.parts as PartUrl[];
      await sendPart(urls[0]?.url as string, randomBytes(PART), 1);
      await sendPart(urls[2]?.url as string, randomBytes(1000), 3);
      const etags = [
        await sendPart(urls[0]?.url as string, partOf(data, PART, 1), 1),
        await sendPart(urls[1]?.url as string, partOf(data, PART, 2), 2),
        await sendPart(urls[2]?.url as string, partOf(data, PART, 3), 3),
      ];
      const done = expectSuccess(await uploads(c).complete(u.token, created.upload_id, { parts: etags.map((etag, i) => ({ part_number: i + 1, etag })) }), 201);
      const got = Buffer.from(await (await downloaded(fx, u.token, done.file_id)).arrayBuffer());
      assert.equal(sha256(got), sha256(data));
    });

    it('two open sessions may not exceed the quota together: the second is refused at creation; aborting the first gives the room back', async () => {
      const { c } = fx;
      const api = uploads(c);
      const u = await c.register();
      const first = await start(fx, u.token, BIG);
      await sendPart(first.parts[0].url, randomBytes(PART), 1);
      const second = createBody(QUOTA - BIG + 1);
      expectError(await api.create(u.token, second), 413, M.quota);
      // Nothing was started by the refused call: the first session is as it was.
      assert.equal((await state(fx, u.token, first.upload_id)).state, 'pending');

      const aborted = expectSuccess(await api.abort(u.token, first.upload_id), 200);
      assertKeys(aborted, ['status', 'message'], 'abort body');
      assert.equal(aborted.message, M.aborted);
      assert.equal((await state(fx, u.token, first.upload_id)).state, 'aborted');
      await eventually(async () => assert.deepEqual((await state(fx, u.token, first.upload_id)).received, [], 'an aborted session\'s parts are removed'), SETTLE);
      const room = await eventually(async () => expectSuccess(await api.create(u.token, second), 201), SETTLE);
      expectSuccess(await api.abort(u.token, room.upload_id), 200);
      if (!flavour.presigned) {
        expectError((await putPart(first.parts[1].url, randomBytes(PART))).res, 409, M.wasAborted);
      }
      expectError(await api.complete(u.token, first.upload_id), 409, M.wasAborted);
    });

    if (flavour.presigned) {
      it('a declared size that lies (the last part longer than the remainder): complete 413, the session aborted, no file recorded, the quota back', async () => {
        const { c } = fx;
        const api = uploads(c);
        const u = await c.register();
        for (const lie of [+100, -100]) {
          // The second session fits only once the first one's room is back.
          const created = await eventually(() => start(fx, u.token, SMALL_LAST), SETTLE);
          const urls = created.parts as PartUrl[];
          await sendPart(urls[0]?.url as string, randomBytes(PART), 1);
          await sendPart(urls[1]?.url as string, randomBytes(PART), 2);
          // MinIO takes any body at a presigned URL: only completion can tell.
          await sendPart(urls[2]?.url as string, randomBytes(1000 + lie), 3);
          expectError(await api.complete(u.token, created.upload_id), 413, M.sizeMismatch);
          const after = await state(fx, u.token, created.upload_id);
          assert.equal(after.state, 'aborted', `last part ${1000 + lie} B for 1000`);
          assert.equal(after.file_id, undefined);
          expectError(await api.complete(u.token, created.upload_id), 409, M.wasAborted);
        }
        // The quota is whole again: a session as large as the quota is accepted.
        const whole = await eventually(async () => expectSuccess(await api.create(u.token, createBody(QUOTA)), 201), SETTLE);
        expectSuccess(await api.abort(u.token, whole.upload_id), 200);
        assert.deepEqual(await fileIdsOf(fx, u.token), [], 'nothing was recorded');
        assert.equal(expectSuccess(await c.stats(u.token), 200).data.total_files, 0);
      });
    } else {
      it('a part whose body is not its size is refused (shorter: 400, longer: 413, as a lying declared size) and not received; complete then misses it (409)', async () => {
        const { c } = fx;
        const api = uploads(c);
        const u = await c.register();
        const data = fileOf(SMALL_LAST);
        const created = await start(fx, u.token, SMALL_LAST);
        const urls = created.parts as PartUrl[];
        const last = urls[2]?.url as string;
        expectError((await putPart(last, randomBytes(1001))).res, 413, M.sizeMismatch);
        expectError((await putPart(last, randomBytes(999))).res, 400, M.partSize);
        expectError((await putPart(urls[0]?.url as string, randomBytes(100))).res, 400, M.partSize);
        const e1 = await sendPart(urls[0]?.url as string, partOf(data, PART, 1), 1);
        const e2 = await sendPart(urls[1]?.url as string, partOf(data, PART, 2), 2);
        const pending = await state(fx, u.token, created.upload_id);
        assert.deepEqual(byNumber(pending.received as Received[]).map((r) => r.part_number), [1, 2]);
        assert.deepEqual(missing(pending), [3]);
        expectError(await api.complete(u.token, created.upload_id), 409, M.partsMissing);
        expectError(await api.complete(u.token, created.upload_id, { parts: [{ part_number: 1, etag: e1 }, { part_number: 2, etag: e2 }] }), 409, M.partsMissing);
        // The session goes on: the right bytes complete it.
        await sendPart(last, partOf(data, PART, 3), 3);
        const done = expectSuccess(await api.complete(u.token, created.upload_id), 201);
        const got = Buffer.from(await (await downloaded(fx, u.token, done.file_id)).arrayBuffer());
        assert.equal(sha256(got), sha256(data));
      });

      describe('validation', () => {
        let owner: RegisteredUser;
        let other: RegisteredUser;
        const api = (): ReturnType<typeof uploads> => uploads(fx.c);

        it('create checks in the documented order, each with its message', async () => {
          owner = await fx.c.register();
          other = await fx.c.register();
          const create = (body: unknown): Promise<Res> => api().create(owner.token, body);
          expectError(await create({}), 400, M.fileNameRequired);
          expectError(await create(createBody(0, { file_name: undefined })), 400, M.fileNameRequired);
          expectError(await create(createBody(1000, { file_name: '   ' })), 400, M.fileNameRequired);
          for (const size of [undefined, null, 0, -1, 1.5, '1.5', 'abc', '', '12x', true, [1], { $gt: 0 }]) {
            expectError(await create(createBody(1000, { size })), 400, M.invalidSize);
          }
          expectError(await create(createBody(0, { content_type: 'nope', title: '' })), 400, M.invalidSize);
          for (const content_type of ['pdf', 'application/', '/pdf', 'text plain']) {
            expectError(await create(createBody(1000, { content_type })), 400, M.invalidContentType);
          }
          expectError(await create(createBody(1000, { content_type: 'nope', title: '' })), 400, M.invalidContentType);

          // Then the metadata, exactly as api-upload checks it.
          const sent: Record<string, unknown> = { file_name: 'doc.pdf', size: 1000, content_type: 'application/pdf' };
          const full = createBody(1000);
          for (const [field, message] of [
            ['title', 'Title is required'], ['description', 'Description is required'], ['tags', 'Tags are required'],
            ['cc_license', 'Invalid license'], ['new_category_name', 'Category ID or new category name is required'],
          ] as const) {
            expectError(await create(sent), 400, message);
            sent[field] = full[field];
          }
          expectError(await create({ ...sent, video: 'nope' }), 400, 'Invalid video URL');
          // 400s come before 413s.
          expectError(await create({ ...sent, size: MAX_RESUMABLE + 1, cc_license: 'nope' }), 400, 'Invalid license');
          const ok = expectSuccess(await create({ ...sent, size: '1000', video: 'https://example.com/v' }), 201);
          expectSuccess(await api().abort(owner.token, ok.upload_id), 200);
        });

        it('413 above MAX_RESUMABLE_BYTES, then the quota; 404 for an unknown category, after both', async () => {
          const create = (body: unknown): Promise<Res> => api().create(owner.token, body);
          expectError(await create(createBody(MAX_RESUMABLE + 1)), 413, M.tooLarge);
          expectError(await create(createBody(5 * 1024 ** 4)), 413, M.tooLarge);
          expectError(await create(createBody(MAX_RESUMABLE)), 413, M.quota);
          expectError(await create(createBody(QUOTA + 1, { new_category_name: undefined, category_id: '99999999' })), 413, M.quota);
          expectError(await create(createBody(1000, { new_category_name: undefined, category_id: '99999999' })), 404, M.categoryNotFound);
          expectError(await create(createBody(1000, { new_category_name: undefined, category_id: 99999999 })), 404, M.categoryNotFound);
          expectError(await create(createBody(1000, { new_category_name: undefined, category_id: 'abc' })), 404, M.categoryNotFound);
          // An existing category by id, as a JSON number or a digit string.
          const { res } = await fx.c.uploadOk(owner.token);
          for (const category_id of [Number(res.body.category_id), String(res.body.category_id)]) {
            const ok = expectSuccess(await create(createBody(1000, { new_category_name: undefined, category_id })), 201);
            expectSuccess(await api().abort(owner.token, ok.upload_id), 200);
          }
        });

        it('401 without a valid token on the four control calls', async () => {
          const id = randomUUID();
          for (const token of [undefined, 'garbage.token.here']) {
            const message = token === undefined ? 'Missing JWT token' : 'Invalid JWT token';
            expectError(await api().create(token, createBody(1000)), 401, message);
            expectError(await api().get(token, id), 401, message);
            expectError(await api().complete(token, id), 401, message);
            expectError(await api().abort(token, id), 401, message);
          }
        });

        it('404 "Upload not found" for another user\'s, an unknown or a malformed upload id', async () => {
          const mine = await start(fx, owner.token, 1000);
          for (const [token, id] of [
            [other.token, mine.upload_id], [owner.token, randomUUID()], [owner.token, randomUUID().toUpperCase()],
            [owner.token, 'abc'], [owner.token, '1'], [owner.token, `${mine.upload_id}x`],
          ] as const) {
            expectError(await api().get(token, id), 404, M.notFound);
            expectError(await api().complete(token, id), 404, M.notFound);
            expectError(await api().abort(token, id), 404, M.notFound);
          }
          // Untouched by the other user's calls.
          assert.equal((await state(fx, owner.token, mine.upload_id)).state, 'pending');
          expectSuccess(await api().abort(owner.token, mine.upload_id), 200);
        });

        it('a part URL whose signature, expiry, upload or part number was changed is 403; the real one still works', async () => {
          const two = await start(fx, owner.token, PART + 10);
          const another = await start(fx, owner.token, 10);
          const url = new URL(two.parts[1].url as string);
          const variant = (change: (u: URL) => void): string => {
            const v = new URL(url);
            change(v);
            return v.toString();
          };
          const sig = url.searchParams.get('signature') ?? '';
          const expires = Number(url.searchParams.get('expires'));
          const tampered = [
            variant((v) => v.searchParams.set('signature', `${sig.slice(0, -1)}${sig.endsWith('0') ? '1' : '0'}`)),
            variant((v) => v.searchParams.set('signature', '')),
            variant((v) => v.searchParams.delete('signature')),
            variant((v) => v.searchParams.set('expires', String(expires + 1))),
            variant((v) => v.searchParams.set('expires', '1')),
            variant((v) => { v.search = ''; }),
            variant((v) => { v.pathname = v.pathname.replace(/\/parts\/2$/, '/parts/1'); }),
            variant((v) => { v.pathname = v.pathname.replace(two.upload_id, another.upload_id); }),
          ];
          for (const t of tampered) expectError((await putPart(t, randomBytes(10))).res, 403, M.badLink);
          await sendPart(url.toString(), randomBytes(10), 2);
          for (const id of [two.upload_id, another.upload_id]) expectSuccess(await api().abort(owner.token, id), 200);
        });

        it('complete: a malformed parts list is 400; parts not received or with another etag are 409', async () => {
          const created = await start(fx, owner.token, 10);
          const etag = await sendPart(created.parts[0].url, randomBytes(10), 1);
          const id: string = created.upload_id;
          for (const parts of ['x', {}, [1], [null], [{ part_number: 0, etag }], [{ part_number: -1, etag }], [{ part_number: 1.5, etag }], [{ part_number: 1 }], [{ part_number: 1, etag: 5 }], [{ etag }]]) {
            expectError(await api().complete(owner.token, id, { parts }), 400, M.invalidParts);
          }
          expectError(await api().complete(owner.token, id, { parts: [] }), 409, M.partsMissing);
          expectError(await api().complete(owner.token, id, { parts: [{ part_number: 1, etag: '"0123456789abcdef0123456789abcdef"' }] }), 409, M.partsMissing);
          const empty = await start(fx, owner.token, 10);
          expectError(await api().complete(owner.token, empty.upload_id), 409, M.partsMissing);
          expectSuccess(await api().abort(owner.token, empty.upload_id), 200);
          expectSuccess(await api().complete(owner.token, id, { parts: [{ part_number: 1, etag }] }), 201);
        });

        it('DELETE twice is 200 both times (then PUT and complete are 409); DELETE, PUT after completion are 409', async () => {
          const doomed = await start(fx, owner.token, 10);
          for (let i = 0; i < 2; i++) {
            const body = expectSuccess(await api().abort(owner.token, doomed.upload_id), 200);
            assert.equal(body.message, M.aborted);
          }
          expectError((await putPart(doomed.parts[0].url, randomBytes(10))).res, 409, M.wasAborted);
          expectError(await api().complete(owner.token, doomed.upload_id), 409, M.wasAborted);
          assert.equal((await state(fx, owner.token, doomed.upload_id)).state, 'aborted');

          const kept = await start(fx, owner.token, 10);
          await sendPart(kept.parts[0].url, randomBytes(10), 1);
          const done = expectSuccess(await api().complete(owner.token, kept.upload_id), 201);
          expectError(await api().abort(owner.token, kept.upload_id), 409, M.completed);
          expectError((await putPart(kept.parts[0].url, randomBytes(10))).res, 409, M.completed);
          const after = await state(fx, owner.token, kept.upload_id);
          assert.equal(after.state, 'completed');
          assert.equal(after.file_id, done.file_id);
        });

        it('Idempotency-Key: create and complete sent twice with one key answer the same', async () => {
          const key = { 'Idempotency-Key': randomUUID() };
          const body = createBody(10, { file_name: `idem-${unique('f')}.bin` });
          const first = expectSuccess(await api().create(owner.token, body, key), 201);
          const again = expectSuccess(await api().create(owner.token, body, key), 201);
          assert.equal(again.upload_id, first.upload_id);
          assert.deepEqual(again, first);
          await sendPart(first.parts[0].url, randomBytes(10), 1);
          const doneKey = { 'Idempotency-Key': randomUUID() };
          const done = expectSuccess(await api().complete(owner.token, first.upload_id, {}, doneKey), 201);
          assert.deepEqual(expectSuccess(await api().complete(owner.token, first.upload_id, {}, doneKey), 201), done);
          assertIdString(done.file_id, 'file_id');
        });
      });
    }
  });

  describe(`resumable uploads and the rate limit (${flavour.name})`, { skip: localOnly }, () => {
    // 10 points an hour: the 14 part PUTs below alone would spend them all.
    const fx = useServer({ ...ENV, ...flavour.env, RATE_LIMIT_POINTS: '10', RATE_LIMIT_WINDOW_SECONDS: '3600' });

    it('a whole upload costs at most 4 points of RateLimit-Remaining; part PUTs are never counted nor refused', async () => {
      const { c } = fx;
      const api = uploads(c);
      const u = await c.register();
      const remaining = (res: Res): number => {
        const v = res.headers.get('ratelimit-remaining');
        assert.match(v ?? '', /^\d+$/, `RateLimit-Remaining of HTTP ${res.status}`);
        return Number(v);
      };
      const createRes = await api.create(u.token, createBody(SMALL_LAST));
      const created = expectSuccess(createRes, 201);
      const atCreate = remaining(createRes);
      const data = fileOf(SMALL_LAST);
      const urls = created.parts as PartUrl[];
      await sendPart(urls[0]?.url as string, partOf(data, PART, 1), 1);
      await sendPart(urls[1]?.url as string, partOf(data, PART, 2), 2);
      // The small last part, twelve times over (a part sent again replaces the earlier one).
      for (let i = 0; i < 12; i++) await sendPart(urls[2]?.url as string, partOf(data, PART, 3), 3);
      const got = await api.get(u.token, created.upload_id);
      assert.equal(expectSuccess(got, 200).upload.state, 'pending');
      const doneRes = await api.complete(u.token, created.upload_id);
      expectSuccess(doneRes, 201);
      const spent = atCreate + 1 - remaining(doneRes);
      assert.ok(spent <= 4, `the upload spent ${spent} points (create, GET, complete, 14 part PUTs)`);
    });
  });

  describe(`resumable upload sessions expire (${flavour.name})`, { skip: localOnly }, () => {
    const fx = useServer({ ...ENV, ...flavour.env, UPLOAD_SESSION_TTL_SECONDS: '3', UPLOAD_SWEEP_INTERVAL_SECONDS: '1' });

    it('after UPLOAD_SESSION_TTL_SECONDS: state expired, parts removed, quota back; PUT and complete 409 "Upload has expired"', async () => {
      const { c } = fx;
      const api = uploads(c);
      const u = await c.register();
      // A session and its small last part, sent while the session lasts (a slow machine tries again).
      const { created, etag } = await eventually(async () => {
        const s = await start(fx, u.token, SMALL_LAST);
        return { created: s, etag: await sendPart(s.parts[2].url, randomBytes(1000), 3) };
      }, SETTLE);
      const id: string = created.upload_id;
      assert.ok(etag);
      await eventually(async () => assert.equal((await state(fx, u.token, id)).state, 'expired'), SETTLE);
      await eventually(async () => assert.deepEqual((await state(fx, u.token, id)).received, [], 'the sweeper removes an expired session\'s parts'), SETTLE);
      // The quota is whole again.
      const whole = expectSuccess(await api.create(u.token, createBody(QUOTA)), 201);
      expectSuccess(await api.abort(u.token, whole.upload_id), 200);
      if (!flavour.presigned) expectError((await putPart(created.parts[0].url, randomBytes(PART))).res, 409, M.expired);
      expectError(await api.complete(u.token, id), 409, M.expired);
      expectError(await api.complete(u.token, id, { parts: [{ part_number: 3, etag }] }), 409, M.expired);
      // Aborting an expired session is fine, and changes nothing.
      assert.equal(expectSuccess(await api.abort(u.token, id), 200).message, M.aborted);
      assert.deepEqual(await fileIdsOf(fx, u.token), []);
    });
  });
}
