// The fold of docs.webhook.* into EndpointRecords: each event's change, the position guard (every
// event folded twice changes nothing the second time), and the secrets during a rotation.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CloudEvent, StoredEvent } from '@docshare/contracts';
import type { EndpointRecord } from '@docshare/webhooks/store';
import { endpointEventOf, foldEndpoint, signingSecrets, subscribes } from '../src/endpoints.ts';
import { makeLog, T0 } from './history.ts';

/** Folds every record twice in a row (a redelivery after each). */
const foldTwice = (records: readonly StoredEvent<CloudEvent>[], start: EndpointRecord | null = null): EndpointRecord | null => {
  let record = start;
  for (const stored of records) {
    const once = foldEndpoint(record, stored);
    assert.deepEqual(foldEndpoint(once, stored), once, `folding ${stored.event.type} again changes nothing`);
    record = once;
  }
  return record;
};

describe('webhook dispatcher: endpoint fold', () => {
  it('registered makes the record; updated changes url, events and enabled; disabled and deleted flag it', () => {
    const log = makeLog();
    log.register(7, 1, ['file.uploaded']);
    const registered = foldTwice(log.records);
    assert.deepEqual(registered, {
      webhookId: 7, ownerId: 1, url: 'https://hooks.example/7', events: ['file.uploaded'], enabled: true, deleted: false,
      secrets: [{ sealed: log.sealed('s7'), validUntil: null }], position: 1,
    });
    log.update(7, 1, { url: 'https://other.example/h', events: ['file.deleted', 'comment.received'], description: 'x' });
    log.update(7, 1, { enabled: false });
    const updated = foldTwice(log.records.slice(1), registered);
    assert.equal(updated?.url, 'https://other.example/h');
    assert.deepEqual(updated?.events, ['file.deleted', 'comment.received']);
    assert.equal(updated?.enabled, false);
    assert.equal(updated?.position, 3);
    log.update(7, 1, { enabled: true });
    log.disable(7, 1, 'gone');
    const disabled = foldTwice(log.records.slice(3), updated);
    assert.equal(disabled?.enabled, false);
    log.remove(7, 1);
    const deleted = foldTwice(log.records.slice(5), disabled);
    assert.equal(deleted?.deleted, true);
    assert.equal(deleted?.position, 6);
    assert.equal(deleted === null ? false : subscribes(deleted, 'file.deleted'), false, 'a deleted endpoint takes nothing');
  });

  it('ignores an event at or before the record\'s position, and events of no endpoint', () => {
    const log = makeLog();
    const first = log.register(7, 1);
    const update = log.update(7, 1, { enabled: false });
    const record = foldTwice([first, update]);
    assert.equal(foldEndpoint(record, first), record, 'an older registration does not reset it');
    assert.equal(foldEndpoint(record, log.upload(3, 1)), record);
    assert.equal(endpointEventOf(log.upload(4, 1).event), null);
    assert.equal(endpointEventOf(log.test(7, 1).event), null, 'a test request changes no record');
    assert.deepEqual(endpointEventOf(update.event), { webhookId: 7, ownerId: 1 });
  });

  it('a change to an endpoint it never saw registered makes nothing', () => {
    const log = makeLog();
    assert.equal(foldEndpoint(null, log.update(9, 1, { enabled: false })), null);
    assert.equal(foldEndpoint(null, log.remove(9, 1)), null);
    assert.equal(foldEndpoint(null, log.disable(9, 1)), null);
    assert.equal(foldEndpoint(null, log.rotate(9, 1, 'n', T0)), null);
  });

  it('a rotation signs with the new secret first and the previous one until its end; a second rotation drops the oldest', () => {
    const log = makeLog();
    log.register(7, 1);
    const until = T0 + 86_400_000;
    log.rotate(7, 1, 'second', until);
    const rotated = foldTwice(log.records);
    assert.ok(rotated);
    assert.deepEqual(rotated.secrets, [{ sealed: log.sealed('second'), validUntil: null }, { sealed: log.sealed('s7'), validUntil: until }]);
    assert.deepEqual(signingSecrets(rotated, until - 1).map((s) => s.sealed.ct), ['second', 's7']);
    assert.deepEqual(signingSecrets(rotated, until).map((s) => s.sealed.ct), ['second'], 'the overlap has ended');
    log.rotate(7, 1, 'third', until + 1_000);
    const again = foldTwice(log.records.slice(2), rotated);
    assert.deepEqual(again?.secrets.map((s) => [s.sealed.ct, s.validUntil]), [['third', null], ['second', until + 1_000]]);
  });

  it('subscribes: only the listed types of a live endpoint', () => {
    const log = makeLog();
    log.register(7, 1, ['file.uploaded', 'sale.completed']);
    const record = foldTwice(log.records);
    assert.ok(record);
    assert.equal(subscribes(record, 'file.uploaded'), true);
    assert.equal(subscribes(record, 'sale.completed'), true);
    assert.equal(subscribes(record, 'file.deleted'), false);
    assert.equal(subscribes({ ...record, enabled: false }, 'file.uploaded'), true, 'disabled still subscribes (its tasks are kept, skipped)');
  });
});
