// The export written where docs-command keeps it: the embedded blob store, through a PassThrough
// (the store's put takes a Readable). What a failure leaves there is the point.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { makeFsBlobStore } from '@docshare/blob-store';
import type { ExportContents, ExportOriginal } from '../src/index.ts';
import { writeAccountExport } from '../src/index.ts';
import { iterate, sha256, unzip } from './zip-reader.ts';

const root = await mkdtemp(join(tmpdir(), 'docshare-export-'));
after(async () => {
  await rm(root, { recursive: true, force: true });
});

const contents = (originals: ExportOriginal[]): ExportContents => ({
  account: { id: 7 }, files: [], commentsWritten: [], purchases: [], stats: {}, daily: null, originals: iterate(originals),
});

const exportInto = async (blobs: Awaited<ReturnType<typeof makeFsBlobStore>>, key: string, what: ExportContents) => {
  const body = new PassThrough();
  const [result, stored] = await Promise.all([writeAccountExport(what, body), blobs.put(key, body, undefined, 'application/zip')]);
  return { result, stored };
};

const readAll = async (body: Readable): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};

describe('writeAccountExport into the blob store', () => {
  it('stores the ZIP whose SHA-256 and length it reports', async () => {
    const blobs = await makeFsBlobStore(join(root, 'ok'));
    const bytes = randomBytes(2 * 1024 * 1024);
    const { result, stored } = await exportInto(blobs, 'export-7-a.zip', contents([
      { fileId: 1, fileName: 'a.bin', open: () => Promise.resolve(Readable.from([bytes])) },
    ]));
    assert.equal(stored, result.bytes);
    const blob = await blobs.get('export-7-a.zip');
    assert.ok(blob);
    const zip = await readAll(blob.body);
    assert.equal(sha256(zip), result.sha256);
    assert.deepEqual(unzip(zip).get('originals/1-a.bin'), bytes);
  });

  it('stores nothing when an original fails, and keeps the export that was there', async () => {
    const blobs = await makeFsBlobStore(join(root, 'failing'));
    const { result } = await exportInto(blobs, 'export-7-b.zip', contents([]));
    let sent = false;
    const failing = new Readable({
      read() {
        if (sent) this.destroy(new Error('blob gone'));
        else this.push(randomBytes(3 * 1024 * 1024));
        sent = true;
      },
    });
    await assert.rejects(
      exportInto(blobs, 'export-7-b.zip', contents([{ fileId: 1, fileName: 'a.bin', open: () => Promise.resolve(failing) }])),
      /blob gone/,
    );
    await assert.rejects(
      exportInto(blobs, 'export-7-c.zip', contents([{ fileId: 1, fileName: 'a.bin', open: () => Promise.reject(new Error('blob gone')) }])),
      /blob gone/,
    );
    assert.equal(await blobs.stat('export-7-c.zip'), null);
    const blob = await blobs.get('export-7-b.zip');
    assert.ok(blob);
    assert.equal(sha256(await readAll(blob.body)), result.sha256);
  });
});
