/**
 * README commands that are quick to run as written and are not part of a larger test: the fuzz
 * suite's one-case replay (the way a failure found by the fuzzer is looked at).
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { README, shCommands, typed } from './readme.ts';

const replay = shCommands(README).find((command) => command.includes('FUZZ_REPLAY='));

it('the fuzz replay of one case, as the README types it, sends that case and passes', { timeout: 300_000 }, async () => {
  assert.ok(replay, 'README shows a FUZZ_REPLAY command');
  const env: NodeJS.ProcessEnv = { ...process.env };
  // A test run inside this one would otherwise report to this runner, not print its own result.
  delete env['NODE_TEST_CONTEXT'];
  const { code, out } = await typed(replay, env);
  assert.equal(code, 0, out);
  const caseNumber = /FUZZ_REPLAY=(\d+)/.exec(replay)![1];
  assert.match(out, new RegExp(`#${caseNumber}\\b`), `the replay prints case #${caseNumber}:\n${out}`);
  assert.match(out, /ℹ fail 0/);
});
