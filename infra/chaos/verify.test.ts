// The chaos suite's checker catches what it claims to: lost, duplicated and unasked-for writes,
// unclean outage answers, and read models that differ from the events.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Rec } from './load.ts';
import { checkRecord, modelOf, type Event } from './verify.ts';

const json = (status: number, body: Record<string, unknown>, extra: Partial<Rec> = {}): Rec => ({
  id: `r${Math.random().toString(16).slice(2)}`, client: 'c0', op: 'stats', method: 'POST', path: '/x', at: 1000, ms: 5,
  status, contentType: 'application/json; charset=utf-8', body: JSON.stringify(body), json: body, ...extra,
});
const upload = (fileId: string, status = 201): Rec => json(status, status < 300 ? { status: 'success', file_id: fileId } : { status: 'error', message: 'Service unavailable' },
  { op: 'upload', method: 'POST', path: '/api/V1/docs/api-upload', ...(status === 503 ? { retryAfter: '1' } : {}) });
let version = 0;
const event = (type: string, causationid: string, data: Record<string, unknown>): Event => {
  version += 1;
  return { id: `e${version}`, type, subject: `s${version}`, streamversion: 1, causationid, data, position: version };
};
const uploaded = (r: Rec, fileId: string, ownerId = 1): Event => event('docs.file.uploaded.v1', r.id, { fileId, ownerId, title: `t${fileId}` });

describe('chaos checker', () => {
  it('passes a clean record', () => {
    const a = upload('1');
    const failed = upload('', 503);
    const read = json(200, { status: 'success', data: {} });
    const result = checkRecord([a, failed, read], [uploaded(a, '1')], []);
    assert.deepEqual(result.violations, []);
  });

  it('accepts one extraction outcome per file, caused by its upload; flags a second one or another cause', () => {
    const a = upload('1');
    const up = uploaded(a, '1');
    let v = 1;
    const outcome = (causationid: string): Event => ({ ...event('docs.file.content-extraction-failed.v1', causationid, { fileId: '1' }), subject: up.subject, streamversion: ++v });
    assert.deepEqual(checkRecord([a], [up, outcome(up.id)], []).violations, []);
    assert.match(checkRecord([a], [up, outcome(up.id), outcome(up.id)], []).violations.join('\n'), /DUPLICATED: a second extraction outcome/);
    assert.match(checkRecord([a], [up, outcome(a.id)], []).violations.join('\n'), /not caused by its file's upload/);
  });

  it('flags two events at one stream version, but not events of no stream (streamversion 0) on one subject', () => {
    const a = upload('1');
    const up = uploaded(a, '1');
    const unversioned = (): Event => ({ ...event('docs.test.happened.v1', a.id, {}), subject: up.subject, streamversion: 0 });
    assert.doesNotMatch(checkRecord([a], [up, unversioned(), unversioned()], []).violations.join('\n'), /two events at/);
    assert.match(checkRecord([a], [up, { ...unversioned(), streamversion: 1 }], []).violations.join('\n'), /two events at/);
  });

  it('finds an acknowledged write that is not in the event store', () => {
    const result = checkRecord([upload('1')], [], []);
    assert.match(result.violations.join('\n'), /LOST: acknowledged upload/);
  });

  it('accepts a sell that changed nothing only when an earlier request already put the file up for sale', () => {
    const sell = (status: number, at: number): Rec => ({
      ...json(status, { status: 'success', message: 'File updated successfully' }),
      op: 'sell', path: '/api/V1/docs/api-update', fileId: '7', at,
    });
    const swallowed: Rec = { ...sell(0, 1000), status: 0, error: 'TypeError: fetch failed (UND_ERR_SOCKET)', contentType: undefined, json: undefined, body: undefined };
    const again = sell(200, 5000);
    const put = event('docs.file.updated.v1', swallowed.id, { fileId: 7, changes: { forSale: true, price: 3 } });
    assert.deepEqual(checkRecord([swallowed, again], [put], [{ from: 900, to: 2000, label: 'gateway' }]).violations, []);
    assert.match(checkRecord([again], [], []).violations.join('\n'), /LOST: acknowledged sell/);
    const later = { ...swallowed, at: 9000 };
    assert.match(checkRecord([later, again], [{ ...put, causationid: later.id }], [{ from: 8900, to: 9500, label: 'gateway' }]).violations.join('\n'), /LOST: acknowledged sell/);
  });

  it('accepts a repeat purchase that recorded nothing only when it names the buyer\'s earlier sale', () => {
    const purchase = (status: number, at: number, saleId: number, userId = 2): Rec => ({
      ...json(status, { status: 'success', message: status === 201 ? 'Purchase recorded' : 'File already purchased', sale_id: saleId }),
      op: 'purchase', path: '/api/V1/docs/api-purchase', fileId: '7', userId, at,
    });
    const first = purchase(201, 1000, 5);
    const sold = event('docs.file.purchased.v1', first.id, { fileId: 7, buyerId: 2, saleId: 5 });
    assert.deepEqual(checkRecord([first, purchase(200, 5000, 5)], [sold], []).violations, []);
    assert.match(checkRecord([first, purchase(200, 5000, 6)], [sold], []).violations.join('\n'), /LOST: acknowledged purchase/);
    assert.match(checkRecord([first, purchase(200, 5000, 5, 3)], [sold], []).violations.join('\n'), /LOST: acknowledged purchase/);
  });

  it('finds a write recorded twice, even one that was not acknowledged', () => {
    const a = upload('1');
    const b: Rec = { ...upload('', 0), status: 0, error: 'TimeoutError', timedOut: true, contentType: undefined, json: undefined, body: undefined };
    const result = checkRecord([a, b], [uploaded(a, '1'), uploaded(a, '1b'), uploaded(b, '2'), uploaded(b, '3')], []);
    assert.equal(result.violations.filter((v) => v.startsWith('DUPLICATED')).length, 2);
  });

  it('counts a failed write recorded once as allowed, and a 4xx that was recorded as a violation', () => {
    const failed = upload('', 503);
    const refused = json(404, { status: 'error', message: 'File not found' }, { op: 'comment' });
    const result = checkRecord([failed, refused], [uploaded(failed, '1'), event('docs.comment.posted.v1', refused.id, { commentId: 1 })], []);
    assert.equal(result.recordedUnacknowledged.length, 1);
    assert.match(result.violations.join('\n'), /a 404 answer, yet the comment was recorded/);
  });

  it('finds an event no request asked for', () => {
    const result = checkRecord([], [event('docs.file.viewed.v1', 'someone-else', { fileId: '1' })], []);
    assert.match(result.violations.join('\n'), /causationid no request of the run had/);
  });

  it('rejects 500s, non-JSON 5xx, 503 without Retry-After, and connection errors outside gateway outages', () => {
    const r500 = json(500, { status: 'error', message: 'Internal server error' });
    const html: Rec = { ...json(503, {}), contentType: 'text/html', json: undefined, body: '<html>' };
    const noRetry = json(503, { status: 'error', message: 'Error during search' });
    const refused: Rec = { ...json(0, {}), status: 0, contentType: undefined, json: undefined, error: 'TypeError: fetch failed (ECONNREFUSED)', at: 5000 };
    const duringKill: Rec = { ...refused, id: 'k', at: 20_000 };
    const result = checkRecord([r500, html, noRetry, refused, duringKill], [], [{ from: 19_000, to: 25_000, label: 'gateway kill' }]);
    const text = result.violations.join('\n');
    assert.match(text, /answered 500 \(only 503/);
    assert.match(text, /without the JSON envelope/);
    assert.match(text, /without Retry-After/);
    assert.match(text, /connection error while the gateway was up: 1 time/);
    assert.equal(result.connectionErrorsInWindows, 1);
  });

  it('computes the read models from the events: deletes, comments, sales, views, downloads', () => {
    const events = [
      event('docs.file.uploaded.v1', 'a', { fileId: '1', ownerId: 1, title: 'one' }),
      event('docs.file.uploaded.v1', 'b', { fileId: '2', ownerId: 1, title: 'two' }),
      event('docs.comment.posted.v1', 'c', { commentId: 7, fileId: '1', fileOwnerId: 1 }),
      event('docs.comment.posted.v1', 'd', { commentId: 8, fileId: '2', fileOwnerId: 1 }),
      event('docs.file.viewed.v1', 'e', { fileId: '2', ownerId: 1 }),
      event('docs.file.downloaded.v1', 'f', { fileId: '2', ownerId: 1 }),
      event('docs.file.updated.v1', 'g', { fileId: '2', ownerId: 1, changes: { forSale: true, price: 3 } }),
      event('docs.file.purchased.v1', 'h', { fileId: '2', ownerId: 1, saleId: 1 }),
      event('docs.file.deleted.v1', 'i', { fileId: '1', ownerId: 1 }),
    ];
    const model = modelOf(events, [1, 2]);
    assert.deepEqual(model.users.get(1)?.stats, { total_files: 1, total_comments: 2, total_views: 1, total_downloads: 1, total_sales: 1 });
    assert.deepEqual([...(model.users.get(1)?.files ?? [])], [['2', 'two']]);
    assert.deepEqual([...(model.users.get(1)?.comments ?? [])], [8]);
    assert.deepEqual([...model.searchable], ['2']);
    assert.equal(model.alive.get('2')?.forSale, true);
  });
});
