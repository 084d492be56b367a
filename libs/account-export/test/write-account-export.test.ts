import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { describe, it } from 'node:test';
import type { ExportContents, ExportManifest, ExportOriginal } from '../src/index.ts';
import { writeAccountExport, ZIP_OPTIONS } from '../src/index.ts';
import { centralDirectory, collectingSink, generated, iterate, sha256, unzip } from './zip-reader.ts';

const STORED = 0;
const DEFLATED = 8;
const NOW = new Date('2026-03-01T12:00:00.000Z');

const original = (fileId: number, fileName: string, bytes: Buffer): ExportOriginal => ({
  fileId,
  fileName,
  open: () => Promise.resolve(Readable.from([bytes.subarray(0, bytes.length >> 1), bytes.subarray(bytes.length >> 1)])),
});

const contentsWith = (originals: AsyncIterable<ExportOriginal>, daily: unknown[] | null = [{ date: '2026-02-28', views: 3 }]): ExportContents => ({
  account: { id: 7, name: 'Ann', email: 'ann@example.com' },
  files: [{ id: 1, title: 'One' }, { id: 2, title: 'Two' }],
  commentsWritten: [{ id: 5, file_id: 9, comment: 'nice' }],
  purchases: [{ file_id: 9, price: 3 }],
  stats: { files: 2, views: 10 },
  daily,
  originals,
});

/** A Readable that gives `before` bytes, then fails with `error`. */
const failingAfter = (before: number, error: Error): Readable => {
  let sent = false;
  return new Readable({
    read() {
      if (!sent) {
        sent = true;
        this.push(Buffer.alloc(before, 1));
      } else this.destroy(error);
    },
  });
};

describe('writeAccountExport', () => {
  it('writes every part, the originals byte for byte, and a manifest whose SHA-256s match them', async () => {
    const bytes = [randomBytes(300_000), Buffer.alloc(0), randomBytes(10)];
    const sink = collectingSink();
    const result = await writeAccountExport(contentsWith(iterate([
      original(1, 'report.pdf', bytes[0] as Buffer),
      original(2, 'empty.txt', bytes[1] as Buffer),
      original(3, 'tiny.bin', bytes[2] as Buffer),
    ])), sink, { now: () => NOW });

    const zip = sink.bytes();
    assert.equal(result.bytes, zip.length);
    assert.equal(result.sha256, sha256(zip));
    const entries = unzip(zip);
    assert.deepEqual([...entries.keys()], [
      'account.json', 'files.json', 'comments_written.json', 'purchases.json', 'stats.json', 'daily.json',
      'originals/1-report.pdf', 'originals/2-empty.txt', 'originals/3-tiny.bin', 'manifest.json',
    ]);
    const json = (name: string): unknown => JSON.parse((entries.get(name) as Buffer).toString('utf8'));
    const contents = contentsWith(iterate([]));
    assert.deepEqual(json('account.json'), contents.account);
    assert.deepEqual(json('files.json'), contents.files);
    assert.deepEqual(json('comments_written.json'), contents.commentsWritten);
    assert.deepEqual(json('purchases.json'), contents.purchases);
    assert.deepEqual(json('stats.json'), contents.stats);
    assert.deepEqual(json('daily.json'), contents.daily);
    assert.equal((entries.get('files.json') as Buffer).toString('utf8'), `${JSON.stringify(contents.files, null, 2)}\n`);

    assert.deepEqual(entries.get('originals/1-report.pdf'), bytes[0]);
    assert.deepEqual(entries.get('originals/2-empty.txt'), bytes[1]);
    assert.deepEqual(entries.get('originals/3-tiny.bin'), bytes[2]);
    const manifest = json('manifest.json') as ExportManifest;
    assert.equal(manifest.exported_at, NOW.toISOString());
    assert.deepEqual(manifest.originals.map((o) => o.file_id), [1, 2, 3]);
    for (const entry of manifest.originals) {
      const content = entries.get(entry.path) as Buffer;
      assert.equal(entry.sha256, sha256(content), entry.path);
      assert.equal(entry.bytes, content.length, entry.path);
    }
    assert.deepEqual(result.originals, manifest.originals.map(({ path, sha256: hash, bytes: size }) => ({ path, sha256: hash, bytes: size })));
  });

  it('stores the originals as they are and deflates the JSON, with ZIP64 records written', async () => {
    assert.equal(ZIP_OPTIONS.forceZip64, true);
    const sink = collectingSink();
    const text = Buffer.from('the same line again\n'.repeat(5000));
    await writeAccountExport(contentsWith(iterate([original(4, 'notes.txt', text)])), sink);
    const { zip64, entries } = centralDirectory(sink.bytes());
    assert.equal(zip64, true);
    const byName = new Map(entries.map((e) => [e.name, e]));
    const stored = byName.get('originals/4-notes.txt');
    assert.equal(stored?.method, STORED);
    assert.equal(stored.compressedSize, text.length);
    for (const name of ['account.json', 'files.json', 'comments_written.json', 'purchases.json', 'stats.json', 'daily.json', 'manifest.json']) {
      assert.equal(byName.get(name)?.method, DEFLATED, name);
    }
  });

  it('leaves daily.json out when there are no daily statistics, and writes an export without originals', async () => {
    const sink = collectingSink();
    const result = await writeAccountExport(contentsWith(iterate([]), null), sink);
    const entries = unzip(sink.bytes());
    assert.deepEqual([...entries.keys()], ['account.json', 'files.json', 'comments_written.json', 'purchases.json', 'stats.json', 'manifest.json']);
    assert.deepEqual(result.originals, []);
    assert.deepEqual((JSON.parse((entries.get('manifest.json') as Buffer).toString('utf8')) as ExportManifest).originals, []);
  });

  it('names hostile file names safely and uniquely, the manifest saying which file each is', async () => {
    const hostile = ['../../../../etc/cron.d/evil', '/abs/path.sh', '..\\..\\win.ini', 'a\u0000b\u001b]0;x\u0007.txt', 'invoice\u202Efdp.exe', '..', 'Same.txt', 'same.txt'];
    const sink = collectingSink();
    await writeAccountExport(contentsWith(iterate(hostile.map((name, i) => original(100 + (i >= 6 ? 6 : i), name, Buffer.from(name))))), sink);
    const entries = unzip(sink.bytes());
    const originals = [...entries.keys()].filter((name) => name.startsWith('originals/'));
    assert.deepEqual(originals, [
      'originals/100-evil', 'originals/101-path.sh', 'originals/102-win.ini', 'originals/103-ab]0;x.txt',
      'originals/104-invoicefdp.exe', 'originals/105-file', 'originals/106-Same.txt', 'originals/106-same (2).txt',
    ]);
    for (const name of entries.keys()) {
      assert.doesNotMatch(name, /(^|\/)\.\.(\/|$)|^\/|\\|[\p{Cc}\p{Cf}]/u, name);
    }
    const manifest = JSON.parse((entries.get('manifest.json') as Buffer).toString('utf8')) as ExportManifest;
    assert.deepEqual(manifest.originals.map((o) => [o.path, o.file_id]), originals.map((path, i) => [path, 100 + (i >= 6 ? 6 : i)]));
    hostile.forEach((name, i) => assert.deepEqual(entries.get(originals[i] as string), Buffer.from(name)));
  });

  it('opens each original only when the previous one is written: one open at a time', async () => {
    let open = 0;
    let mostOpen = 0;
    const originals = Array.from({ length: 5 }, (_, i): ExportOriginal => ({
      fileId: i,
      fileName: `f${i}`,
      open: () => {
        open++;
        mostOpen = Math.max(mostOpen, open);
        const stream = generated(200_000);
        stream.once('end', () => open--);
        return Promise.resolve(stream);
      },
    }));
    const sink = collectingSink();
    await writeAccountExport(contentsWith(iterate(originals)), sink);
    assert.equal(mostOpen, 1);
    assert.equal(unzip(sink.bytes()).size, 6 + 5 + 1);
  });

  it('reads an original only as fast as the sink takes the ZIP', async () => {
    const source = generated(256 * 1024 * 1024, 1024 * 1024);
    const held: Array<() => void> = [];
    let received = 0;
    const sink = new Writable({
      highWaterMark: 16 * 1024,
      write(chunk: Buffer, _encoding, callback) {
        received += chunk.length;
        held.push(callback);
      },
    });
    const done = writeAccountExport(contentsWith(iterate([{ fileId: 1, fileName: 'big.bin', open: () => Promise.resolve(source) }])), sink);
    // Many turns of the event loop with the sink taking nothing: without backpressure the source would
    // be read at a megabyte a turn; with it, reading stops once the buffers between are full.
    for (let turn = 0; turn < 500; turn++) await new Promise((resolve) => setImmediate(resolve));
    assert.ok(held.length > 0, 'the sink got a first write');
    assert.ok(source.produced() < 32 * 1024 * 1024, `read ${source.produced()} bytes while the sink took ${received}`);
    source.destroy(new Error('stop'));
    for (const callback of held.splice(0)) callback();
    await assert.rejects(done, /stop/);
  });

  it('rejects when an original fails mid-way, and destroys the sink instead of finishing it', async () => {
    const failure = new Error('disk read failed');
    const sink = collectingSink();
    let finished = false;
    sink.on('finish', () => {
      finished = true;
    });
    const originals = iterate<ExportOriginal>([
      original(1, 'ok.bin', randomBytes(100_000)),
      { fileId: 2, fileName: 'broken.bin', open: () => Promise.resolve(failingAfter(50_000, failure)) },
      original(3, 'never.bin', randomBytes(10)),
    ]);
    await assert.rejects(writeAccountExport(contentsWith(originals), sink), failure);
    assert.equal(sink.destroyed, true);
    assert.equal(finished, false);
    assert.throws(() => unzip(sink.bytes()));
  });

  it('rejects when an original cannot be opened, or the originals cannot be listed, destroying the sink', async () => {
    for (const originals of [
      iterate<ExportOriginal>([{ fileId: 1, fileName: 'gone.bin', open: () => Promise.reject(new Error('no such blob')) }]),
      (async function* (): AsyncGenerator<ExportOriginal> {
        yield original(1, 'a.bin', randomBytes(1000));
        await Promise.resolve();
        throw new Error('no such blob');
      })(),
    ]) {
      const sink = collectingSink();
      await assert.rejects(writeAccountExport(contentsWith(originals), sink), /no such blob/);
      assert.equal(sink.destroyed, true);
      assert.equal(sink.writableFinished, false);
    }
  });

  it('rejects when the sink fails, and closes the original being read', async () => {
    const source = generated(64 * 1024 * 1024);
    let received = 0;
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        received += chunk.length;
        if (received > 2 * 1024 * 1024) callback(new Error('bucket unavailable'));
        else setImmediate(callback);
      },
    });
    await assert.rejects(
      writeAccountExport(contentsWith(iterate([{ fileId: 1, fileName: 'big.bin', open: () => Promise.resolve(source) }])), sink),
      /bucket unavailable/,
    );
    assert.ok(source.produced() > 0, 'the original was being read when the sink failed');
    assert.equal(source.destroyed, true);
    assert.ok(source.produced() < 64 * 1024 * 1024);
  });
});
