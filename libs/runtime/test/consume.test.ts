import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { makeLogger } from '@docshare/http';
import { testEvent } from '@docshare/contracts/testing';
import { isTransient, retryTransient } from '../src/consume.ts';

const logger = makeLogger('test', 'silent');
const record = { partition: 0, records: [{ position: 1, event: testEvent('file-1', 1) }], through: 1 };

describe('retryTransient', () => {
  it('retries a dependency outage in place until it passes', async () => {
    let calls = 0;
    const handle = retryTransient(async () => {
      calls += 1;
      if (calls < 3) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    }, logger, 5);
    await handle(record);
    assert.equal(calls, 3);
  });

  it('passes other failures straight to the bus', async () => {
    let calls = 0;
    const handle = retryTransient(async () => {
      calls += 1;
      throw new TypeError('cannot apply');
    }, logger, 5);
    await assert.rejects(handle(record), TypeError);
    assert.equal(calls, 1);
  });

  it('classifies driver and HTTP failures', () => {
    assert.equal(isTransient(Object.assign(new Error('x'), { name: 'MongoServerSelectionError' })), true);
    assert.equal(isTransient(Object.assign(new Error('x'), { name: 'ResponseError', meta: { statusCode: 503 } })), true);
    assert.equal(isTransient(Object.assign(new Error('x'), { name: 'ResponseError', meta: { statusCode: 429 } })), true);
    assert.equal(isTransient(Object.assign(new Error('x'), { name: 'ResponseError', meta: { statusCode: 400 } })), false);
    assert.equal(isTransient(new Error('x', { cause: Object.assign(new Error('y'), { code: 'ECONNRESET' }) })), true);
    assert.equal(isTransient(new RangeError('bad')), false);
    assert.equal(isTransient('string'), false);
  });
});
