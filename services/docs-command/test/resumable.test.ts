// Resumable uploads through docs-command's use cases (commands/resumable.ts), on the embedded
// adapters: a file event log, an fs blob store (its multipart uploads), a memory storage ledger
// with a quota, and a clock the tests move. Parts go through docshare's signed part URLs.
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { DocshareError, M, streamIds } from '@docshare/contracts';
import { makeFsBlobStore, type BlobStore } from '@docshare/blob-store';
import { openFileClaimStore } from '@docshare/claim-store';
import { openFileEventLog, type EventStore } from '@docshare/event-store';
import { makeTokens, makeUrlSigner } from '@docshare/auth';
import { makeLogger } from '@docshare/http';
import { makeMemoryStorageLedger } from '@docshare/storage-ledger';
import { makeDocsCommands } from '../src/commands/docs-commands.ts';
import { partPath, resolvedHold, type ResumableSettings } from '../src/commands/resumable.ts';
import { resolvedBy } from '../src/commands/storage-quota.ts';
import { fileStateFrom } from '../src/commands/blob-sweeper.ts';
import { parseStartUpload } from '../src/http/validation.ts';

const ROOT = '/tmp/helper-dcu';
const dirs: string[] = [];
const opened: Array<{ close(): Promise<void> }> = [];
after(async () => {
  for (const store of opened) await store.close();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

const MIB = 1024 * 1024;
const PART = 5 * MIB;
const QUOTA = 12 * MIB;
const TTL_SECONDS = 24 * 3600;
const BASE = 'http://docshare.example';
const meta = () => ({ requestId: `r-${randomUUID()}` });

interface World {
  commands: ReturnType<typeof makeDocsCommands>;
  events: EventStore;
  blobs: BlobStore;
  ada: number;
  bob: number;
  /** Moves the services' clock (and the ledger's). */
  advance: (ms: number) => void;
}

/** docs-command's use cases on a fresh data dir; the clock starts at the real time (the fs store dates its uploads by it). */
const world = async (settings: Partial<ResumableSettings> = {}): Promise<World> => {
  await mkdir(ROOT, { recursive: true });
  const dir = await mkdtemp(join(ROOT, 'resumable-'));
  dirs.push(dir);
  let now = new Date();
  const events = await openFileEventLog(join(dir, 'events'));
  const blobs = await makeFsBlobStore(join(dir, 'blobs'));
  const claims = await openFileClaimStore(join(dir, 'claims'));
  opened.push(events, claims);
  const ledger = makeMemoryStorageLedger({
    resolve: resolvedBy(fileStateFrom(events)), resolveHold: resolvedHold(events, () => now), now: () => now.getTime(),
  });
  const commands = makeDocsCommands({
    events, blobs, ledger,
    claims,
    logger: makeLogger('resumable-test', 'silent'),
    tokens: makeTokens('x'.repeat(48), 3600),
    signer: makeUrlSigner('y'.repeat(48)),
    publicBaseUrl: BASE,
    downloadUrlTtlSeconds: 900,
    now: () => now,
    passwordCost: 1024,
    storageQuotaBytes: QUOTA,
    resumable: { maxBytes: 64 * MIB, sessionTtlSeconds: TTL_SECONDS, partBytes: PART, partBytesPerSecond: 0, ...settings },
  });
  const ada = (await commands.register({ name: 'Ada', email: 'ada@example.com', password: 'correct horse' }, meta())).userId;
  const bob = (await commands.register({ name: 'Bob', email: 'bob@example.com', password: 'correct horse' }, meta())).userId;
  return { commands, events, blobs, ada, bob, advance: (ms) => { now = new Date(now.getTime() + ms); } };
};

/** `size` bytes that begin like a PNG (the type is sniffed from them; the client declares octet-stream). */
const pngOf = (size: number): Buffer => {
  const bytes = Buffer.alloc(size);
  for (let i = 0; i < size; i += 4096) bytes.writeUInt32BE((i * 2654435761) >>> 0, i);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes);
  return bytes;
};

const startInput = (size: number) => parseStartUpload({
  file_name: 'scan.bin', size, content_type: 'application/octet-stream', title: 'Scan', description: 'A big scan', tags: 'scan',
  cc_license: 'CC BY', new_category_name: 'Scans',
});

const isError = (kind: DocshareError['kind'], message: string) => (e: unknown): boolean => {
  assert.ok(e instanceof DocshareError, String(e));
  assert.equal(`${e.kind}: ${e.message}`, `${kind}: ${message}`);
  return true;
};

const eventsOf = async (w: World, stream: string): Promise<Array<{ type: string; data: Record<string, unknown> }>> =>
  (await w.events.readStream(stream)).map(({ event }) => ({ type: event.type, data: event.data as Record<string, unknown> }));

/** A started session of `bytes`, with its part URLs, and a way to PUT part n through its URL. */
const started = async (w: World, bytes: Buffer, actor = w.ada) => {
  const { session, parts } = await w.commands.startUpload(actor, startInput(bytes.length), meta());
  const put = (n: number, body: Buffer = bytes.subarray((n - 1) * session.partSize, n * session.partSize), declared: number | undefined = body.length, url = parts[n - 1]!.url) => {
    const query = new URL(url).searchParams;
    return w.commands.putPart(session.uploadId, n, query.get('expires') ?? undefined, query.get('signature') ?? undefined, Readable.from([body]), declared);
  };
  return { session, parts, put };
};

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');
const blobOf = async (blobs: BlobStore, key: string): Promise<Buffer> => {
  const blob = await blobs.get(key);
  assert.ok(blob, `blob ${key}`);
  const chunks: Buffer[] = [];
  for await (const chunk of blob.body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};
const storeUploads = async (blobs: BlobStore): Promise<string[]> => {
  const ids: string[] = [];
  for await (const { uploadId } of blobs.listMultipart()) ids.push(uploadId);
  return ids.sort();
};

describe('resumable uploads: the whole flow', () => {
  it('start → parts through signed docshare URLs → status → complete: the file recorded once, sniffed, counted once', async () => {
    const w = await world();
    const bytes = pngOf(PART + 100);
    const { session, parts, put } = await started(w, bytes);
    assert.equal(session.partSize, PART);
    assert.equal(session.partCount, 2);
    assert.deepEqual(parts.map((p) => p.partNumber), [1, 2]);
    for (const { partNumber, url } of parts) {
      assert.ok(url.startsWith(`${BASE}${partPath(session.uploadId, partNumber)}?`), url);
      const query = new URL(url).searchParams;
      assert.equal(Number(query.get('expires')), Math.floor(Date.parse(session.expiresAt) / 1000), 'a link lasts as long as its session');
      assert.match(query.get('signature') ?? '', /^[0-9a-f]+$/);
    }
    assert.equal(await w.commands.ledger.usage(w.ada), bytes.length, 'the open session holds its declared size');

    const before = await w.commands.uploadStatus(w.ada, session.uploadId);
    assert.equal(before.phase, 'pending');
    assert.deepEqual(before.received, []);
    assert.deepEqual(before.parts.map((p) => p.partNumber), [1, 2]);

    const etag2 = await put(2);
    const half = await w.commands.uploadStatus(w.ada, session.uploadId);
    assert.deepEqual(half.received, [{ partNumber: 2, size: 100, etag: etag2 }]);
    assert.deepEqual(half.parts.map((p) => p.partNumber), [1], 'only the missing part, freshly signed');
    await put(1);
    // A part sent again replaces the earlier one.
    const etag1 = await put(1);
    assert.deepEqual((await w.commands.uploadStatus(w.ada, session.uploadId)).received.map((p) => [p.partNumber, p.size, p.etag]),
      [[1, PART, etag1], [2, 100, etag2]]);

    const done = await w.commands.completeUpload(w.ada, session.uploadId, [{ partNumber: 2, etag: etag2.replace(/"/g, '') }, { partNumber: 1, etag: etag1 }], meta());
    assert.equal(done.fileId, session.fileId);
    assert.equal(done.categoryName, 'Scans');
    const fileEvents = await eventsOf(w, streamIds.file(session.fileId));
    assert.deepEqual(fileEvents.map((e) => e.type), ['docs.file.uploaded.v1']);
    const file = fileEvents[0]!.data;
    assert.equal(file.contentType, 'image/png', 'sniffed from the bytes over the declared application/octet-stream');
    assert.equal(file.size, bytes.length);
    assert.equal(file.blobKey, session.blobKey);
    assert.equal(file.originalFileName, 'scan.bin');
    assert.equal(sha256(await blobOf(w.blobs, session.blobKey)), sha256(bytes));
    assert.equal(await w.commands.ledger.usage(w.ada), bytes.length, 'the hold became the file: counted once');
    assert.deepEqual(await storeUploads(w.blobs), [], 'the store\'s multipart upload is over');

    const status = await w.commands.uploadStatus(w.ada, session.uploadId);
    assert.equal(status.phase, 'completed');
    assert.equal(status.fileId, session.fileId);
    assert.deepEqual(status.parts, []);

    const again = await w.commands.completeUpload(w.ada, session.uploadId, undefined, meta());
    assert.deepEqual([again.fileId, again.categoryId, again.categoryName], [done.fileId, done.categoryId, done.categoryName]);
    assert.equal((await eventsOf(w, streamIds.file(session.fileId))).length, 1, 'completed twice: one file');
    assert.equal(await w.commands.ledger.usage(w.ada), bytes.length);

    await assert.rejects(w.commands.abortUpload(w.ada, session.uploadId, meta()), isError('conflict', M.uploadCompleted));
    await assert.rejects(put(1), isError('conflict', M.uploadCompleted));
  });

  it('a one-part file of a single byte', async () => {
    const w = await world();
    const { session, put } = await started(w, Buffer.from('x'));
    assert.equal(session.partCount, 1);
    await put(1);
    const { fileId } = await w.commands.completeUpload(w.ada, session.uploadId, undefined, meta());
    assert.equal((await eventsOf(w, streamIds.file(fileId)))[0]!.data.contentType, 'application/octet-stream', 'nothing sniffed: the declared type');
    assert.equal(await w.commands.ledger.usage(w.ada), 1);
  });

  it('only the owner sees, completes or aborts a session; an unknown or malformed id is not found either', async () => {
    const w = await world();
    const { session } = await started(w, pngOf(10));
    const notFound = isError('not_found', M.uploadNotFound);
    await assert.rejects(w.commands.uploadStatus(w.bob, session.uploadId), notFound);
    await assert.rejects(w.commands.completeUpload(w.bob, session.uploadId, undefined, meta()), notFound);
    await assert.rejects(w.commands.abortUpload(w.bob, session.uploadId, meta()), notFound);
    for (const id of [randomUUID(), 'not-an-id', session.uploadId.toUpperCase(), '']) {
      await assert.rejects(w.commands.uploadStatus(w.ada, id), notFound, id);
    }
    assert.equal((await w.commands.uploadStatus(w.ada, session.uploadId)).phase, 'pending', 'untouched by the others');
  });

  it('a forged or foreign part link is refused (403) and stores nothing', async () => {
    const w = await world();
    const a = await started(w, pngOf(10));
    const b = await started(w, pngOf(10));
    const query = new URL(a.parts[0]!.url).searchParams;
    const bytes = Readable.from([pngOf(10)]);
    const badLink = isError('forbidden', M.badUploadLink);
    await assert.rejects(w.commands.putPart(a.session.uploadId, 1, query.get('expires') ?? undefined, 'ab'.repeat(32), bytes, 10), badLink);
    await assert.rejects(w.commands.putPart(a.session.uploadId, 1, String(Number(query.get('expires')) + 1), query.get('signature') ?? undefined, bytes, 10), badLink);
    await assert.rejects(w.commands.putPart(a.session.uploadId, 1, undefined, undefined, bytes, 10), badLink);
    await assert.rejects(b.put(1, pngOf(10), 10, a.parts[0]!.url), badLink, 'a link of another session');
    assert.deepEqual((await w.commands.uploadStatus(w.ada, a.session.uploadId)).received, []);
  });
});

describe('resumable uploads: the quota', () => {
  it('open sessions count against the quota: a second that would not fit is refused at creation (413); an abort gives the room back', async () => {
    const w = await world();
    const first = await started(w, pngOf(7 * MIB));
    await assert.rejects(w.commands.startUpload(w.ada, startInput(6 * MIB), meta()), isError('too_large', M.storageQuotaExceeded));
    assert.equal(await w.commands.ledger.usage(w.ada), 7 * MIB, 'a refused session holds nothing');
    assert.equal(await storeUploads(w.blobs).then((ids) => ids.length), 1, 'and opened no store upload');
    // Another user has their own quota.
    await started(w, pngOf(6 * MIB), w.bob);
    await w.commands.abortUpload(w.ada, first.session.uploadId, meta());
    assert.equal(await w.commands.ledger.usage(w.ada), 0);
    const second = await started(w, pngOf(6 * MIB));
    assert.equal(await w.commands.ledger.usage(w.ada), 6 * MIB);
    assert.equal((await w.commands.uploadStatus(w.ada, second.session.uploadId)).phase, 'pending');
  });

  it('a session\'s hold outlives the ledger\'s lease while the session is open (the repair asks the log), not its expiry', async () => {
    const w = await world();
    await started(w, pngOf(7 * MIB));
    w.advance(11 * 60_000);
    assert.equal(await w.commands.ledger.usage(w.ada), 7 * MIB, 'an open session past the 10-minute lease still holds its room');
    await assert.rejects(w.commands.startUpload(w.ada, startInput(6 * MIB), meta()), isError('too_large', M.storageQuotaExceeded));
    w.advance(TTL_SECONDS * 1000);
    assert.equal(await w.commands.ledger.usage(w.ada), 0);
    await started(w, pngOf(6 * MIB));
  });

  it('an unknown existing category is 404 after the quota check, and leaves nothing held or open', async () => {
    const w = await world();
    const input = parseStartUpload({ file_name: 'a.pdf', size: 10, title: 'T', description: 'D', tags: 't', cc_license: 'CC BY', category_id: 999 });
    await assert.rejects(w.commands.startUpload(w.ada, input, meta()), isError('not_found', M.categoryNotFound));
    await assert.rejects(w.commands.startUpload(w.ada, { ...input, size: QUOTA + 1 }, meta()), isError('too_large', M.storageQuotaExceeded));
    assert.equal(await w.commands.ledger.usage(w.ada), 0);
    assert.deepEqual(await storeUploads(w.blobs), []);
  });

  it('a session larger than MAX_RESUMABLE_BYTES is refused (413) before anything is held', async () => {
    const w = await world({ maxBytes: 10 * MIB });
    await assert.rejects(w.commands.startUpload(w.ada, startInput(10 * MIB + 1), meta()), isError('too_large', M.resumableTooLarge));
    assert.equal(await w.commands.ledger.usage(w.ada), 0);
    await started(w, pngOf(10 * MIB));
  });
});

describe('resumable uploads: parts and completion that do not fit', () => {
  it('a part body of the wrong size: declared larger 413, declared smaller 400, longer or shorter than declared by the store 413/400; nothing received', async () => {
    const w = await world();
    const bytes = pngOf(PART + 100);
    const { session, put } = await started(w, bytes);
    const part2 = bytes.subarray(PART);
    await assert.rejects(put(2, Buffer.concat([part2, Buffer.from('x')])), isError('too_large', M.sizeMismatch));
    await assert.rejects(put(2, part2.subarray(1)), isError('invalid', M.partSizeMismatch));
    // No Content-Length: the store finds out.
    await assert.rejects(put(2, Buffer.concat([part2, Buffer.from('x')]), undefined), isError('too_large', M.sizeMismatch));
    await assert.rejects(put(2, part2.subarray(1), undefined), isError('invalid', M.partSizeMismatch));
    // A Content-Length that lies about the body.
    await assert.rejects(put(2, part2.subarray(1), 100), isError('invalid', M.partSizeMismatch));
    await assert.rejects(put(2, Buffer.concat([part2, Buffer.from('x')]), 100), isError('too_large', M.sizeMismatch));
    const status = await w.commands.uploadStatus(w.ada, session.uploadId);
    assert.equal(status.phase, 'pending');
    assert.deepEqual(status.received, []);
    await put(2);
    assert.deepEqual((await w.commands.uploadStatus(w.ada, session.uploadId)).received.map((p) => p.partNumber), [2]);
  });

  it('completion with a part missing, unnamed or with another etag is 409 and changes nothing; then it completes', async () => {
    const w = await world();
    const bytes = pngOf(PART + 100);
    const { session, put } = await started(w, bytes);
    const etag1 = await put(1);
    const missing = isError('conflict', M.partsMissing);
    await assert.rejects(w.commands.completeUpload(w.ada, session.uploadId, undefined, meta()), missing);
    const etag2 = await put(2);
    await assert.rejects(w.commands.completeUpload(w.ada, session.uploadId, [{ partNumber: 1, etag: etag1 }], meta()), missing);
    await assert.rejects(w.commands.completeUpload(w.ada, session.uploadId, [{ partNumber: 1, etag: etag1 }, { partNumber: 2, etag: etag1 }], meta()), missing);
    await assert.rejects(w.commands.completeUpload(w.ada, session.uploadId, [], meta()), missing);
    await assert.rejects(w.commands.completeUpload(w.ada, session.uploadId, [{ partNumber: 1, etag: etag1 }, { partNumber: 2, etag: etag2 }, { partNumber: 3, etag: etag2 }], meta()),
      isError('invalid', M.invalidParts));
    assert.equal((await w.commands.uploadStatus(w.ada, session.uploadId)).phase, 'pending');
    assert.equal(await w.commands.ledger.usage(w.ada), bytes.length);
    const { fileId } = await w.commands.completeUpload(w.ada, session.uploadId, [{ partNumber: 1, etag: etag1 }, { partNumber: 2, etag: etag2 }], meta());
    assert.equal(fileId, session.fileId);
  });

  it('a received part of another size than the layout (a presigned PUT the store did not check) is final: 413, session aborted, parts gone, nothing recorded', async () => {
    const w = await world();
    const bytes = pngOf(PART + 100);
    const { session, put } = await started(w, bytes);
    await put(1);
    // What a client could do with a presigned store URL: the last part shorter than the declared size says.
    await w.blobs.putPart(session.blobKey, session.storeUploadId, 2, Readable.from([Buffer.alloc(50)]), 50);
    await assert.rejects(w.commands.completeUpload(w.ada, session.uploadId, undefined, meta()), isError('too_large', M.sizeMismatch));
    assert.deepEqual((await eventsOf(w, streamIds.upload(session.uploadId))).map((e) => [e.type, e.data.reason]),
      [['docs.upload.started.v1', undefined], ['docs.upload.aborted.v1', 'size_mismatch']]);
    assert.deepEqual(await eventsOf(w, streamIds.file(session.fileId)), []);
    assert.deepEqual(await storeUploads(w.blobs), []);
    assert.equal(await w.blobs.stat(session.blobKey), null);
    assert.equal(await w.commands.ledger.usage(w.ada), 0);
    assert.equal((await w.commands.uploadStatus(w.ada, session.uploadId)).phase, 'aborted');
    await assert.rejects(w.commands.completeUpload(w.ada, session.uploadId, undefined, meta()), isError('conflict', M.uploadWasAborted));
  });
});

describe('resumable uploads: abort', () => {
  it('abort twice answers both times, records one abort, removes the parts and gives the room back; the session then refuses parts and completion', async () => {
    const w = await world();
    const bytes = pngOf(PART + 100);
    const { session, put } = await started(w, bytes);
    await put(1);
    const first = await w.commands.abortUpload(w.ada, session.uploadId, meta());
    assert.notEqual(first.recorded, null);
    const second = await w.commands.abortUpload(w.ada, session.uploadId, meta());
    assert.equal(second.recorded, null);
    assert.deepEqual((await eventsOf(w, streamIds.upload(session.uploadId))).map((e) => [e.type, e.data.reason]),
      [['docs.upload.started.v1', undefined], ['docs.upload.aborted.v1', 'aborted']]);
    assert.equal(await w.blobs.listParts(session.blobKey, session.storeUploadId), null);
    assert.equal(await w.commands.ledger.usage(w.ada), 0);
    const status = await w.commands.uploadStatus(w.ada, session.uploadId);
    assert.equal(status.phase, 'aborted');
    assert.deepEqual(status.parts, []);
    await assert.rejects(put(2), isError('conflict', M.uploadWasAborted));
    await assert.rejects(w.commands.completeUpload(w.ada, session.uploadId, undefined, meta()), isError('conflict', M.uploadWasAborted));
  });
});

describe('resumable uploads: expiry and the sweeper', () => {
  it('past expires_at: status expired, parts and completion 409, the room back; the sweeper removes the parts and records the expiry once', async () => {
    const w = await world();
    const bytes = pngOf(PART + 100);
    const { session, put } = await started(w, bytes);
    await put(1);
    assert.equal((await w.commands.sweepUploads()).removed, 0, 'a pending session is left alone');
    w.advance(TTL_SECONDS * 1000 + 1);

    const status = await w.commands.uploadStatus(w.ada, session.uploadId);
    assert.equal(status.phase, 'expired');
    assert.deepEqual(status.parts, [], 'no fresh links for an expired session');
    await assert.rejects(put(2), isError('conflict', M.uploadExpired));
    await assert.rejects(w.commands.completeUpload(w.ada, session.uploadId, undefined, meta()), isError('conflict', M.uploadExpired));
    assert.equal(await w.commands.ledger.usage(w.ada), 0, 'the ledger drops a session hold past its until');

    assert.deepEqual(await w.commands.sweepUploads(), { examined: 1, removed: 1 });
    assert.deepEqual(await storeUploads(w.blobs), []);
    assert.deepEqual(await w.commands.sweepUploads(), { examined: 0, removed: 0 });
    assert.deepEqual((await eventsOf(w, streamIds.upload(session.uploadId))).map((e) => [e.type, e.data.reason]),
      [['docs.upload.started.v1', undefined], ['docs.upload.aborted.v1', 'expired']]);
    assert.equal((await w.commands.uploadStatus(w.ada, session.uploadId)).phase, 'expired');
    // Aborting an expired session answers, records nothing more.
    assert.equal((await w.commands.abortUpload(w.ada, session.uploadId, meta())).recorded, null);
    assert.equal((await eventsOf(w, streamIds.upload(session.uploadId))).length, 2);
    assert.deepEqual(await eventsOf(w, streamIds.file(session.fileId)), []);
  });

  it('an expired session aborted before the sweeper came is recorded as expired', async () => {
    const w = await world();
    const { session } = await started(w, pngOf(10));
    w.advance(TTL_SECONDS * 1000 + 1);
    assert.notEqual((await w.commands.abortUpload(w.ada, session.uploadId, meta())).recorded, null);
    assert.deepEqual((await eventsOf(w, streamIds.upload(session.uploadId))).map((e) => e.data.reason), [undefined, 'expired']);
    assert.deepEqual(await storeUploads(w.blobs), []);
  });

  it('the sweeper removes the store uploads of ended sessions whose first removal failed', async () => {
    const w = await world();
    const { session } = await started(w, pngOf(10));
    // As if the abort's removal had failed: the session is aborted, its store upload still there.
    const abortMultipart = w.blobs.abortMultipart.bind(w.blobs);
    w.blobs.abortMultipart = async () => { throw new Error('store down'); };
    await w.commands.abortUpload(w.ada, session.uploadId, meta());
    w.blobs.abortMultipart = abortMultipart;
    assert.deepEqual(await storeUploads(w.blobs), [session.storeUploadId]);
    assert.deepEqual(await w.commands.sweepUploads(), { examined: 1, removed: 1 });
    assert.deepEqual(await storeUploads(w.blobs), []);
  });

  it('a store upload without a session is removed once over an hour old, kept while younger; foreign keys are not touched', async () => {
    const w = await world();
    const stray = await w.blobs.createMultipart(`f999-${randomUUID()}`, 'application/octet-stream');
    const foreign = await w.blobs.createMultipart('contract-test-key', 'application/octet-stream');
    const { session } = await started(w, pngOf(10));
    assert.deepEqual(await w.commands.sweepUploads(), { examined: 2, removed: 0 }, 'young: a session may be about to be recorded');
    w.advance(59 * 60_000);
    assert.deepEqual(await w.commands.sweepUploads(), { examined: 2, removed: 0 });
    w.advance(2 * 60_000);
    assert.deepEqual(await w.commands.sweepUploads(), { examined: 2, removed: 1 });
    assert.deepEqual(await storeUploads(w.blobs), [session.storeUploadId, foreign].sort());
    assert.ok(!(await storeUploads(w.blobs)).includes(stray));
  });
});

describe('resumable uploads: the per-user byte budget of part links', () => {
  it('a part through a docshare link is paced: every chunk past the burst is held, at bytes / rate; another user is not held', async (t) => {
    const RATE = 1_000;
    const w = await world({ partBytesPerSecond: RATE });
    const CHUNK = 64 * 1024;
    const bytes = pngOf(PART + 100);
    const { session } = await w.commands.startUpload(w.ada, startInput(bytes.length), meta());
    const other = await w.commands.startUpload(w.bob, startInput(100), meta());

    // Long holds are counted and let go at once; anything else keeps its timer.
    const holds: number[] = [];
    const realSetTimeout = globalThis.setTimeout;
    t.mock.method(globalThis, 'setTimeout', ((fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
      if ((ms ?? 0) < 1_000) return realSetTimeout(fn, ms, ...args);
      holds.push(ms!);
      return realSetTimeout(fn, 0, ...args);
    }) as typeof setTimeout);

    const chunks = Array.from({ length: PART / CHUNK }, (_, i) => bytes.subarray(i * CHUNK, (i + 1) * CHUNK));
    const link = (s: typeof session, url: string) => {
      const query = new URL(url).searchParams;
      return [s.uploadId, 1, query.get('expires') ?? undefined, query.get('signature') ?? undefined] as const;
    };
    const [uploadId, n, expires, signature] = link(session, (await w.commands.uploadStatus(w.ada, session.uploadId)).parts[0]!.url);
    await w.commands.putPart(uploadId, n, expires, signature, Readable.from(chunks), PART);
    assert.equal(holds.length, chunks.length, 'at 1000 B/s every 64 KiB chunk waits for the ones before it');
    assert.ok(Math.abs(holds[0]! - (CHUNK / RATE * 1000 - 250)) < 1e-6, `the first chunk is held for what it takes past the burst: ${holds[0]}`);

    holds.length = 0;
    const [otherId, on, oexpires, osignature] = link(other.session, other.parts[0]!.url);
    await w.commands.putPart(otherId, on, oexpires, osignature, Readable.from([bytes.subarray(0, 100)]), 100);
    assert.deepEqual(holds, [], 'another user\'s 100 bytes are within their own burst');
    assert.deepEqual((await w.commands.uploadStatus(w.ada, session.uploadId)).received.map((p) => [p.partNumber, p.size]), [[1, PART]]);
  });
});
