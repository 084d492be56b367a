/*
 * The content type of a resumable upload's file, from its first bytes (docs/api-decisions.md,
 * resumable uploads): the client declares `content_type`, but the bytes, which docs-command never
 * saw pass, decide when they are a format recognised here. A sniffed type wins over a declared
 * one it contradicts; a declared type the bytes are compatible with (a DOCX is a ZIP) is kept.
 */

/** How many leading bytes `sniff` looks at. */
export const SNIFF_BYTES = 64;

/** `null` in `bytes`: any byte there (a length field). */
interface Signature { offset: number; bytes: Array<number | null>; type: string }
const ascii = (text: string): number[] => [...text].map((c) => c.charCodeAt(0));
const SIGNATURES: readonly Signature[] = [
  { offset: 0, bytes: ascii('%PDF-'), type: 'application/pdf' },
  { offset: 0, bytes: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], type: 'image/png' },
  { offset: 0, bytes: [0xff, 0xd8, 0xff], type: 'image/jpeg' },
  { offset: 0, bytes: ascii('GIF87a'), type: 'image/gif' },
  { offset: 0, bytes: ascii('GIF89a'), type: 'image/gif' },
  { offset: 0, bytes: [...ascii('RIFF'), null, null, null, null, ...ascii('WEBP')], type: 'image/webp' },
  { offset: 4, bytes: ascii('ftyp'), type: 'video/mp4' },
  { offset: 0, bytes: [0x1a, 0x45, 0xdf, 0xa3], type: 'video/webm' },
  { offset: 0, bytes: [...ascii('OggS'), 0x00], type: 'audio/ogg' },
  { offset: 0, bytes: [...ascii('ID3'), null, 0x00], type: 'audio/mpeg' },
  { offset: 0, bytes: ascii('fLaC'), type: 'audio/flac' },
  { offset: 0, bytes: [0x1f, 0x8b], type: 'application/gzip' },
  { offset: 0, bytes: [...ascii('7z'), 0xbc, 0xaf, 0x27, 0x1c], type: 'application/x-7z-compressed' },
  { offset: 0, bytes: [0x50, 0x4b, 0x03, 0x04], type: 'application/zip' },
  { offset: 0, bytes: ascii('{\\rtf'), type: 'application/rtf' },
];

/** Types whose files are ZIP archives: a ZIP signature does not contradict them. */
const ZIP_BASED = /^application\/(zip|epub\+zip|java-archive|vnd\.openxmlformats-officedocument\.[\w.+-]+|vnd\.oasis\.opendocument\.[\w.+-]+|vnd\.android\.package-archive)$/;

const matches = (head: Uint8Array, { offset, bytes }: Signature): boolean =>
  head.length >= offset + bytes.length && bytes.every((byte, i) => byte === null || head[offset + i] === byte);

/** The type the first bytes say, when they say one. */
export const sniffedType = (head: Uint8Array): string | null => SIGNATURES.find((signature) => matches(head, signature))?.type ?? null;

/** The content type to record: the declared one unless the first bytes contradict it. */
export const contentTypeFor = (declared: string, head: Uint8Array): string => {
  const sniffed = sniffedType(head);
  if (sniffed === null) return declared;
  const base = declared.split(';')[0]!.trim().toLowerCase();
  if (base === sniffed) return declared;
  if (sniffed === 'application/zip' && ZIP_BASED.test(base)) return declared;
  // An MP4 family box: QuickTime and other ISO media keep their declared video/audio type.
  if (sniffed === 'video/mp4' && /^(video|audio)\//.test(base)) return declared;
  return sniffed;
};
