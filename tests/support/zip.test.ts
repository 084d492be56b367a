// The tests' ZIP reader (zip.ts) reads what the account export writes (ZIP64 records, stored
// originals, deflated JSON) entry for entry, and refuses an archive that is damaged.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { writeAccountExport, type ExportOriginal } from '@docshare/account-export';
import { readZip } from './zip.ts';

const originals = [
  { fileId: 7, fileName: 'big.bin', bytes: randomBytes(300_000) },
  { fileId: 9, fileName: 'empty.txt', bytes: Buffer.alloc(0) },
];

/** An export of some JSON and the originals above, as bytes. */
const exportZip = async (): Promise<{ zip: Buffer; sha256: string }> => {
  async function* each(): AsyncIterable<ExportOriginal> {
    for (const o of originals) yield { fileId: o.fileId, fileName: o.fileName, open: async () => Readable.from([o.bytes]) };
  }
  const sink = new PassThrough();
  const chunks: Buffer[] = [];
  sink.on('data', (chunk: Buffer) => chunks.push(chunk));
  const result = await writeAccountExport({
    account: { id: 1, name: 'Zed' }, files: [{ file_id: 7 }, { file_id: 9 }], commentsWritten: [], purchases: [], stats: { total_files: 2 }, daily: null,
    originals: each(),
  }, sink);
  const zip = Buffer.concat(chunks);
  assert.equal(zip.length, result.bytes);
  return { zip, sha256: result.sha256 };
};

describe('readZip', () => {
  it('reads every entry of an account export: JSON, originals byte for byte, the manifest last', async () => {
    const { zip, sha256 } = await exportZip();
    assert.equal(createHash('sha256').update(zip).digest('hex'), sha256);
    const entries = readZip(zip);
    const names = entries.map((e) => e.name);
    assert.deepEqual(names.filter((n) => n.endsWith('.json') && !n.startsWith('originals/')), ['account.json', 'files.json', 'comments_written.json', 'purchases.json', 'stats.json', 'manifest.json']);
    assert.deepEqual(JSON.parse(entries.find((e) => e.name === 'account.json')?.bytes.toString() ?? ''), { id: 1, name: 'Zed' });
    const manifest = JSON.parse(entries.at(-1)?.bytes.toString() ?? '') as { originals: Array<{ path: string; file_id: number; sha256: string }> };
    for (const o of originals) {
      const listed = manifest.originals.find((m) => m.file_id === o.fileId);
      assert.ok(listed);
      const entry = entries.find((e) => e.name === listed.path);
      assert.ok(entry?.bytes.equals(o.bytes), `${listed.path} holds the original's bytes`);
    }
  });

  it('refuses a damaged archive: a changed byte inside an entry, a cut-off end, bytes that are no ZIP', async () => {
    const { zip } = await exportZip();
    const big = originals[0]?.bytes as Buffer;
    const at = zip.indexOf(big.subarray(0, 64));
    assert.ok(at > 0, 'the stored original is in the archive as it is');
    const changed = Buffer.from(zip);
    changed[at + 1000] = (changed[at + 1000] as number) ^ 0xff;
    assert.throws(() => readZip(changed), /CRC-32 mismatch/);
    assert.throws(() => readZip(zip.subarray(0, zip.length - 30)), /not a valid ZIP/);
    assert.throws(() => readZip(randomBytes(4096)), /not a valid ZIP/);
  });
});
