// The fuzz at the default rate limit (30 requests per 60 s per user or IP): most answers are 429,
// and those must be the spec's 429 as well (envelope, message, Retry-After), never a 5xx, never a
// dropped connection. Short on purpose: the limit makes everything past the budget cheap.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useServer } from '../support/fixture.ts';
import { TARGET } from '../support/server.ts';
import type { FuzzContext } from './lib/gen.ts';
import { FUZZ_WEBHOOK_ENV, makeWorld } from './lib/setup.ts';
import { failureReport, formatTally, optionsFromEnv, runFuzz } from './lib/run.ts';
import { header } from './lib/wire.ts';

const MAX_UPLOAD_BYTES = 65_536;
const RATE_LIMITED = 'Rate limit exceeded. Please try again later.';
const opts = { ...optionsFromEnv(300, (line) => console.log(line)), requests: Number(process.env['FUZZ_RATELIMIT_REQUESTS'] || 300) };

console.log(`fuzz at the default rate limit: seed ${opts.seed} (reproduce with FUZZ_SEED=${opts.seed}), ${opts.requests} requests, target ${TARGET}`);

let ctx: FuzzContext;
// The setup itself needs more than 30 requests: it runs under a high limit, then the server is
// restarted on the same data with the default limit.
const fx = useServer({ RATE_LIMIT_POINTS: '1000000', MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES), ...FUZZ_WEBHOOK_ENV }, async ({ server, c }) => {
  const world = await makeWorld(c, MAX_UPLOAD_BYTES);
  const url = new URL(server.baseUrl);
  ctx = { host: url.hostname, port: Number(url.port || 80), ...world.ctx };
  await server.restart({ RATE_LIMIT_POINTS: undefined, RATE_LIMIT_WINDOW_SECONDS: undefined });
});

describe(`HTTP fuzz at the default rate limit (${TARGET})`, () => {
  it(`${opts.requests} generated requests at 30/60 s: 429s are the envelope with Retry-After, no 5xx, no drop`, { timeout: 10 * 60_000 }, async () => {
    const limited: string[] = [];
    let seen429 = 0;
    const result = await runFuzz(fx.server, ctx, {
      ...opts,
      onResponse: (res) => {
        if (res.status !== 429) return;
        seen429 += 1;
        const body = res.body.toString('utf8');
        const retryAfter = header(res, 'retry-after');
        // An empty body is a HEAD's (any other empty answer fails the envelope property anyway).
        if ((body !== '' && !body.includes(`"message":"${RATE_LIMITED}"`)) || retryAfter === undefined || !/^\d+$/.test(retryAfter)) {
          limited.push(`429 without the spec's message or a Retry-After in whole seconds: ${res.head.split('\r\n')[0]} retry-after=${retryAfter} ${body.slice(0, 200)}`);
        }
      },
    });
    console.log(`${formatTally(`${TARGET}, default rate limit`, opts.seed, result)}\n  of which 429: ${seen429}`);
    assert.ok(seen429 > 0, 'the default limit refused nothing: is RATE_LIMIT_POINTS still the default?');
    assert.deepEqual(limited.slice(0, 5), [], 'every 429 is the spec\'s');
    if (result.violations.length > 0 || result.crashes.length > 0) assert.fail(failureReport(opts.seed, result));
  });
});
