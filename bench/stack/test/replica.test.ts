/**
 * bench:stack's second docs-command replica: the environment copied from the instance's own
 * process, on a port of its own and without its metrics listener.
 *   npm exec -- node --test --test-reporter=spec bench/stack/test/replica.test.ts
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseEnviron, replicaEnv } from '../replica.ts';

test('a /proc environ is read as KEY=value entries split on NUL; values keep their "=", later keys win', () => {
  const text = 'PORT=18081\0MONGO_URL=mongodb://h:1/?a=b\0EMPTY=\0junk\0PORT=18082\0';
  assert.deepEqual(parseEnviron(text), { PORT: '18082', MONGO_URL: 'mongodb://h:1/?a=b', EMPTY: '' });
});

test('a replica keeps the service\'s environment, moves its port, drops its metrics listener, and takes overrides last', () => {
  const own = { PORT: '18081', METRICS_PORT: '9464', KAFKA_BROKERS: 'k:1', DOCS_COMMAND_URL: 'http://127.0.0.1:18081' };
  assert.deepEqual(replicaEnv(own, 20001), { PORT: '20001', METRICS_PORT: '', KAFKA_BROKERS: 'k:1', DOCS_COMMAND_URL: 'http://127.0.0.1:18081' });
  assert.equal(replicaEnv(own, 20002, { DOCS_COMMAND_URL: 'http://127.0.0.1:20001' }).DOCS_COMMAND_URL, 'http://127.0.0.1:20001');
  assert.equal(own.PORT, '18081');
});
