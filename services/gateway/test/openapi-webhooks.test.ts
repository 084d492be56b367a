// The OpenAPI document's `webhooks` (the catalogue of what docshare POSTs to creators' endpoints,
// issue 23) is true to libs/contracts/src/webhooks.ts: one entry per message type, and what
// webhookMessageOf makes of events of every shape validates against the documented payload
// schema with every object closed (a field the document does not name fails), its required
// fields all present. Each entry names the three Standard Webhooks headers and what 2xx and 410 mean.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  EXTRACTION_FAILURES, WEBHOOK_EVENT_TYPES, webhookMessageId, webhookMessageOf, type CloudEvent,
} from '@docshare/contracts';
import { openApiDocument } from '../src/index.ts';
import { WEBHOOK_EXAMPLE_EVENTS } from '../src/openapi-webhooks.ts';
import { DocSchemas, pointer, type Doc, type Obj } from './openapi-schema.ts';

const doc = openApiDocument('http://localhost:8080') as unknown as Doc & { webhooks: Record<string, Record<string, Obj>> };
const strict = new DocSchemas(doc, { strict: true });
const TYPES = [...WEBHOOK_EVENT_TYPES, 'webhook.test'];

let sequence = 0;
const event = (type: string, data: unknown): CloudEvent => {
  sequence += 1;
  return {
    specversion: '1.0', id: `00000000-0000-4000-8000-${String(sequence).padStart(12, '0')}`, source: '/docshare/docs-command', type,
    time: new Date(Date.UTC(2025, 10, 23, 12, 0, sequence)).toISOString(), subject: 'file-9', datacontenttype: 'application/json', data,
    correlationid: 'c', causationid: 'c', streamversion: sequence,
  };
};

/** Events of every shape a message type is made from: each optional change alone and all at once, both extraction outcomes, nulls. */
const EVENTS: CloudEvent[] = [
  event('docs.file.uploaded.v1', {
    fileId: 9, ownerId: 3, ownerName: 'Bo', title: 'T', description: 'D', tags: [], categoryId: 2, categoryName: 'C', license: 'CC BY',
    videoUrl: 'https://video.example.com/x', originalFileName: 'a b.pdf', contentType: 'application/pdf', size: 0, blobKey: 'files/9', uploadedAt: '2025-11-23T12:00:00.000Z',
  }),
  event('docs.file.content-extracted.v1', {
    fileId: 9, ownerId: 3, blobKey: 'files/9', format: 'pdf', extractor: 'pdfjs-dist@6', characters: 1_000_000, truncated: true, language: null,
    text: 'x', durationMs: 5, extractedAt: '2025-11-23T12:00:01.000Z',
  }),
  ...EXTRACTION_FAILURES.map((reason, i) => event('docs.file.content-extraction-failed.v1', {
    fileId: 9, ownerId: 3, blobKey: 'files/9', format: i % 2 === 0 ? null : 'docx', reason, detail: 'why', durationMs: 5, failedAt: '2025-11-23T12:00:02.000Z',
  })),
  ...[{ title: 'T2' }, { description: '' }, { tags: ['a', 'b'] }, { enabled: false }, { forSale: true }, { price: 0 }, {},
    { title: 'T3', description: 'D3', tags: [], enabled: true, forSale: false, price: 12.5 }].map((changes) => event('docs.file.updated.v1', {
    fileId: 9, ownerId: 3, changes, updatedAt: '2025-11-23T12:00:03.000Z',
  })),
  event('docs.file.deleted.v1', { fileId: 9, ownerId: 3, blobKey: 'files/9', deletedAt: '2025-11-23T12:00:04.000Z' }),
  event('docs.comment.posted.v1', { commentId: 4, fileId: 9, fileOwnerId: 3, fileTitle: 'T', authorId: 3, comment: 'own comment', postedAt: '2025-11-23T12:00:05.000Z' }),
  event('docs.file.purchased.v1', { fileId: 9, ownerId: 3, saleId: 1, buyerId: 8, price: 0.99, purchasedAt: '2025-11-23T12:00:06.000Z' }),
  event('docs.webhook.test_requested.v1', { webhookId: 5, ownerId: 3, requestedAt: '2025-11-23T12:00:07.000Z' }),
];

const bodySchemaAt = (type: string): string => pointer('webhooks', type, 'post', 'requestBody', 'content', 'application/json', 'schema');

describe('OpenAPI webhooks: the catalogue of messages', () => {
  it('has one POST per message type, each its own operation in the catalogue\'s tag', () => {
    assert.deepEqual(Object.keys(doc.webhooks).sort(), [...TYPES].sort());
    const tags = (doc.tags as Array<{ name: string }>).map((t) => t.name);
    for (const type of TYPES) {
      assert.deepEqual(Object.keys(doc.webhooks[type] ?? {}), ['post'], type);
      const op = doc.webhooks[type]?.post as { operationId: string; tags: string[]; security: unknown[] };
      assert.ok(tags.includes(op.tags[0] as string), `${type}: tag ${op.tags[0]}`);
      assert.deepEqual(op.security, [], `${type}: docshare sends it; the receiver checks the signature`);
    }
    const ids = Object.values(doc.webhooks).map((item) => (item.post as { operationId: string }).operationId);
    const pathIds = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
    assert.equal(new Set([...ids, ...pathIds]).size, ids.length + pathIds.length, 'operationIds unique across paths and webhooks');
  });

  it('each names the three Standard Webhooks headers, required, with examples valid against their schemas', () => {
    for (const type of TYPES) {
      const parameters = (doc.webhooks[type]?.post as { parameters: Obj[] }).parameters.map((p) => strict.resolve<{ name: string; in: string; required: boolean; example: unknown; schema: Obj }>(p));
      assert.deepEqual(parameters.map((p) => [p.name, p.in, p.required]), [['webhook-id', 'header', true], ['webhook-timestamp', 'header', true], ['webhook-signature', 'header', true]], type);
    }
    const id = strict.deref(pointer('webhooks', 'file.uploaded', 'post', 'parameters', 0));
    assert.deepEqual(strict.errors(`${id}/schema`, webhookMessageId(EVENTS[0]!.id)), [], 'a real webhook-id');
    assert.notDeepEqual(strict.errors(`${id}/schema`, 'msg_123'), [], 'not a webhook-id');
    for (let i = 0; i < 3; i++) {
      const at = strict.deref(pointer('webhooks', 'file.uploaded', 'post', 'parameters', i));
      assert.deepEqual(strict.errors(`${at}/schema`, (strict.at(at) as Obj).example), [], at);
    }
  });

  it('each says a 2xx delivers and 410 disables; anything else fails', () => {
    for (const type of TYPES) {
      const responses = (doc.webhooks[type]?.post as { responses: Record<string, { description: string }> }).responses;
      assert.deepEqual(Object.keys(responses).sort(), ['2XX', '410', 'default'], type);
      assert.match(responses['410']?.description ?? '', /disabled/, type);
    }
  });

  it('what webhookMessageOf makes of events of every shape validates against its type\'s schema, objects closed', () => {
    const seen = new Set<string>();
    for (const e of EVENTS) {
      const message = webhookMessageOf(e);
      assert.ok(message, e.type);
      const { payload } = message;
      seen.add(payload.type);
      assert.deepEqual(strict.errors(bodySchemaAt(payload.type), payload), [], `${e.type}: ${JSON.stringify(payload)}`);
      // Not valid as any other type's body.
      for (const other of TYPES.filter((t) => t !== payload.type)) assert.notDeepEqual(strict.errors(bodySchemaAt(other), payload), [], `${e.type} as ${other}`);
    }
    assert.deepEqual([...seen].sort(), [...TYPES].sort(), 'every message type was made');
  });

  it('a field webhookMessageOf always sends is required by the schema, and the schema names no field it never sends', () => {
    for (const e of EVENTS) {
      const { payload } = webhookMessageOf(e)!;
      const schema = strict.resolve<{ required: string[]; properties: { data: { required: string[]; properties: Obj } } }>(strict.at(bodySchemaAt(payload.type)));
      assert.deepEqual([...schema.required].sort(), ['data', 'timestamp', 'type']);
      const data = schema.properties.data;
      assert.deepEqual([...data.required].sort(), Object.keys(payload.data).sort(), `${payload.type}: required data fields`);
      assert.deepEqual(Object.keys(data.properties).sort(), Object.keys(payload.data).sort(), `${payload.type}: documented data fields`);
      const removed = { ...payload, data: Object.fromEntries(Object.entries(payload.data).slice(1)) };
      assert.notDeepEqual(strict.errors(bodySchemaAt(payload.type), removed), [], `${payload.type}: a field missing`);
    }
  });

  it('the documented examples are webhookMessageOf\'s own output, valid against their schemas', () => {
    for (const type of TYPES) {
      const examples = ((doc.webhooks[type]?.post as { requestBody: { content: Record<string, { examples: Record<string, { value: unknown }> }> } })
        .requestBody.content['application/json']?.examples) ?? {};
      assert.deepEqual(Object.keys(examples), Object.keys(WEBHOOK_EXAMPLE_EVENTS[type as keyof typeof WEBHOOK_EXAMPLE_EVENTS]), type);
      for (const [name, example] of Object.entries(examples)) {
        const source = WEBHOOK_EXAMPLE_EVENTS[type as keyof typeof WEBHOOK_EXAMPLE_EVENTS][name]!;
        assert.deepEqual(example.value, webhookMessageOf(source)?.payload, `${type} ${name}`);
        assert.deepEqual(strict.errors(bodySchemaAt(type), example.value), [], `${type} ${name}`);
      }
    }
  });
});
