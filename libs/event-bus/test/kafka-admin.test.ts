import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Admin } from 'kafkajs';
import { topicMetadata } from '../src/kafka/admin.ts';

const unknownTopic = Object.assign(new Error('This server does not host this topic-partition'), { type: 'UNKNOWN_TOPIC_OR_PARTITION' });

const adminAnswering = (answers: (Error | { name: string; partitions: unknown[] }[])[]): { admin: Admin; calls: () => number } => {
  let calls = 0;
  const admin = {
    fetchTopicMetadata: async () => {
      const answer = answers[Math.min(calls, answers.length - 1)];
      calls += 1;
      if (answer instanceof Error) throw answer;
      return { topics: answer };
    },
  } as unknown as Admin;
  return { admin, calls: () => calls };
};

test('a topic the broker lists but does not serve metadata for yet is asked about again', async () => {
  const { admin, calls } = adminAnswering([unknownTopic, unknownTopic, [{ name: 't', partitions: [{}, {}, {}] }]]);
  assert.deepEqual(await topicMetadata(admin, ['t'], { delayMs: () => 1 }), [{ name: 't', partitions: [{}, {}, {}] }]);
  assert.equal(calls(), 3);
});

test('any other error is not retried, and UNKNOWN_TOPIC_OR_PARTITION only a bounded number of times', async () => {
  const other = adminAnswering([new Error('broker down')]);
  await assert.rejects(topicMetadata(other.admin, ['t']), /broker down/);
  assert.equal(other.calls(), 1);
  const never = adminAnswering([unknownTopic]);
  await assert.rejects(topicMetadata(never.admin, ['t'], { attempts: 5, delayMs: () => 1 }), /does not host/);
  assert.equal(never.calls(), 5);
});
