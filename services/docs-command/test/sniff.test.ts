import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { contentTypeFor, SNIFF_BYTES, sniffedType } from '../src/commands/sniff.ts';

// The content type a resumable upload records (commands/sniff.ts): the first bytes decide when
// they are a known format and contradict what the client declared; otherwise the declared type stays.

const bytes = (...parts: Array<string | number[]>): Uint8Array =>
  Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'latin1') : Buffer.from(part))));

/** Each format as its files begin (a few bytes past the signature, as a real head would have). */
const HEADS: Array<[string, Uint8Array]> = [
  ['application/pdf', bytes('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n')],
  ['image/png', bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], [0, 0, 0, 13], 'IHDR')],
  ['image/jpeg', bytes([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10], 'JFIF\0')],
  ['image/gif', bytes('GIF87a', [1, 0, 1, 0])],
  ['image/gif', bytes('GIF89a', [1, 0, 1, 0])],
  ['image/webp', bytes('RIFF', [0x24, 0, 0, 0], 'WEBPVP8 ')],
  ['video/mp4', bytes([0, 0, 0, 0x20], 'ftypisom', [0, 0, 2, 0])],
  ['video/webm', bytes([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81])],
  ['audio/ogg', bytes('OggS', [0, 2, 0, 0])],
  ['audio/mpeg', bytes('ID3', [4, 0, 0, 0, 0, 0x23])],
  ['audio/mpeg', bytes('ID3', [3, 0, 0, 0, 0, 0x23])],
  ['audio/flac', bytes('fLaC', [0, 0, 0, 0x22])],
  ['application/gzip', bytes([0x1f, 0x8b, 0x08, 0x00])],
  ['application/x-7z-compressed', bytes('7z', [0xbc, 0xaf, 0x27, 0x1c, 0x00, 0x04])],
  ['application/zip', bytes([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00])],
  ['application/rtf', bytes('{\\rtf1\\ansi')],
];

describe('content sniffing', () => {
  it('recognises each format by its signature', () => {
    for (const [type, head] of HEADS) assert.equal(sniffedType(head), type, Buffer.from(head).toString('latin1'));
  });

  it('recognises nothing in text, in too few bytes, or in nothing', () => {
    for (const head of [bytes('hello, world'), bytes('%PD'), bytes([0x89, 0x50, 0x4e, 0x47]), bytes([0xff, 0xd8]), new Uint8Array()]) {
      assert.equal(sniffedType(head), null, Buffer.from(head).toString('latin1'));
    }
    assert.ok(SNIFF_BYTES >= 16, 'the head read is long enough for every signature');
  });

  it('text that merely begins like a signature is not that format', () => {
    for (const text of ['7zip is an archiver', 'ID3 tags explained', 'Convert WEBP images', 'OggSomething', 'RIFF?WAVEfmt ']) {
      assert.equal(sniffedType(bytes(text)), null, text);
      assert.equal(contentTypeFor('text/plain', bytes(text)), 'text/plain', text);
    }
    // A RIFF container that is not WebP (WAVE) is not an image.
    assert.equal(sniffedType(bytes('RIFF', [0x24, 0, 0, 0], 'WAVEfmt ')), null);
  });

  it('keeps the declared type when the bytes say the same (parameters and case kept)', () => {
    assert.equal(contentTypeFor('application/pdf', HEADS[0]![1]), 'application/pdf');
    assert.equal(contentTypeFor('Image/PNG; name=x', HEADS[1]![1]), 'Image/PNG; name=x');
  });

  it('keeps a ZIP-based declared type for ZIP bytes (office documents, EPUB, JAR, APK)', () => {
    const zip = HEADS.find(([type]) => type === 'application/zip')![1];
    for (const declared of [
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
      'application/vnd.oasis.opendocument.text',
      'application/epub+zip', 'application/java-archive', 'application/vnd.android.package-archive', 'application/zip',
    ]) assert.equal(contentTypeFor(declared, zip), declared);
    assert.equal(contentTypeFor('application/pdf', zip), 'application/zip', 'a PDF that is a ZIP is a ZIP');
  });

  it('keeps a declared video or audio type for ISO media (QuickTime, M4A), and not another type', () => {
    const mp4 = HEADS.find(([type]) => type === 'video/mp4')![1];
    assert.equal(contentTypeFor('video/quicktime', mp4), 'video/quicktime');
    assert.equal(contentTypeFor('audio/mp4', mp4), 'audio/mp4');
    assert.equal(contentTypeFor('application/octet-stream', mp4), 'video/mp4');
  });

  it('keeps the declared type when nothing matches', () => {
    for (const declared of ['text/plain', 'application/octet-stream', 'text/csv; charset=utf-8', 'application/x-custom']) {
      assert.equal(contentTypeFor(declared, bytes('name,size\nx,1\n')), declared);
      assert.equal(contentTypeFor(declared, new Uint8Array()), declared);
    }
  });

  it('replaces a declared type the bytes contradict', () => {
    for (const [type, head] of HEADS) {
      assert.equal(contentTypeFor('text/html', head), type, `${type} declared as text/html`);
      assert.equal(contentTypeFor('application/octet-stream', head), type, `${type} declared as octet-stream`);
    }
    assert.equal(contentTypeFor('image/png', HEADS[0]![1]), 'application/pdf');
    assert.equal(contentTypeFor('application/pdf', HEADS[1]![1]), 'image/png');
  });
});
