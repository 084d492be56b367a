// Test helpers: what a test reads a ZIP back with. fflate unzips the bytes; the central directory is
// also walked here by hand, because fflate does not say how each entry was compressed, nor whether the
// archive carries ZIP64 records.
import { createHash } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { unzipSync } from 'fflate';

export const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** Every entry's bytes, by name. */
export const unzip = (zip: Buffer): Map<string, Buffer> =>
  new Map(Object.entries(unzipSync(new Uint8Array(zip))).map(([name, bytes]) => [name, Buffer.from(bytes)]));

export interface CentralEntry { name: string; method: number; compressedSize: number; size: number }

/** The central directory, read through the ZIP64 end record (so fails when there is none). */
export const centralDirectory = (zip: Buffer): { zip64: boolean; entries: CentralEntry[] } => {
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (eocd < 0) throw new Error('no end of central directory record');
  const locator = eocd - 20;
  const zip64 = zip.readUInt32LE(locator) === 0x07064b50;
  let count = zip.readUInt16LE(eocd + 10);
  let offset = zip.readUInt32LE(eocd + 16);
  if (zip64) {
    const record = Number(zip.readBigUInt64LE(locator + 8));
    if (zip.readUInt32LE(record) !== 0x06064b50) throw new Error('ZIP64 locator points at no ZIP64 end record');
    count = Number(zip.readBigUInt64LE(record + 32));
    offset = Number(zip.readBigUInt64LE(record + 48));
  }
  const entries: CentralEntry[] = [];
  for (let i = 0; i < count; i++) {
    if (zip.readUInt32LE(offset) !== 0x02014b50) throw new Error(`no central header at ${offset}`);
    const nameLength = zip.readUInt16LE(offset + 28);
    const extraLength = zip.readUInt16LE(offset + 30);
    const commentLength = zip.readUInt16LE(offset + 32);
    entries.push({
      name: zip.subarray(offset + 46, offset + 46 + nameLength).toString('utf8'),
      method: zip.readUInt16LE(offset + 10),
      compressedSize: zip.readUInt32LE(offset + 20),
      size: zip.readUInt32LE(offset + 24),
    });
    offset += 46 + nameLength + extraLength + commentLength;
  }
  return { zip64, entries };
};

/** A sink that keeps everything written to it, taking each chunk on a later turn (so writes queue up). */
export const collectingSink = (): Writable & { bytes(): Buffer } => {
  const chunks: Buffer[] = [];
  const sink = new Writable({
    highWaterMark: 16 * 1024,
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk);
      setImmediate(callback);
    },
  });
  return Object.assign(sink, { bytes: () => Buffer.concat(chunks) });
};

/** `total` bytes of a repeating pattern, made as they are read, in `chunk`-sized pieces. Counts what was read. */
export const generated = (total: number, chunk = 64 * 1024): Readable & { produced(): number } => {
  let produced = 0;
  const piece = Buffer.alloc(chunk);
  for (let i = 0; i < chunk; i++) piece[i] = (i * 31 + 7) & 0xff;
  const stream = new Readable({
    highWaterMark: chunk,
    read() {
      if (produced >= total) {
        this.push(null);
        return;
      }
      const size = Math.min(chunk, total - produced);
      produced += size;
      this.push(Buffer.from(piece.subarray(0, size)));
    },
  });
  return Object.assign(stream, { produced: () => produced });
};

/** An async iterable of the given items, handed out one by one as asked. */
export async function* iterate<T>(items: readonly T[]): AsyncGenerator<T> {
  for (const item of items) yield await Promise.resolve(item);
}
