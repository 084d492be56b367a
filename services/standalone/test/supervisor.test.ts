import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { makeLogger } from '@docshare/http';
import { restartDelayMs, supervise, type RestartPolicy } from '../src/supervisor.ts';

const policy: RestartPolicy = { initialDelayMs: 1, maxDelayMs: 8, stableMs: 1_000, maxStartFailures: 5, giveUpOnExitCodes: [78] };

/** A logger whose lines land in `lines`. */
const capture = (lines: Record<string, unknown>[]) =>
  makeLogger('test-service', 'info', { write: (line: string) => { lines.push(JSON.parse(line) as Record<string, unknown>); } });

const exiting = (code: number) => () => spawn(process.execPath, ['-e', `process.exit(${code})`], { stdio: 'ignore' });

describe('supervisor', () => {
  it('doubles the delay per restart in a row, up to the cap', () => {
    assert.deepEqual([0, 1, 2, 3, 4, 10, 1_000].map((n) => restartDelayMs(policy, n)), [1, 2, 4, 8, 8, 8, 8]);
  });

  it('restarts a child that keeps dying before it is ready, logging each restart, then gives up with its code', async () => {
    const lines: Record<string, unknown>[] = [];
    let spawned = 0;
    const supervised = supervise({
      name: 'test-service', logger: capture(lines), policy,
      spawn: () => { spawned++; return exiting(3)(); },
      readiness: () => new Promise(() => {}),
    });
    const end = await supervised.ended;
    assert.deepEqual(end, { code: 3, signal: null, gaveUp: true });
    assert.equal(spawned, 5);
    assert.equal(supervised.restarts(), 4);
    assert.deepEqual(lines.filter((l) => 'restartInMs' in l).map((l) => [l.service, l.exitCode, l.restartInMs]), [
      ['test-service', 3, 1], ['test-service', 3, 2], ['test-service', 3, 4], ['test-service', 3, 8],
    ]);
  });

  it('gives up at once on the configuration-error exit code', async () => {
    const lines: Record<string, unknown>[] = [];
    const supervised = supervise({ name: 'test-service', logger: capture(lines), policy, spawn: exiting(78) });
    assert.deepEqual(await supervised.ended, { code: 78, signal: null, gaveUp: true });
    assert.equal(supervised.restarts(), 0);
  });

  it('never gives up on a child that was ready, and resets the delay after a stable run', async () => {
    const lines: Record<string, unknown>[] = [];
    let clock = 0;
    let spawned = 0;
    let stopAfter!: () => void;
    const sixth = new Promise<void>((resolve) => { stopAfter = resolve; });
    const supervised = supervise({
      name: 'test-service', logger: capture(lines), policy: { ...policy, maxStartFailures: 1 },
      // Every even-numbered run lasts longer than stableMs (the clock moves on as it exits).
      now: () => clock,
      spawn: () => {
        const n = ++spawned;
        if (n === 6) stopAfter();
        const child = spawn(process.execPath, ['-e', n === 6 ? 'setInterval(() => {}, 1000)' : 'process.exit(1)'], { stdio: 'ignore' });
        child.once('exit', () => { if (n % 2 === 0) clock += 5_000; });
        return child;
      },
    });
    await sixth;
    assert.deepEqual(await supervised.stop('SIGTERM', 10_000), { code: null, signal: 'SIGTERM', gaveUp: false });
    assert.equal(spawned, 6);
    assert.deepEqual(lines.filter((l) => 'restartInMs' in l).map((l) => l.restartInMs), [1, 1, 2, 1, 2]);
  });
});
