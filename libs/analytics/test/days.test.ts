import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { daysFrom, lastDays, lastHours, parseDay, utcDay, utcHour } from '../src/days.ts';

describe('days', () => {
  it('utcDay and utcHour give the UTC day and hour of an ISO string or a Date', () => {
    assert.equal(utcDay('2026-03-01T23:59:59.999Z'), '2026-03-01');
    assert.equal(utcHour('2026-03-01T23:59:59.999Z'), '2026-03-01T23');
    // An offset is converted to UTC, not cut off.
    assert.equal(utcDay('2026-03-01T23:30:00+00:00'), '2026-03-01');
    assert.equal(utcDay('2026-03-01T01:30:00+02:00'), '2026-02-28');
    assert.equal(utcHour('2026-03-01T01:30:00+02:00'), '2026-02-28T23');
    assert.equal(utcDay(new Date(Date.UTC(2024, 1, 29, 12))), '2024-02-29');
    assert.equal(utcHour(new Date(Date.UTC(2024, 1, 29, 7, 59))), '2024-02-29T07');
    assert.throws(() => utcDay('yesterday'), RangeError);
    assert.throws(() => utcHour(new Date(Number.NaN)), RangeError);
  });

  it('parseDay accepts strict calendar dates only', () => {
    for (const day of ['2026-01-01', '2024-02-29', '2000-02-29', '2026-12-31', '0001-01-01']) assert.equal(parseDay(day), day);
    for (const bad of ['2026-02-30', '2026-02-29', '1900-02-29', '2026-04-31', '2026-13-01', '2026-00-10', '2026-01-00',
      '2026-1-01', '2026-01-1', '26-01-01', '2026-01-01T00', ' 2026-01-01', '2026-01-01\n', '0000-01-01', '', '２０２６-01-01']) {
      assert.equal(parseDay(bad), null, bad);
    }
    for (const notText of [undefined, null, 20260101, ['2026-01-01'], { day: '2026-01-01' }, new Date()]) assert.equal(parseDay(notText), null);
  });

  it('daysFrom lists the days between two days, both included, across months and leap days', () => {
    assert.deepEqual(daysFrom('2024-02-27', '2024-03-02'), ['2024-02-27', '2024-02-28', '2024-02-29', '2024-03-01', '2024-03-02']);
    assert.deepEqual(daysFrom('2025-12-31', '2026-01-01'), ['2025-12-31', '2026-01-01']);
    assert.deepEqual(daysFrom('2026-05-05', '2026-05-05'), ['2026-05-05']);
    assert.deepEqual(daysFrom('2026-05-06', '2026-05-05'), []);
    assert.equal(daysFrom('2024-01-01', '2024-12-31').length, 366);
    assert.throws(() => daysFrom('2026-02-30', '2026-03-01'), RangeError);
  });

  it('lastDays and lastHours end with the current day and hour, ascending', () => {
    const now = new Date('2026-03-01T00:30:00.000Z');
    assert.deepEqual(lastDays(now, 3), ['2026-02-27', '2026-02-28', '2026-03-01']);
    assert.deepEqual(lastDays(now, 1), ['2026-03-01']);
    assert.deepEqual(lastDays(now, 0), []);
    assert.equal(lastDays(now, 90).length, 90);
    assert.deepEqual(lastHours(now, 3), ['2026-02-28T22', '2026-02-28T23', '2026-03-01T00']);
    assert.deepEqual(lastHours(new Date('2026-03-01T23:59:59.999Z'), 1), ['2026-03-01T23']);
    assert.equal(new Set(lastHours(now, 168)).size, 168);
    assert.equal(lastHours(now, 168)[0], '2026-02-22T01');
  });
});
