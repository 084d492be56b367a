// readUploadForm against real sockets: broken, cut-off and oversized multipart bodies end in a
// DocshareError (never an uncaught stream error, which would fail this file), stop reading at the
// limit, and leave nothing stored. The file part streams into a real (fs) blob store.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import net from 'node:net';
import { PassThrough } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Request } from 'express';
import { DocshareError, M } from '@docshare/contracts';
import { makeFsBlobStore, type BlobStore } from '@docshare/blob-store';
import { readUploadForm, type FileSink, type UploadForm } from '../src/http/upload-form.ts';

const MAX = 10_000;
let blobDir = '';
let blobs: BlobStore;
let stores = 0;
interface Stored { key: string; size: number }
/** A sink like docs-command's: a fresh key per file part, the bytes straight into the blob store. */
const sink: FileSink<Stored> = {
  async store(body, contentType, maxBytes) {
    const key = `f${++stores}-test`;
    return { key, size: await blobs.put(key, body, undefined, contentType, { maxBytes }) };
  },
  async discard({ key }) {
    await blobs.remove(key);
  },
};
/** Every blob stored and every put in flight (its temp file). */
const leftovers = async (): Promise<string[]> => {
  const keys: string[] = [];
  for await (const { key } of blobs.list()) keys.push(key);
  return [...keys, ...await readdir(join(blobDir, 'tmp'))];
};
let server: Server;
let port = 0;
/** The outcome of the last form read by the server, and how many body bytes had arrived by then. */
let last: Promise<{ form?: UploadForm<Stored>; error?: unknown; received: number }> = Promise.resolve({ received: 0 });
let requests = 0;

before(async () => {
  blobDir = await mkdtemp(join(tmpdir(), 'upload-form-test-'));
  blobs = await makeFsBlobStore(blobDir);
  server = createServer((req, res) => {
    let received = 0;
    req.on('data', (chunk: Buffer) => { received += chunk.length; });
    // The express helpers readUploadForm uses: `get` of a header.
    const request = Object.assign(req, { get: (name: string) => req.headers[name.toLowerCase()] }) as unknown as Request;
    requests += 1;
    last = readUploadForm(request, sink, MAX).then(
      (form) => ({ form, received }),
      (error: unknown) => ({ error, received }),
    );
    void last.then(() => {
      res.setHeader('Connection', 'close');
      res.end('done');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as net.AddressInfo).port;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await rm(blobDir, { recursive: true, force: true });
});

/** Sends a multipart request (boundary X) with `body`, optionally cutting the socket after it. */
const send = async (body: string | Buffer, options: { length?: number; cut?: boolean } = {}): Promise<void> => {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const length = options.length ?? Buffer.byteLength(body);
  socket.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=X\r\nContent-Length: ${length}\r\n\r\n`);
  socket.write(body);
  if (options.cut) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.destroy();
  }
  await new Promise<void>((resolve) => {
    socket.on('close', () => resolve());
    socket.resume();
  });
};

const expectFailure = async (kind: DocshareError['kind'], message: string): Promise<number> => {
  const outcome = await last;
  assert.ok(outcome.error instanceof DocshareError, `expected a DocshareError, got ${String(outcome.error)}`);
  assert.equal(outcome.error.kind, kind);
  assert.equal(outcome.error.message, message);
  assert.deepEqual(await leftovers(), [], 'nothing may be left stored');
  return outcome.received;
};

const part = (name: string, filename?: string): string =>
  `--X\r\nContent-Disposition: form-data; name="${name}"${filename === undefined ? '' : `; filename="${filename}"`}\r\n\r\n`;

describe('readUploadForm', () => {
  it('reads a well-formed form: fields, the file stored with its size', async () => {
    await send(`${part('title')}T\r\n${part('file', 'a.txt')}hello\r\n--X--\r\n`);
    const { form } = await last;
    assert.ok(form);
    assert.deepEqual(form.fields, { title: 'T' });
    assert.equal(form.file?.size, 5);
    assert.equal(form.file?.fileName, 'a.txt');
    const blob = await blobs.get(form.file.key);
    assert.ok(blob);
    // busboy's default for a part without a Content-Type.
    assert.equal(blob.contentType, 'text/plain');
    assert.deepEqual(await buffer(blob.body), Buffer.from('hello'));
    await form.discard();
    await form.discard();
    assert.deepEqual(await leftovers(), []);
  });

  it('fields after the file part are read too; the file part\'s content type is kept', async () => {
    await send(`${part('file', 'dir/b.pdf').replace('\r\n\r\n', '\r\nContent-Type: application/pdf\r\n\r\n')}%PDF\r\n${part('title')}After\r\n--X--\r\n`);
    const { form } = await last;
    assert.ok(form?.file);
    assert.deepEqual(form.fields, { title: 'After' });
    assert.deepEqual({ size: form.file.size, fileName: form.file.fileName, contentType: form.file.contentType }, { size: 4, fileName: 'b.pdf', contentType: 'application/pdf' });
    assert.deepEqual(await blobs.stat(form.file.key), { size: 4, contentType: 'application/pdf' });
    await form.discard();
  });

  it('a file of exactly the limit is stored', async () => {
    await send(`${part('file', 'max.bin')}${'m'.repeat(MAX)}\r\n--X--\r\n`);
    const { form } = await last;
    assert.equal(form?.file?.size, MAX);
    await form?.discard();
  });

  it('a form that breaks after its file was stored removes it: "Malformed multipart body"', async () => {
    await send(`${part('file', 'a.txt')}stored\r\n${part('title')}cut off`);
    await expectFailure('invalid', M.malformedMultipart);
  });

  it('a sink that fails fails the form with its error, and nothing is left', async () => {
    const failing: FileSink<Stored> = {
      async store(body) {
        body.destroy();
        throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      },
      discard: sink.discard,
    };
    const body = `${part('file', 'a.txt')}${'x'.repeat(5000)}\r\n--X--\r\n`;
    const req = Object.assign(new PassThrough(), {
      headers: { 'content-type': 'multipart/form-data; boundary=X', 'content-length': String(body.length) },
      complete: true,
      get: (name: string) => (name.toLowerCase() === 'content-type' ? 'multipart/form-data; boundary=X' : String(body.length)),
    });
    req.end(body);
    await assert.rejects(readUploadForm(req as unknown as Request, failing, MAX), { code: 'ECONNREFUSED' });
    assert.deepEqual(await leftovers(), []);
  });

  it('an ignored part cut off by the end of the form → invalid "Malformed multipart body"', async () => {
    await send(`${part('junk', 'a.txt')}AAAA`);
    await expectFailure('invalid', M.malformedMultipart);
  });

  it('a second file part cut off → invalid "Malformed multipart body", the first one\'s blob removed', async () => {
    await send(`${part('file', 'a.txt')}AAAA\r\n${part('file', 'b.txt')}BBBB`);
    await expectFailure('invalid', M.malformedMultipart);
  });

  it('a client gone in the middle of an ignored part or of the file part → "Request aborted", nothing left', async () => {
    for (const name of ['junk', 'file']) {
      await send(`${part(name, 'a.txt')}${'A'.repeat(500)}`, { length: 5_000, cut: true });
      await expectFailure('invalid', M.requestAborted);
    }
  });

  it('a file over the limit → too_large "File too large", and reading stops there', async () => {
    const total = 64 * 1024 * 1024;
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=X\r\nContent-Length: ${total}\r\n\r\n${part('file', 'big.bin')}`);
    const seen = requests;
    while (requests === seen) await new Promise((resolve) => setTimeout(resolve, 5));
    let failed = false;
    void last.then(() => { failed = true; });
    // Write until the form has failed; the server must not need the whole body for that.
    const chunk = Buffer.alloc(64 * 1024, 0x41);
    for (let sent = 0; sent < total && !failed; sent += chunk.length) {
      if (!socket.write(chunk)) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    const received = await expectFailure('too_large', M.fileTooLarge);
    assert.ok(received < total / 2, `read ${received} of ${total} bytes`);
    socket.destroy();
  });

  it('a multipart header without a boundary → invalid "Malformed multipart body"', async () => {
    const request = { headers: { 'content-type': 'multipart/form-data' }, get: () => 'multipart/form-data' } as unknown as Request;
    await assert.rejects(readUploadForm(request, sink, MAX), (error: unknown) =>
      error instanceof DocshareError && error.message === M.malformedMultipart);
  });
});

describe('a part that starts after the form failed', () => {
  it('is never stored: a malformed part header followed by a file in the same chunk ends the form at once', { timeout: 20_000 }, async () => {
    // Busboy reports `Malformed part header` (over 2,000 header pairs) and then goes on parsing the
    // chunk in hand, announcing the next part; storing it would wait for a stream nobody ends.
    const headers = Array.from({ length: 3000 }, (_, i) => `X-P${i}: v\r\n`).join('');
    const body = Buffer.from(`--X\r\nContent-Disposition: form-data; name="title"\r\n${headers}\r\nx\r\n`
      + `--X\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\n${'a'.repeat(MAX + 5_000)}\r\n--X--\r\n`);
    const req = Object.assign(new PassThrough(), {
      headers: { 'content-type': 'multipart/form-data; boundary=X', 'content-length': String(body.length) },
      get: (name: string) => (name.toLowerCase() === 'content-type' ? 'multipart/form-data; boundary=X' : String(body.length)),
    });
    // The form's error and the file's start arrive in one chunk, the file's end in the next.
    const cut = body.length - 100;
    req.write(body.subarray(0, cut));
    setImmediate(() => req.end(body.subarray(cut)));
    await assert.rejects(readUploadForm(req as unknown as Request, sink, MAX), (error: unknown) =>
      error instanceof DocshareError && error.message === M.malformedMultipart);
    assert.deepEqual(await leftovers(), []);
  });
});
