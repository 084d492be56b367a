// The extractor's event handler over a real blob store and the real sandbox: what it records for
// each upload, what it skips, and that only a dependency failure fails a batch.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { ExtractionReport, StoredEvent } from '@docshare/contracts';
import { makeFsBlobStore } from '@docshare/blob-store';
import { makeExtractor, type Extractor } from '@docshare/extract';
import { makeHistory } from '@docshare/projection/testing';
import { makeLogger } from '@docshare/http';
import { makeExtractionWork, type ExtractionDeps, type ExtractionRecorder } from '../src/extraction.ts';

const logger = makeLogger('test', 'silent');

/** The settling handler: resolves once every upload of the records is done. */
const settle = (deps: ExtractionDeps) => makeExtractionWork(deps).settle;

interface Recorded { fileId: number; blobKey: string; report: ExtractionReport; cause: { eventId: string; correlationId: string } }

const recorder = (status: (fileId: number) => 'pending' | 'done' | 'gone' = () => 'pending') => {
  const records: Recorded[] = [];
  const port: ExtractionRecorder = {
    status: async (fileId) => status(fileId),
    record: async (fileId, blobKey, report, cause) => { records.push({ fileId, blobKey, report, cause }); },
  };
  return { port, records };
};

describe('text extractor: event handler', () => {
  let dir: string;
  let extractor: Extractor;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'docshare-extractor-'));
    extractor = makeExtractor({ timeoutMs: 20_000, memoryMb: 256, maxChars: 1_000, maxBytes: 1_000_000 });
  });
  after(async () => {
    await extractor.close();
    await rm(dir, { recursive: true, force: true });
  });

  const store = async (files: Record<string, string>) => {
    const blobs = await makeFsBlobStore(join(dir, `b${Math.random().toString(16).slice(2)}`));
    for (const [key, text] of Object.entries(files)) await blobs.put(key, Readable.from([Buffer.from(text)]), Buffer.byteLength(text), 'text/plain');
    return blobs;
  };

  it('records the text of each pending upload, caused by its upload event; ignores every other event', async () => {
    const h = makeHistory();
    h.user(1, 'Ada');
    h.upload(10, 1, 'notes', { blobKey: 'f10', originalFileName: 'notes.txt', contentType: 'text/plain', size: 24 });
    h.view(10, 1);
    h.upload(11, 1, 'page', { blobKey: 'f11', originalFileName: 'page.html', contentType: 'text/html', size: 40 });
    const blobs = await store({ f10: 'The zeppelin landed late', f11: '<p>A <b>bold</b> paragraph here</p>' });
    const { port, records } = recorder();
    await settle({ blobs, extractor, recorder: port, logger, maxBytes: 1_000_000 })(h.records as StoredEvent[]);
    assert.deepEqual(records.map((r) => [r.fileId, r.blobKey, r.report.ok, r.report.format]), [[10, 'f10', true, 'text'], [11, 'f11', true, 'html']]);
    const [first, second] = records;
    assert.equal(first?.report.ok && first.report.text, 'The zeppelin landed late');
    assert.match(second?.report.ok ? second.report.text : '', /A bold paragraph here/);
    const upload = h.records.find((r) => r.event.type === 'docs.file.uploaded.v1')!.event;
    assert.deepEqual(first?.cause, { eventId: upload.id, correlationId: upload.correlationid });
  });

  it('skips files already done or gone, and a file whose bytes are gone', async () => {
    const h = makeHistory();
    h.upload(20, 1, 'a', { blobKey: 'f20' }); h.upload(21, 1, 'b', { blobKey: 'f21' }); h.upload(22, 1, 'c', { blobKey: 'f22-missing' });
    const blobs = await store({ f20: 'done already', f21: 'deleted meanwhile' });
    const { port, records } = recorder((id) => (id === 20 ? 'done' : id === 21 ? 'gone' : 'pending'));
    await settle({ blobs, extractor, recorder: port, logger, maxBytes: 1_000_000 })(h.records as StoredEvent[]);
    assert.deepEqual(records, []);
  });

  it('records too_large without reading a file over the limit, and unsupported_type for an unknown format', async () => {
    const h = makeHistory();
    h.upload(30, 1, 'big', { blobKey: 'f30', size: 5_000, originalFileName: 'big.txt' });
    h.upload(31, 1, 'bin', { blobKey: 'f31', size: 4, originalFileName: 'x.bin', contentType: 'application/octet-stream' });
    const blobs = await store({ f31: '\u0000\u0001\u0002\u0003' });
    const { port, records } = recorder();
    await settle({ blobs, extractor, recorder: port, logger, maxBytes: 1_000 })(h.records as StoredEvent[]);
    assert.deepEqual(records.map((r) => [r.fileId, r.report.ok ? 'ok' : r.report.reason]), [[30, 'too_large'], [31, 'unsupported_type']]);
  });

  it('fails the batch when docs-command cannot take the record (the bus then retries it)', async () => {
    const h = makeHistory();
    h.upload(40, 1, 'x', { blobKey: 'f40', size: 5 });
    const blobs = await store({ f40: 'hello' });
    const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const port: ExtractionRecorder = { status: async () => 'pending', record: async () => { throw down; } };
    await assert.rejects(settle({ blobs, extractor, recorder: port, logger, maxBytes: 1_000 })(h.records as StoredEvent[]), down);
  });
});
