// The chaos suite's checker catches what it claims to: lost, duplicated and unasked-for writes,
// unclean outage answers, read models that differ from the events, and webhook messages lost,
// sent to the wrong user or badly signed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { webhookMessageId } from '@docshare/contracts';
import type { Rec } from './load.ts';
import { checkDailyCounts, checkRecord, modelOf, type AnalyticsAnswers, type DailyAnswer, type Event } from './verify.ts';
import { allReceived, checkWebhookDeliveries, expectedWebhookMessages, WebhookReceiver } from './webhooks.ts';

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

  // Views and downloads (issue 21): v2 events of no stream, counted per UTC day by api-daily.
  const page = (fileId: string, status: number, extra: Partial<Rec> = {}): Rec => ({
    ...json(200, {}), op: 'view', method: 'GET', path: `/docs/${fileId}`, fileId, status,
    contentType: status === 0 ? undefined : status >= 500 ? 'application/json; charset=utf-8' : 'text/html; charset=utf-8',
    json: status >= 500 ? { status: 'error', message: 'Service unavailable' } : undefined, body: '', ...(status >= 500 ? { retryAfter: '1' } : {}),
    ...(status === 0 ? { error: 'TypeError: fetch failed (ECONNRESET)' } : {}), ...extra,
  });
  const authorized = (fileId: string, status = 200): Rec => json(status, { status: 'success', download_url: 'http://x/c' }, { op: 'download', method: 'GET', path: '/api/V1/docs/api-download', fileId });
  const viewed = (r: Rec, fileId: string, at: string, ownerId = 1): Event => ({
    ...event('docs.file.viewed.v2', r.id, { fileId: Number(fileId), ownerId, viewer: `u:${r.userId ?? 9}`, viewedAt: at }), subject: `file-${fileId}`, streamversion: 0,
  });
  const downloaded = (r: Rec, fileId: string, at: string, ownerId = 1): Event => ({
    ...event('docs.file.downloaded.v2', r.id, { fileId: Number(fileId), ownerId, downloadedBy: 9, downloadedAt: at }), subject: `file-${fileId}`, streamversion: 0,
  });
  const answer = (days: Array<[string, number, number]>): DailyAnswer => ({
    days: days.map(([date, views, downloads]) => ({ date, views, downloads })),
    totals: { views: days.reduce((n, d) => n + d[1], 0), downloads: days.reduce((n, d) => n + d[2], 0) },
  });

  it('an acknowledged view or download is its v2 event (or a v1 of an older log); lost, duplicated and unasked-for ones are found', () => {
    const a = upload('1');
    const v = page('1', 200);
    const d = authorized('1');
    const up = uploaded(a, '1');
    assert.deepEqual(checkRecord([a, v, d], [up, viewed(v, '1', '2026-03-01T10:00:00.000Z'), downloaded(d, '1', '2026-03-01T10:00:01.000Z')], []).violations, []);
    assert.deepEqual(checkRecord([a, v], [up, event('docs.file.viewed.v1', v.id, { fileId: 1, ownerId: 1, viewedAt: '2026-03-01T10:00:00.000Z' })], []).violations, []);
    assert.match(checkRecord([a, v], [up], []).violations.join('\n'), /LOST: acknowledged view has no docs\.file\.viewed\.v2/);
    assert.match(checkRecord([a, v], [up, viewed(v, '1', '2026-03-01T10:00:00.000Z'), viewed(v, '1', '2026-03-01T10:00:00.000Z')], []).violations.join('\n'), /DUPLICATED: 2 × docs\.file\.viewed\.v2/);
    assert.match(checkRecord([a], [up, viewed(page('1', 200), '1', '2026-03-01T10:00:00.000Z')], []).violations.join('\n'), /causationid no request of the run had/);
    // A view that failed in flight may have been recorded, once.
    const lostAnswer = page('1', 0);
    const result = checkRecord([a, lostAnswer], [up, viewed(lostAnswer, '1', '2026-03-01T10:00:00.000Z')], []);
    assert.equal(result.recordedUnacknowledged.length, 1);
    // A 404 (a file disabled meanwhile) that was recorded anyway is a violation.
    const refused = page('1', 404);
    assert.match(checkRecord([a, refused], [up, viewed(refused, '1', '2026-03-01T10:00:00.000Z')], []).violations.join('\n'), /a 404 answer, yet the view was recorded/);
  });

  it('models views and downloads per owner and per file and UTC day, v1 and v2 alike', () => {
    const a = upload('1');
    const v1 = page('1', 200);
    const v2 = page('1', 200);
    const v3 = page('1', 200);
    const d = authorized('1');
    const model = modelOf([
      uploaded(a, '1'),
      event('docs.file.viewed.v1', v1.id, { fileId: 1, ownerId: 1, viewedAt: '2026-02-28T23:59:59.999Z' }),
      viewed(v2, '1', '2026-03-01T00:00:00.000Z'),
      viewed(v3, '1', '2026-03-01T12:00:00.000Z'),
      downloaded(d, '1', '2026-03-01T12:00:01.000Z'),
    ], [1]);
    assert.equal(model.users.get(1)?.stats.total_views, 3);
    assert.equal(model.users.get(1)?.stats.total_downloads, 1);
    assert.deepEqual([...(model.users.get(1)?.days ?? [])], [['2026-02-28', { views: 1, downloads: 0 }], ['2026-03-01', { views: 2, downloads: 1 }]]);
    assert.deepEqual([...(model.fileDays.get('1') ?? [])], [['2026-02-28', { views: 1, downloads: 0 }], ['2026-03-01', { views: 2, downloads: 1 }]]);
  });

  describe('the statistics over time against the record and the events', () => {
    // File 1 of user 1: three views answered 200, one that failed in flight (and was recorded),
    // one that failed in flight (and was not), one 404 (not recorded); one download answered 200.
    const a = upload('1');
    const views = [page('1', 200), page('1', 200), page('1', 200), page('1', 0), page('1', 503), page('1', 404)];
    const dl = authorized('1');
    const records = [a, ...views, dl];
    const at = '2026-03-01T10:00:00.000Z';
    const events = [uploaded(a, '1'), ...views.slice(0, 4).map((r) => viewed(r, '1', at)), downloaded(dl, '1', at)];
    const model = modelOf(events, [1]);
    const right = answer([['2026-02-28', 0, 0], ['2026-03-01', 4, 1]]);
    const answers = (file: DailyAnswer | string, user: DailyAnswer | string = file, stats: { total_views: number; total_downloads: number } | string = { total_views: 4, total_downloads: 1 }): AnalyticsAnswers => ({
      users: new Map([[1, { stats, daily: user }]]), files: new Map([['1', file]]),
    });

    it('passes when every number equals the events and lies within what was acknowledged and in flight', () => {
      assert.deepEqual(checkDailyCounts(records, model, answers(right)), []);
    });

    it('finds a view lost (fewer than acknowledged) and one counted twice (more than acknowledged and in flight)', () => {
      const fewer = answer([['2026-03-01', 2, 1]]);
      assert.match(checkDailyCounts(records, model, answers(fewer, right)).join('\n'), /file 1: LOST views: api-daily counts 2, 3 were acknowledged/);
      const more = answer([['2026-03-01', 6, 1]]);
      assert.match(checkDailyCounts(records, model, answers(more, right)).join('\n'), /file 1: views counted twice or unasked for: api-daily counts 6, 3 acknowledged and 2 failed in flight/);
      // Within the bounds, yet not what the events say: still a difference.
      const five = answer([['2026-03-01', 5, 1]]);
      assert.match(checkDailyCounts(records, model, answers(five, right)).join('\n'), /file 1: api-daily \[date, views, downloads\] \[\["2026-03-01",5,1\]\] ≠ events \[\["2026-03-01",4,1\]\]/);
      const noDownload = answer([['2026-03-01', 4, 0]]);
      assert.match(checkDailyCounts(records, model, answers(noDownload, right)).join('\n'), /file 1: LOST downloads/);
    });

    it('finds views on the wrong day', () => {
      const early = answer([['2026-02-28', 4, 1], ['2026-03-01', 0, 0]]);
      assert.match(checkDailyCounts(records, model, answers(early)).join('\n'), /user 1: api-daily .* ≠ events/);
    });

    it('finds days that do not add up to api-stats\' totals, and totals that are not the days\' sum', () => {
      assert.match(checkDailyCounts(records, model, answers(right, right, { total_views: 5, total_downloads: 1 })).join('\n'), /user 1: api-daily's views add up to 4, api-stats total_views is 5/);
      assert.match(checkDailyCounts(records, model, answers(right, right, { total_views: 4, total_downloads: 2 })).join('\n'), /user 1: api-daily's downloads add up to 1, api-stats total_downloads is 2/);
      const padded: DailyAnswer = { ...right, totals: { views: 5, downloads: 1 } };
      assert.match(checkDailyCounts(records, model, answers(right, padded, { total_views: 5, total_downloads: 1 })).join('\n'), /are not its days' sum/);
    });

    it('reports an answer that is not one', () => {
      const text = checkDailyCounts(records, model, answers('api-daily of file 1: 503 Service unavailable', right, 'api-stats: 0 TimeoutError')).join('\n');
      assert.match(text, /api-daily of file 1: 503/);
      assert.match(text, /analytics of user 1: api-stats: 0 TimeoutError/);
    });
  });
});

describe('chaos webhook check', () => {
  const at = (position: number, type: string, data: Record<string, unknown>): Event => ({
    id: `00000000-0000-4000-8000-${String(position).padStart(12, '0')}`, type, subject: `s${position}`, streamversion: 1, data, position,
  });
  const registered = (position: number, ownerId: number): Event => at(position, 'docs.webhook.registered.v1', { webhookId: position, ownerId });
  const uploadedBy = (position: number, ownerId: number): Event => at(position, 'docs.file.uploaded.v1', { fileId: position, ownerId, title: 't' });
  const events = [
    uploadedBy(1, 1), // before user 1's endpoint: no message
    registered(2, 1),
    uploadedBy(3, 1),
    at(4, 'docs.comment.posted.v1', { commentId: 1, fileId: 3, fileOwnerId: 1, authorId: 2, comment: 'c' }), // to the file's owner
    at(5, 'docs.file.viewed.v2', { fileId: 3, ownerId: 1 }), // makes no message
    uploadedBy(6, 2), // user 2 has no endpoint
    registered(7, 1), // a second endpoint of user 1 changes nothing
  ];
  const id = (e: Event): string => webhookMessageId(e.id);

  it('expects the message of each event after the owner\'s first registration, for that owner only', () => {
    const expected = expectedWebhookMessages(events);
    assert.deepEqual([...expected.keys()], [1]);
    assert.deepEqual([...(expected.get(1) ?? [])].sort(), [id(events[2]!), id(events[3]!)].sort());
  });

  it('flags a lost message, one received by another user, a bad signature; passes an exact receipt with re-sends', () => {
    const expected = expectedWebhookMessages(events);
    const all = new Set([id(events[2]!), id(events[3]!)]);
    const exact = { byUser: new Map([[1, all]]), badSignatures: [] };
    assert.deepEqual(checkWebhookDeliveries(expected, exact), []);
    assert.equal(allReceived(expected, exact), true);
    const lost = { byUser: new Map([[1, new Set([id(events[2]!)])]]), badSignatures: [] };
    assert.equal(allReceived(expected, lost), false);
    assert.match(checkWebhookDeliveries(expected, lost).join('\n'), /WEBHOOK LOST: user 1 never received 1 of 2/);
    const crossed = { byUser: new Map([[1, all], [2, new Set([id(events[3]!)])]]), badSignatures: [] };
    assert.match(checkWebhookDeliveries(expected, crossed).join('\n'), /WEBHOOK UNASKED: user 2 received 1 message/);
    assert.match(checkWebhookDeliveries(expected, { ...exact, badSignatures: ['msg_x to user 1: bad'] }).join('\n'), /WEBHOOK SIGNATURE: 1 delivery/);
  });

  it('the receiver verifies with the endpoint\'s secret and counts a re-sent webhook-id once', async () => {
    const receiver = new WebhookReceiver();
    await receiver.start();
    try {
      const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
      const { url, token } = receiver.endpoint(5);
      receiver.knowSecret(token, secret);
      const post = async (messageId: string, signingSecret: string): Promise<number> => {
        const body = JSON.stringify({ type: 'file.deleted', timestamp: new Date().toISOString(), data: {} });
        const now = new Date();
        const res = await fetch(url, { method: 'POST', body, headers: {
          'content-type': 'application/json', 'webhook-id': messageId, 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          'webhook-signature': new Webhook(signingSecret).sign(messageId, now, body),
        } });
        return res.status;
      };
      assert.equal(await post('msg_1', secret), 204);
      assert.equal(await post('msg_1', secret), 204);
      assert.equal(await post('msg_2', `whsec_${Buffer.alloc(32, 9).toString('base64')}`), 204);
      assert.equal(receiver.deliveries, 3);
      assert.deepEqual([...(receiver.received().byUser.get(5) ?? [])], ['msg_1']);
      assert.equal(receiver.received().badSignatures.length, 1);
      assert.match(receiver.received().badSignatures[0] ?? '', /^msg_2 to user 5: /);
      // Not a delivery: answered 404, counted apart, no violation.
      assert.equal((await fetch(new URL('/healthz', url))).status, 404);
      assert.deepEqual([receiver.stray, receiver.deliveries, receiver.received().badSignatures.length], [1, 3, 1]);
    } finally {
      await receiver.stop();
    }
  });
});
