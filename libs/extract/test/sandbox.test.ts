import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import type { ExtractionFailure } from '@docshare/contracts';
import { defaultConcurrency, exitReason } from '../src/sandbox.ts';
import { makeExtractor } from '../src/index.ts';
import type { ExtractorOptions, ExtractOutcome, WorkerExit } from '../src/index.ts';

const HOSTILE_WORKER = fileURLToPath(new URL('./fixtures/hostile-worker.ts', import.meta.url));

/** A file whose text is a command for the hostile worker (see fixtures/hostile-worker.ts). */
const command = (text: string): Uint8Array => new TextEncoder().encode(text);
const hint = { contentType: 'text/plain', fileName: 'job.txt' };

/** An extractor over the hostile worker, with its children's exits recorded. */
function hostileExtractor(overrides: Partial<ExtractorOptions> = {}): { extractor: ReturnType<typeof makeExtractor>; exits: WorkerExit[] } {
  const exits: WorkerExit[] = [];
  // A budget no ordinary job meets even on a loaded machine: only the tests that expect `timeout` set a short one.
  const extractor = makeExtractor({
    timeoutMs: 60_000, memoryMb: 256, maxChars: 10_000, maxBytes: 1024 * 1024,
    workerModule: HOSTILE_WORKER, onWorkerExit: (info) => exits.push(info), ...overrides,
  });
  return { extractor, exits };
}

/** Waits (within the test's timeout) until `exits` has an entry: a child's exit is told after its job settles. */
async function firstExit(exits: WorkerExit[]): Promise<WorkerExit> {
  while (exits.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
  return exits[0] as WorkerExit;
}

const assertReason = (outcome: ExtractOutcome, reason: ExtractionFailure): void => {
  assert.equal(outcome.ok, false, `expected ${reason}, got ${JSON.stringify(outcome)}`);
  if (!outcome.ok) assert.equal(outcome.reason, reason, outcome.detail);
};

const assertFine = async (extractor: ReturnType<typeof makeExtractor>, text = 'fine again'): Promise<void> => {
  const outcome = await extractor.extract(command(text), hint);
  assert.ok(outcome.ok, JSON.stringify(outcome));
  assert.equal(outcome.text, text);
};

describe('containment', { timeout: 240_000 }, () => {
  it('kills a child that loops forever (`timeout`), then respawns one', async () => {
    // Short, as the loop needs; long enough for the warm-up and the respawned child on a loaded machine.
    const { extractor, exits } = hostileExtractor({ timeoutMs: 5_000 });
    try {
      await assertFine(extractor, 'warm up');
      assertReason(await extractor.extract(command('loop'), hint), 'timeout');
      await assertFine(extractor);
      assert.equal(extractor.stats().spawned, 2);
      assert.equal((await firstExit(exits)).killedFor, 'timeout');
    } finally {
      await extractor.close();
    }
  });

  it('kills a child whose V8 heap grows without bound (`memory`), then respawns one', async () => {
    const { extractor } = hostileExtractor();
    try {
      assertReason(await extractor.extract(command('oom-heap'), hint), 'memory');
      await assertFine(extractor);
    } finally {
      await extractor.close();
    }
  });

  it('kills a child whose resident memory outgrows the budget outside the heap (`memory`)', async () => {
    const { extractor, exits } = hostileExtractor();
    try {
      assertReason(await extractor.extract(command('oom-rss'), hint), 'memory');
      assert.equal((await firstExit(exits)).killedFor, 'memory');
      assert.ok(extractor.stats().peakChildRssBytes > 256 * 1024 * 1024);
      await assertFine(extractor);
    } finally {
      await extractor.close();
    }
  });

  it('reports a child that exits without answering (`error`), then respawns one', async () => {
    const { extractor, exits } = hostileExtractor();
    try {
      const outcome = await extractor.extract(command('exit'), hint);
      assertReason(outcome, 'error');
      assert.ok(!outcome.ok && /code 3/.test(outcome.detail), JSON.stringify(outcome));
      await assertFine(extractor);
      const exit = await firstExit(exits);
      assert.equal(exit.code, 3);
      assert.equal(exit.killedFor, null);
    } finally {
      await extractor.close();
    }
  });

  it('does not believe a malformed reply (`error`)', async () => {
    const { extractor } = hostileExtractor();
    try {
      assertReason(await extractor.extract(command('garbage'), hint), 'error');
      await assertFine(extractor);
    } finally {
      await extractor.close();
    }
  });

  it('settles every one of many concurrent jobs, misbehaving or not', async () => {
    // Long enough for an ordinary job on a loaded machine (children start and load their modules meanwhile).
    const { extractor } = hostileExtractor({ concurrency: 2, timeoutMs: 6_000 });
    try {
      const texts = ['one', 'loop', 'two', 'exit', 'three', 'garbage', 'four', 'exit', 'five'];
      const outcomes = await Promise.all(texts.map((text) => extractor.extract(command(text), hint)));
      const summary = outcomes.map((outcome) => (outcome.ok ? outcome.text : outcome.reason));
      assert.deepEqual(summary, ['one', 'timeout', 'two', 'error', 'three', 'error', 'four', 'error', 'five']);
      assert.deepEqual({ ...extractor.stats(), spawned: 0, peakChildRssBytes: 0 }, {
        children: extractor.stats().children, busy: 0, queued: 0, settled: texts.length, spawned: 0, peakChildRssBytes: 0,
      });
    } finally {
      await extractor.close();
    }
  });

  it('close() settles pending and running jobs as `error` and kills the children', async () => {
    const { extractor, exits } = hostileExtractor({ timeoutMs: 30_000 });
    const running = extractor.extract(command('loop'), hint);
    const queued = extractor.extract(command('one'), hint);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await extractor.close();
    for (const outcome of await Promise.all([running, queued])) {
      assertReason(outcome, 'error');
      assert.ok(!outcome.ok && outcome.detail === 'extractor closed');
    }
    assert.equal(exits.length, 1);
    assert.equal(exits[0]?.killedFor, 'close');
    assert.equal(extractor.stats().children, 0);
    assertReason(await extractor.extract(command('one'), hint), 'error');
  });

  it('survives a worker module that cannot start (`error`)', async () => {
    const { extractor } = hostileExtractor({ workerModule: fileURLToPath(new URL('./fixtures/missing-worker.ts', import.meta.url)) });
    try {
      assertReason(await extractor.extract(command('one'), hint), 'error');
      assertReason(await extractor.extract(command('two'), hint), 'error');
    } finally {
      await extractor.close();
    }
  });
});

describe('the pool', () => {
  it('its default size is one child per core, as far as half the memory holds at the budget, at least one', () => {
    const GiB = 1024 ** 3;
    assert.equal(defaultConcurrency(512, 8, 64 * GiB), 8);
    assert.equal(defaultConcurrency(512, 8, 2 * GiB), 2);
    assert.equal(defaultConcurrency(512, 2, 1 * GiB), 1);
    assert.equal(defaultConcurrency(1024, 4, 1 * GiB), 1);
    assert.ok(defaultConcurrency(512) >= 1);
  });
});

describe('exitReason', () => {
  it('recognises V8 running out of heap in a real process as `memory`', () => {
    const crashed = spawnSync(process.execPath, ['--max-old-space-size=16', '-e', 'const a = []; for (;;) a.push({ n: a.length })'], { encoding: 'utf8' });
    assert.equal(exitReason(crashed.status, crashed.signal, crashed.stderr).reason, 'memory');
  });

  it('calls any other death `error`, with a one-line detail', () => {
    assert.deepEqual(exitReason(1, null, 'Error: boom\n    at x'), { reason: 'error', detail: 'the extraction process exited unexpectedly (code 1)' });
    assert.equal(exitReason(null, 'SIGSEGV', '').reason, 'error');
  });
});
