// The Kafka record codec is pure: what the relay publishes, consumers decode, including events of
// no stream (streamversion 0, EventStore.appendUnversioned).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testEvent } from '@docshare/contracts/testing';
import { decodeKafkaRecord, toKafkaMessage } from '../src/kafka/codec.ts';

const decodeValue = (value: unknown) => decodeKafkaRecord({ value: Buffer.from(JSON.stringify(value)), headers: {}, offset: '7' });

describe('kafka codec', () => {
  it('round-trips an unversioned event (streamversion 0) with its position, keyed like a versioned one', () => {
    const event = testEvent('file-12', 0, { fileId: 12, ownerId: 3, viewer: 'u:4', viewedAt: '2026-01-01T00:00:00.000Z' });
    const viewed = { ...event, type: 'docs.file.viewed.v2' };
    const message = toKafkaMessage({ position: 42, event: viewed });
    assert.equal(message.key, 'user-3');
    assert.deepEqual(decodeKafkaRecord({ value: Buffer.from(message.value as string), headers: message.headers!, offset: '7' }), {
      ok: true, record: { position: 42, event: viewed },
    });
  });

  it('refuses a negative or fractional streamversion', () => {
    assert.equal(decodeValue({ ...testEvent('file-1', 0), streamversion: -1 }).ok, false);
    assert.equal(decodeValue({ ...testEvent('file-1', 0), streamversion: 0.5 }).ok, false);
    assert.equal(decodeValue({ ...testEvent('file-1', 0), streamversion: '0' }).ok, false);
    assert.equal(decodeValue(testEvent('file-1', 1)).ok, true);
  });
});
