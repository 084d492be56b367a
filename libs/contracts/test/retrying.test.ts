import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeWakeableSleep, retrying, sleep } from '../src/retrying.ts';

test('retrying returns the first success and passes the attempt number', async () => {
  const seen: number[] = [];
  const result = await retrying(async (attempt) => {
    seen.push(attempt);
    if (attempt < 3) throw new Error(`fail ${attempt}`);
    return 'ok';
  }, { baseMs: 1, capMs: 2 });
  assert.equal(result, 'ok');
  assert.deepEqual(seen, [1, 2, 3]);
});

test('retrying throws the last failure once its attempts are spent', async () => {
  let calls = 0;
  await assert.rejects(retrying(async (attempt) => {
    calls++;
    throw new Error(`fail ${attempt}`);
  }, { attempts: 3, baseMs: 1, capMs: 1 }), /fail 3/);
  assert.equal(calls, 3);
});

test('retrying rethrows at once what retryIf declines', async () => {
  let calls = 0;
  await assert.rejects(retrying(async () => {
    calls++;
    throw new TypeError('permanent');
  }, { baseMs: 1, capMs: 1, retryIf: (error) => !(error instanceof TypeError) }), TypeError);
  assert.equal(calls, 1);
});

test('retrying waits the delay a failure names and tells onRetry', async () => {
  const told: Array<[number, number]> = [];
  await retrying(async (attempt) => {
    if (attempt === 1) throw new Error('busy');
    return attempt;
  }, { baseMs: 10_000, capMs: 10_000, delayMs: () => 1, onRetry: (_e, attempt, delay) => told.push([attempt, delay]) });
  assert.deepEqual(told, [[1, 1]]);
});

test('retrying stops when its signal aborts, even mid-wait', async () => {
  const controller = new AbortController();
  const running = retrying(async () => {
    throw new Error('down');
  }, { baseMs: 3_600_000, capMs: 3_600_000, signal: controller.signal });
  setImmediate(() => controller.abort());
  await assert.rejects(running, /down/);
});

test('sleep ends early when its signal aborts', async () => {
  const controller = new AbortController();
  const slept = sleep(3_600_000, controller.signal);
  controller.abort();
  await slept;
});

test('a wakeable sleep ends when woken, and a wake with nobody asleep ends the next sleep at once', async () => {
  const sleeper = makeWakeableSleep();
  const long = sleeper.sleep(3_600_000);
  sleeper.wake();
  await long;
  sleeper.wake();
  await sleeper.sleep(3_600_000);
  // The pending wake is used up: this sleep runs its course.
  let ended = false;
  const short = sleeper.sleep(20).then(() => { ended = true; });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(ended, false);
  await short;
});

test('a sleep keeps the process alive until it ends (a top-level await of it is not cut short)', async () => {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, ['--input-type=module', '-e',
    "const { sleep, makeWakeableSleep } = await import('@docshare/contracts'); await sleep(30); await makeWakeableSleep().sleep(30); console.log('woke');"],
  { cwd: import.meta.dirname, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString(); });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  assert.equal(code, 0, 'exit 13 means the sleep did not hold the process');
  assert.equal(out.trim(), 'woke');
});
