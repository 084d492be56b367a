import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { makeFsBlobStore, type BlobStore } from '@docshare/blob-store';
import { openFileEventLog, type EventStore } from '@docshare/event-store';
import { makeLogger } from '@docshare/http';
import { makeCommandHandler, type Decider } from '../src/commands/command-handler.ts';
import { decideFile, evolveFile, initialFileState, type FileCommand, type FileEventBody, type FileState } from '../src/commands/domain/file.ts';
import { fileIdOfBlobKey, fileStateFrom, startBlobSweeper, sweepBlobs, type SweepResult } from '../src/commands/blob-sweeper.ts';

const fileDecider: Decider<FileCommand, FileState, FileEventBody> = { initialState: initialFileState, evolve: evolveFile, decide: decideFile };
const HOUR = 60 * 60 * 1000;
const logger = makeLogger('blob-sweeper-test', 'silent');
const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});
const tempDir = async (): Promise<string> => {
  const dir = await mkdtemp(join(tmpdir(), 'docshare-sweep-'));
  dirs.push(dir);
  return dir;
};

interface World { events: EventStore; blobs: BlobStore; blobDir: string }

const world = async (): Promise<World> => {
  const blobDir = await tempDir();
  return { events: await openFileEventLog(await tempDir()), blobs: await makeFsBlobStore(blobDir), blobDir };
};

/** Stores a blob and, if `ageMs` is given, makes it look written that long ago. */
const putBlob = async (w: World, key: string, ageMs = 0): Promise<void> => {
  await w.blobs.put(key, Readable.from([Buffer.from('bytes')]), 5, 'text/plain');
  const then = new Date(Date.now() - ageMs);
  await utimes(join(w.blobDir, 'blobs', key.slice(0, 2), key), then, then);
};

const recordUpload = async (w: World, fileId: number, blobKey: string): Promise<void> => {
  const now = new Date().toISOString();
  await makeCommandHandler(w.events).handle(fileDecider, `file-${fileId}`, {
    type: 'UploadFile',
    file: {
      fileId, ownerId: 7, ownerName: 'Ada', title: 't', description: 'd', tags: [], categoryId: 1, categoryName: 'c',
      license: 'CC BY', videoUrl: null, originalFileName: 'a.txt', contentType: 'text/plain', size: 5, blobKey, uploadedAt: now,
    },
  }, now, { requestId: 'r' });
};

const recordDelete = async (w: World, fileId: number): Promise<void> => {
  const now = new Date().toISOString();
  await makeCommandHandler(w.events).handle(fileDecider, `file-${fileId}`, { type: 'DeleteFile', fileId, actorId: 7, now }, now, { requestId: 'r' });
};

const keys = async (blobs: BlobStore): Promise<string[]> => {
  const out: string[] = [];
  for await (const { key } of blobs.list()) out.push(key);
  return out.sort();
};

const keyOf = (fileId: number): string => `f${fileId}-${randomUUID()}`;

describe('blob sweeper', () => {
  it('reads the file id from server-made keys only', () => {
    assert.equal(fileIdOfBlobKey('f42-0b0f4c36-3f0e-4a8e-9d6b-2f1c0e9a7b11'), 42);
    for (const key of ['f0-0b0f4c36-3f0e-4a8e-9d6b-2f1c0e9a7b11', 'f42', 'f42-not-a-uuid', 'g42-0b0f4c36-3f0e-4a8e-9d6b-2f1c0e9a7b11',
      'contract-0b0f4c36-3f0e-4a8e-9d6b-2f1c0e9a7b11', 'f99999999999999999-0b0f4c36-3f0e-4a8e-9d6b-2f1c0e9a7b11']) {
      assert.equal(fileIdOfBlobKey(key), null, key);
    }
  });

  it('removes old unreferenced blobs and keeps referenced, young and foreign ones', async () => {
    const w = await world();
    const referenced = keyOf(1);
    const orphan = keyOf(2);
    const young = keyOf(3);
    const deleted = keyOf(4);
    const replaced = keyOf(5);
    const current = keyOf(5);
    const foreign = `contract-${randomUUID()}`;
    await putBlob(w, referenced, 2 * HOUR);
    await recordUpload(w, 1, referenced);
    await putBlob(w, orphan, 2 * HOUR);
    await putBlob(w, young, 10 * 60 * 1000);
    await putBlob(w, deleted, 2 * HOUR);
    await recordUpload(w, 4, deleted);
    await recordDelete(w, 4);
    // An upload of file 5 whose first blob was left behind: the file records another one.
    await putBlob(w, replaced, 2 * HOUR);
    await putBlob(w, current, 2 * HOUR);
    await recordUpload(w, 5, current);
    await putBlob(w, foreign, 2 * HOUR);

    const result = await sweepBlobs({ blobs: w.blobs, fileState: fileStateFrom(w.events), logger, graceMs: HOUR });
    assert.deepEqual(result, { examined: 5, removed: 3 });
    assert.deepEqual(await keys(w.blobs), [referenced, young, current, foreign].sort());
    // A second pass finds nothing more to do.
    assert.deepEqual(await sweepBlobs({ blobs: w.blobs, fileState: fileStateFrom(w.events), logger, graceMs: HOUR }), { examined: 2, removed: 0 });
    await w.events.close();
  });

  it('two sweepers at once (replicas) both succeed', async () => {
    const w = await world();
    const orphans = [keyOf(10), keyOf(11), keyOf(12)];
    for (const key of orphans) await putBlob(w, key, 2 * HOUR);
    const deps = { blobs: w.blobs, fileState: fileStateFrom(w.events), logger, graceMs: HOUR };
    const results = await Promise.all([sweepBlobs(deps), sweepBlobs(deps)]);
    assert.ok(results.every((r) => r.examined <= 3));
    assert.deepEqual(await keys(w.blobs), []);
    await w.events.close();
  });

  it('runs on its interval, reports each pass, and survives a failed pass', async () => {
    const w = await world();
    const orphan = keyOf(20);
    await putBlob(w, orphan, 2 * HOUR);
    let calls = 0;
    const passes: SweepResult[] = [];
    let secondPass!: () => void;
    const done = new Promise<void>((resolve) => { secondPass = resolve; });
    const sweeper = startBlobSweeper({
      blobs: w.blobs, logger, graceMs: HOUR, intervalMs: 5, firstRunMs: 0,
      // The event store is down for the first pass.
      fileState: async (fileId) => {
        if (calls++ === 0) throw new Error('event store unavailable');
        return fileStateFrom(w.events)(fileId);
      },
      onSwept: (result) => {
        passes.push(result);
        if (passes.length === 2) secondPass();
      },
    });
    await done;
    await sweeper.stop();
    assert.deepEqual(passes[0], { examined: 1, removed: 1 });
    assert.deepEqual(passes[1], { examined: 0, removed: 0 });
    assert.deepEqual(await keys(w.blobs), []);
    await w.events.close();
  });

  it('with an interval of 0 never sweeps on its own', async () => {
    const w = await world();
    const orphan = keyOf(30);
    await putBlob(w, orphan, 2 * HOUR);
    const sweeper = startBlobSweeper({
      blobs: w.blobs, fileState: fileStateFrom(w.events), logger, graceMs: HOUR, intervalMs: 0, firstRunMs: 0,
    });
    // Timers fire in order: a first pass due at 0 ms would have run before this one.
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(await keys(w.blobs), [orphan]);
    // One asked for still runs.
    assert.deepEqual(await sweeper.runOnce(), { examined: 1, removed: 1 });
    await sweeper.stop();
    await w.events.close();
  });
});
