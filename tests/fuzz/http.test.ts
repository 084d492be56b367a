// Property-based HTTP fuzzing of the whole public port (issue 6, "A fuzz suite of our own"):
// random methods, paths, queries, headers, encodings, JSON and multipart bodies and raw-socket
// requests, against `npm start` (embedded) or a distributed instance (DOCSHARE_TARGET=distributed).
// Properties: no 5xx, every answer the JSON envelope (except the documented HTML page and file
// bytes), every fully sent request answered, nothing hangs, /healthz answers after every batch,
// and a sentinel user's data is byte for byte the same afterwards.
//
// FUZZ_SEED=<n> replays a run; FUZZ_REQUESTS=<n> sets the count (default 20,000 embedded, 2,000
// distributed); FUZZ_REPLAY=<#> sends only case # of the seed's sequence and prints it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useServer } from '../support/fixture.ts';
import { TARGET } from '../support/server.ts';
import type { FuzzContext } from './lib/gen.ts';
import { checkSentinel, FUZZ_WEBHOOK_ENV, makeWorld, type Sentinel } from './lib/setup.ts';
import { failureReport, formatTally, optionsFromEnv, runFuzz } from './lib/run.ts';

const MAX_UPLOAD_BYTES = 65_536;
const opts = optionsFromEnv(TARGET === 'distributed' ? 2_000 : 20_000, (line) => console.log(line));
console.log(`fuzz: seed ${opts.seed} (reproduce with FUZZ_SEED=${opts.seed}), ${opts.requests} requests, ${opts.concurrency} in flight, target ${TARGET}`);

let ctx: FuzzContext;
let sentinel: Sentinel;
const fx = useServer({ RATE_LIMIT_POINTS: '1000000', MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES), ...FUZZ_WEBHOOK_ENV }, async ({ server, c }) => {
  const world = await makeWorld(c, MAX_UPLOAD_BYTES);
  const url = new URL(server.baseUrl);
  ctx = { host: url.hostname, port: Number(url.port || 80), ...world.ctx };
  sentinel = world.sentinel;
});

describe(`HTTP fuzz (${TARGET})`, () => {
  it(`${opts.requests} generated requests: no 5xx, only the envelope, no drop, no hang, the server stays up, the sentinel is intact`, { timeout: 60 * 60_000 }, async () => {
    const result = await runFuzz(fx.server, ctx, opts);
    console.log(formatTally(TARGET, opts.seed, result));
    // The process is still up, and the sentinel's data is what it was.
    const problems: string[] = [];
    try {
      const health = await fetch(`${fx.server.baseUrl}/healthz`, { signal: AbortSignal.timeout(10_000) });
      await health.arrayBuffer();
      if (health.status !== 200) problems.push(`/healthz after the run: HTTP ${health.status}`);
      await checkSentinel(fx.c, sentinel);
    } catch (err) {
      problems.push(`after the run: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (problems.length > 0 || result.violations.length > 0 || result.crashes.length > 0) {
      assert.fail([...problems, failureReport(opts.seed, result)].join('\n'));
    }
    if (opts.replay === undefined) assert.ok(result.tally.requests >= opts.requests, `only ${result.tally.requests} of ${opts.requests} requests were sent`);
  });
});
