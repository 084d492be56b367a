// Reads a ZIP archive back into its entries, for the tests of the account export (issue 24): a
// reader of our own (central directory, stored and deflated entries, ZIP64 records, CRC-32 checked)
// so the black-box tests check the archive as any unzip would, without a package of their own.
import { crc32, inflateRawSync } from 'node:zlib';

export interface ZipEntry {
  name: string;
  bytes: Buffer;
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const MAX32 = 0xffffffff;

const fail = (what: string): never => {
  throw new Error(`not a valid ZIP: ${what}`);
};

/** Where the end-of-central-directory record starts (searched backwards over a trailing comment). */
const findEocd = (zip: Buffer): number => {
  for (let at = zip.length - 22; at >= Math.max(0, zip.length - 22 - 0xffff); at -= 1) {
    if (zip.readUInt32LE(at) === EOCD) return at;
  }
  return fail('no end of central directory');
};

/** The central directory's offset and entry count, from the ZIP64 record when the classic one is saturated. */
const directoryOf = (zip: Buffer): { offset: number; count: number } => {
  const eocd = findEocd(zip);
  let count = zip.readUInt16LE(eocd + 10);
  let offset = zip.readUInt32LE(eocd + 16);
  const locator = eocd - 20;
  if (locator >= 0 && zip.readUInt32LE(locator) === ZIP64_LOCATOR) {
    const record = Number(zip.readBigUInt64LE(locator + 8));
    if (zip.readUInt32LE(record) !== ZIP64_EOCD) fail('ZIP64 locator points at no ZIP64 record');
    count = Number(zip.readBigUInt64LE(record + 32));
    offset = Number(zip.readBigUInt64LE(record + 48));
  }
  return { offset, count };
};

/** Every entry of the archive, in directory order, its bytes inflated and their CRC-32 checked. */
export function readZip(zip: Buffer): ZipEntry[] {
  const { offset, count } = directoryOf(zip);
  const entries: ZipEntry[] = [];
  let at = offset;
  for (let i = 0; i < count; i += 1) {
    if (zip.readUInt32LE(at) !== CENTRAL) fail(`entry ${i}: no central directory header`);
    const method = zip.readUInt16LE(at + 10);
    const crc = zip.readUInt32LE(at + 16);
    let compressed = zip.readUInt32LE(at + 20);
    let size = zip.readUInt32LE(at + 24);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    let local = zip.readUInt32LE(at + 42);
    const name = zip.toString('utf8', at + 46, at + 46 + nameLength);
    // ZIP64 extended information (id 1): the saturated fields, in this order, each 8 bytes.
    let extra = at + 46 + nameLength;
    const extraEnd = extra + extraLength;
    while (extra + 4 <= extraEnd) {
      const id = zip.readUInt16LE(extra);
      const length = zip.readUInt16LE(extra + 2);
      if (id === 1) {
        let field = extra + 4;
        if (size === MAX32) { size = Number(zip.readBigUInt64LE(field)); field += 8; }
        if (compressed === MAX32) { compressed = Number(zip.readBigUInt64LE(field)); field += 8; }
        if (local === MAX32) { local = Number(zip.readBigUInt64LE(field)); field += 8; }
      }
      extra += 4 + length;
    }
    if (zip.readUInt32LE(local) !== LOCAL) fail(`${name}: no local header`);
    const dataAt = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const data = zip.subarray(dataAt, dataAt + compressed);
    const bytes = method === 0 ? Buffer.from(data) : method === 8 ? inflateRawSync(data) : fail(`${name}: compression method ${method}`);
    if (bytes.length !== size) fail(`${name}: ${bytes.length} bytes, the directory says ${size}`);
    if (crc32(bytes) !== crc) fail(`${name}: CRC-32 mismatch`);
    entries.push({ name, bytes });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}
