// A multipart/form-data body built as a stream, so a file of any size is sent without being held
// in memory, with its exact length known beforehand when the file's size is (the server checks
// the storage quota and the size limit from Content-Length before reading the body).
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';

/** Where an upload's bytes come from. */
export type FileSource =
  | string
  | Uint8Array
  | Blob
  | Readable
  | ReadableStream<Uint8Array>
  | AsyncIterable<Uint8Array>;

export interface OpenedFile {
  /** The file's size in bytes, when known. */
  size: number | undefined;
  fileName: string;
  contentType: string;
  /** Whether `chunks()` may be called again (a path, bytes or a Blob; not a stream). */
  replayable: boolean;
  chunks(): AsyncIterable<Uint8Array>;
}

const TYPES: Record<string, string> = {
  txt: 'text/plain', md: 'text/markdown', markdown: 'text/markdown', csv: 'text/csv', html: 'text/html', htm: 'text/html',
  json: 'application/json', xml: 'application/xml', pdf: 'application/pdf', zip: 'application/zip',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  odt: 'application/vnd.oasis.opendocument.text',
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', svg: 'image/svg+xml',
  mp3: 'audio/mpeg', mp4: 'video/mp4', webm: 'video/webm',
};

/** A content type for a file name, from its extension (`application/octet-stream` when unknown). */
export function contentTypeFor(fileName: string): string {
  const ext = path.extname(fileName).slice(1).toLowerCase();
  return TYPES[ext] ?? 'application/octet-stream';
}

async function* fromBytes(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

/** Opens an upload's source: size, name, type and a way to read it (again, when possible). */
export async function openFile(source: FileSource, opts: { fileName?: string; contentType?: string; size?: number } = {}): Promise<OpenedFile> {
  const named = (fallback: string, size: number | undefined, replayable: boolean, chunks: () => AsyncIterable<Uint8Array>): OpenedFile => {
    const fileName = opts.fileName ?? fallback;
    return { fileName, size: opts.size ?? size, contentType: opts.contentType ?? contentTypeFor(fileName), replayable, chunks };
  };
  if (typeof source === 'string') {
    const info = await stat(source);
    if (!info.isFile()) throw Object.assign(new Error(`not a file: ${source}`), { code: 'EISDIR', path: source });
    return named(path.basename(source), info.size, true, () => createReadStream(source, { highWaterMark: 256 * 1024 }));
  }
  if (source instanceof Uint8Array) return named('file', source.byteLength, true, () => fromBytes(source));
  if (source instanceof Blob) {
    const blobName = (source as Blob & { name?: unknown }).name;
    return named(typeof blobName === 'string' && blobName !== '' ? blobName : 'file', source.size, true,
      () => source.stream());
  }
  if (source instanceof ReadableStream) {
    let used = false;
    return named('file', undefined, false, () => {
      if (used) throw new Error('a stream can be read only once');
      used = true;
      return Readable.fromWeb(source as WebReadableStream<Uint8Array>);
    });
  }
  const iterable = source as AsyncIterable<Uint8Array>;
  const streamPath = (source as { path?: unknown }).path;
  const fallback = typeof streamPath === 'string' ? path.basename(streamPath) : 'file';
  let used = false;
  return named(fallback, undefined, false, () => {
    if (used) throw new Error('a stream can be read only once');
    used = true;
    return iterable;
  });
}

// As browsers and undici's FormData encode names and values (WHATWG "multipart/form-data encoding").
const escapeName = (s: string): string => s.replace(/\n/g, '%0A').replace(/\r/g, '%0D').replace(/"/g, '%22');
const normalizeLinefeeds = (s: string): string => s.replace(/\r(?!\n)|(?<!\r)\n/g, '\r\n');

export interface MultipartBody {
  contentType: string;
  /** The whole body's length, when the file's size is known. */
  length: number | undefined;
  /** The body's bytes; `onFileBytes` is told each file chunk as it is handed to the connection. */
  stream(onFileBytes?: (n: number) => void): ReadableStream<Uint8Array>;
}

/** A multipart/form-data body of text fields, then the file part `fileField`. */
export function multipartBody(fields: Record<string, string | undefined>, file: OpenedFile, fileField = 'file'): MultipartBody {
  const boundary = `----docshare-${randomBytes(16).toString('hex')}`;
  let head = '';
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    head += `--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(normalizeLinefeeds(name))}"\r\n\r\n${normalizeLinefeeds(value)}\r\n`;
  }
  head += `--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(fileField)}"; filename="${escapeName(file.fileName)}"\r\n`
    + `Content-Type: ${file.contentType.replace(/[\r\n]/g, '')}\r\n\r\n`;
  const headBytes = Buffer.from(head, 'utf8');
  const tailBytes = Buffer.from(`\r\n--${boundary}--\r\n`, 'utf8');
  const length = file.size === undefined ? undefined : headBytes.byteLength + file.size + tailBytes.byteLength;

  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    length,
    stream(onFileBytes) {
      async function* body(): AsyncGenerator<Uint8Array> {
        yield headBytes;
        let sent = 0;
        for await (const chunk of file.chunks()) {
          const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
          sent += bytes.byteLength;
          if (file.size !== undefined && sent > file.size) throw new Error(`${file.fileName}: more than the ${file.size} bytes announced`);
          onFileBytes?.(bytes.byteLength);
          yield bytes;
        }
        if (file.size !== undefined && sent !== file.size) throw new Error(`${file.fileName}: ${sent} bytes instead of the ${file.size} announced`);
        yield tailBytes;
      }
      return ReadableStream.from(body());
    },
  };
}
