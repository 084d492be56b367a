// A file's bytes handed to the gateway (distributed mode): docs-command checks the link and names
// the blob and the range, the gateway streams the blob from the store itself. The client sees the
// same answer as when docs-command streams: status, lengths, ranges and content headers; never
// the internal headers; the envelope for a blob gone (404), a range past the end (416), a store
// that fails (503). A client cannot ask for a handoff itself.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import express from 'express';
import { M } from '@docshare/contracts';
import { RangeNotSatisfiable, type BlobStream, type ByteRange } from '@docshare/blob-store';
import { BLOB_HANDOFF_HEADER, BLOB_KEY_HEADER, BLOB_RANGE_HEADER, closeServer, listen, makeLogger } from '@docshare/http';
import { httpUpstream } from '../src/proxy.ts';
import { parseBlobRange, type BlobReader } from '../src/blob-handoff.ts';

const logger = makeLogger('handoff-test', 'silent');
const BYTES = Buffer.from('0123456789abcdefghij');

/** The store: one blob `k1`; `broken` fails every read; a range past the end throws as the MinIO store does. */
const store: BlobReader & { reads: (ByteRange | undefined)[] } = {
  reads: [],
  async get(key, range) {
    store.reads.push(range);
    if (key === 'broken') throw new Error('store down');
    if (key !== 'k1') return null;
    if (range && range.start >= BYTES.length) throw new RangeNotSatisfiable(BYTES.length);
    const end = range ? Math.min(range.end, BYTES.length - 1) : BYTES.length - 1;
    const body = Readable.from([BYTES.subarray(range?.start ?? 0, end + 1)]);
    const blob: BlobStream = { size: BYTES.length, contentType: 'application/x-test', body };
    return range ? { ...blob, range: { start: range.start, end } } : blob;
  },
};

/** docs-command's side, reduced: asked for a handoff, it names the blob (`?key=`) and the range (`?range=`). */
const asked: (string | undefined)[] = [];
const service = express();
service.get('/files/:id/content', (req, res) => {
  asked.push(req.get(BLOB_HANDOFF_HEADER));
  res.setHeader('Content-Type', 'application/x-test');
  res.setHeader('Content-Disposition', 'attachment; filename="f.bin"');
  res.setHeader('ETag', '"v1"');
  if (req.get(BLOB_HANDOFF_HEADER) === '1') {
    res.setHeader(BLOB_KEY_HEADER, String(req.query.key));
    if (typeof req.query.range === 'string') res.setHeader(BLOB_RANGE_HEADER, req.query.range);
    res.status(200).end();
    return;
  }
  res.status(200).send(Buffer.from('streamed by the service'));
});

let upstream: Server;
let withStore: Server;
let withoutStore: Server;
const url = (server: Server, path: string): string => {
  const address = server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}${path}`;
};

before(async () => {
  upstream = (await listen(service, 0, '127.0.0.1')).server;
  const target = url(upstream, '');
  const gateway = (blobs?: BlobReader) => {
    const app = express();
    app.set('etag', false); // as the gateway (app.ts)
    app.use(httpUpstream(target, logger, { blobs: () => blobs }));
    return app;
  };
  withStore = (await listen(gateway(store), 0, '127.0.0.1')).server;
  withoutStore = (await listen(gateway(), 0, '127.0.0.1')).server;
});

after(async () => {
  await Promise.all([withStore, withoutStore, upstream].map((s) => closeServer(s, 0)));
});

const internal = (res: Response): string[] => [...res.headers.keys()].filter((name) => name.startsWith('x-docshare-'));

describe('blob handoff', () => {
  it('streams the whole blob from the store with the service\'s content headers and the blob\'s length', async () => {
    const res = await fetch(url(withStore, '/files/1/content?key=k1'));
    assert.equal(res.status, 200);
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), BYTES);
    assert.equal(res.headers.get('content-length'), String(BYTES.length));
    assert.equal(res.headers.get('content-type'), 'application/x-test');
    assert.equal(res.headers.get('content-disposition'), 'attachment; filename="f.bin"');
    assert.equal(res.headers.get('etag'), '"v1"');
    assert.deepEqual(internal(res), []);
    assert.equal(asked.at(-1), '1');
  });

  it('a range: 206 with the store\'s Content-Range and the range\'s length', async () => {
    store.reads.length = 0;
    const res = await fetch(url(withStore, '/files/1/content?key=k1&range=5-9'));
    assert.equal(res.status, 206);
    assert.equal(await res.text(), '56789');
    assert.equal(res.headers.get('content-range'), `bytes 5-9/${BYTES.length}`);
    assert.equal(res.headers.get('content-length'), '5');
    assert.deepEqual(store.reads, [{ start: 5, end: 9 }]);
    assert.deepEqual(internal(res), []);
  });

  it('a blob gone: 404 "File not found" in the envelope, without the file\'s headers', async () => {
    const res = await fetch(url(withStore, '/files/1/content?key=gone'));
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), { status: 'error', message: M.fileNotFound });
    assert.equal(res.headers.get('content-disposition'), null);
    assert.equal(res.headers.get('etag'), null);
  });

  it('a range past the end: 416 with Content-Range bytes */size', async () => {
    const res = await fetch(url(withStore, '/files/1/content?key=k1&range=50-60'));
    assert.equal(res.status, 416);
    assert.equal(res.headers.get('content-range'), `bytes */${BYTES.length}`);
    assert.deepEqual(await res.json(), { status: 'error', message: M.rangeNotSatisfiable });
  });

  it('a store that fails: 503 with Retry-After', async () => {
    const res = await fetch(url(withStore, '/files/1/content?key=broken'));
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('retry-after'), '5');
    assert.equal((await res.json() as { status: string }).status, 'error');
  });

  it('without a store the gateway never asks, and a client\'s own request for a handoff never reaches the service', async () => {
    const res = await fetch(url(withoutStore, '/files/1/content?key=k1'), { headers: { [BLOB_HANDOFF_HEADER]: '1' } });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'streamed by the service');
    assert.equal(asked.at(-1), undefined);
    assert.deepEqual(internal(res), []);
  });

  it('a HEAD is never handed off', async () => {
    const res = await fetch(url(withStore, '/files/1/content?key=k1'), { method: 'HEAD' });
    assert.equal(res.status, 200);
    assert.equal(asked.at(-1), undefined);
  });

  it('parses only well-formed ranges', () => {
    assert.deepEqual(parseBlobRange('0-0'), { start: 0, end: 0 });
    assert.deepEqual(parseBlobRange('3-7'), { start: 3, end: 7 });
    for (const bad of [undefined, '', '7-3', '-5', '5-', 'a-b', ['1-2']]) assert.equal(parseBlobRange(bad), undefined);
  });
});
