import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CloudEvent, StoredEvent } from '@docshare/contracts';
import type { BatchHandler, EventBatch, EventConsumer } from '@docshare/event-bus';
import { generateKekText, makeMemoryKeyStore, makePersonalData, openingConsumer, parseKek } from '../src/index.ts';

const event = (type: string, data: Record<string, unknown>, n: number): CloudEvent => ({
  specversion: '1.0', id: `e-${n}`, source: '/test', type, time: '2026-11-29T00:00:00Z', subject: `s-${n}`,
  datacontenttype: 'application/json', correlationid: 'c', causationid: 'c', streamversion: 1, data,
});

describe('openingConsumer with `only`', () => {
  it('opens the events of the listed types and hands the others over sealed, in their order', async () => {
    const pd = makePersonalData({ store: makeMemoryKeyStore(), kek: parseKek(generateKekText()) });
    const sealed = await pd.seal([
      event('docs.comment.posted.v1', { commentId: 1, fileId: 1, fileOwnerId: 1, fileTitle: 'Title', authorId: 2, comment: 'Hello', postedAt: 't' }, 1),
      event('docs.file.uploaded.v1', {
        fileId: 1, ownerId: 1, ownerName: 'Ada', title: 'Title', description: 'D', tags: ['a'], categoryId: 1, categoryName: 'C', license: 'CC BY',
        videoUrl: null, originalFileName: 'notes.md', contentType: 'text/markdown', size: 1, blobKey: 'f1-x', uploadedAt: 't',
      }, 2),
    ]);
    let handed: EventBatch | undefined;
    const inner: EventConsumer = {
      subscribe: async () => ({ stop: async () => {} }),
      subscribeBatches: async (_group, handler: BatchHandler) => {
        await handler({ partition: 0, through: 2, records: sealed.map((e, i): StoredEvent<CloudEvent> => ({ position: i + 1, event: e })) });
        return { stop: async () => {} };
      },
    };
    await openingConsumer(inner, pd, { only: ['docs.file.uploaded.v1'] }).subscribeBatches('g', async (batch) => {
      handed = batch;
    });
    const [comment, upload] = handed!.records;
    assert.equal(comment!.event.personaldata, 'v1', 'the comment stays sealed');
    assert.equal(JSON.stringify(comment!.event).includes('Hello'), false);
    assert.equal((upload!.event.data as { originalFileName: string }).originalFileName, 'notes.md');
    assert.deepEqual(handed!.records.map((r) => r.position), [1, 2]);
  });
});
