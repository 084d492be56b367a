// Runs a seeded fuzz: fast-check generates batches of cases, each batch goes out ~8 connections at
// a time, every answer is checked, /healthz must answer after each batch. Violations are collected
// (the run goes on, so one run shows every kind of problem) and reported with the seed and a
// reproduction; a server that died is reported with its last output and started again.
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import type { Server } from '../../support/server.ts';
import { caseArb, type Case, type FuzzContext } from './gen.ts';
import { checkExchange, newTally, summarize, type Tally, type Violation } from './check.ts';
import { exchange, reproduction, type WireResponse } from './wire.ts';

export interface RunOptions {
  seed: number;
  requests: number;
  concurrency: number;
  batch: number;
  timeoutMs: number;
  maxRestarts: number;
  /** Hangs after which the run stops (each costs `timeoutMs`; the run fails anyway). */
  maxHangs: number;
  /** Only this case index is sent (the others are generated and skipped). */
  replay?: number;
  log: (line: string) => void;
  /** Sees every response (for properties of one suite only). */
  onResponse?: (res: WireResponse) => void;
}

export interface RunResult {
  tally: Tally;
  violations: Violation[];
  crashes: string[];
  ms: number;
  cases: number;
  /** Why the run ended before its count, if it did. */
  stoppedEarly?: string;
}

const envInt = (name: string, fallback: number): number => {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return n;
};

/** Options from the environment: FUZZ_SEED, FUZZ_REQUESTS, FUZZ_CONCURRENCY, FUZZ_TIMEOUT_MS, FUZZ_REPLAY. */
export const optionsFromEnv = (defaultRequests: number, log: (line: string) => void): RunOptions => {
  const replay = process.env['FUZZ_REPLAY'];
  const opts: RunOptions = {
    seed: envInt('FUZZ_SEED', Math.floor(Math.random() * 2 ** 31)),
    requests: envInt('FUZZ_REQUESTS', defaultRequests),
    concurrency: Math.max(1, envInt('FUZZ_CONCURRENCY', 8)),
    batch: Math.max(1, envInt('FUZZ_BATCH', 64)),
    timeoutMs: Math.max(1000, envInt('FUZZ_TIMEOUT_MS', 30_000)),
    maxRestarts: envInt('FUZZ_MAX_RESTARTS', 3),
    maxHangs: envInt('FUZZ_MAX_HANGS', 5),
    log,
  };
  if (replay !== undefined && replay !== '') opts.replay = envInt('FUZZ_REPLAY', 0);
  return opts;
};

const healthy = async (baseUrl: string): Promise<boolean> => {
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const res = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(10_000) });
      const text = await res.text();
      if (res.status === 200 && text.includes('"success"')) return true;
    } catch {
      // not answering
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  return false;
};

export async function runFuzz(server: Server, ctx: FuzzContext, opts: RunOptions): Promise<RunResult> {
  const tally = newTally();
  const violations: Violation[] = [];
  const crashes: string[] = [];
  let restarts = 0;
  let index = 0;
  let requests = 0;
  let aborted = false;
  let stoppedEarly: string | undefined;
  const started = Date.now();
  const batches = opts.replay !== undefined ? Math.ceil((opts.replay + 1) / opts.batch) : Math.ceil(opts.requests / opts.batch);
  let lastReport = started;

  const runOne = async (c: Case, i: number): Promise<Violation[]> => {
    const t0 = Date.now();
    const result = await exchange(ctx.host, ctx.port, c.wire, opts.timeoutMs);
    const ms = Date.now() - t0;
    for (const res of result.responses) opts.onResponse?.(res);
    if (opts.replay !== undefined) {
      const file = path.join(os.tmpdir(), `fuzz-replay-${opts.seed}-${i}.bin`);
      writeFileSync(file, Buffer.concat(c.wire.chunks));
      opts.log(`replay #${i} (${c.gen}) ${c.label}\nbytes in ${file} (send them again: exec 3<>/dev/tcp/127.0.0.1/<port>; cat ${file} >&3; timeout 30 cat <&3)\n${reproduction(Buffer.concat(c.wire.chunks), ctx.port, 4000)}`);
      opts.log(`end=${result.end}${result.error ? ` error=${result.error}` : ''}${result.garbage ? ` garbage=${result.garbage}` : ''}`);
      for (const r of result.responses) opts.log(`${r.head}\r\n\r\n${r.body.subarray(0, 2000).toString('utf8')}`);
    }
    return checkExchange(c, i, result, ctx.port, tally, ms);
  };

  const property = fc.asyncProperty(fc.array(caseArb(ctx), { minLength: opts.batch, maxLength: opts.batch }), async (batch) => {
    if (aborted) return true;
    const first = index;
    index += batch.length;
    const todo = batch.map((c, k) => ({ c, i: first + k })).filter(({ i }) => opts.replay === undefined || i === opts.replay);
    const found: Violation[] = [];
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < todo.length) {
        const item = todo[next++];
        if (item === undefined) return;
        found.push(...(await runOne(item.c, item.i)));
        requests += item.c.wire.methods.length;
      }
    };
    await Promise.all(Array.from({ length: Math.min(opts.concurrency, todo.length) }, worker));
    if (todo.length > 0 && !(await healthy(server.baseUrl))) {
      // Every connection of this batch that got no answer is a suspect.
      const suspects = found.filter((v) => v.kind === 'dropped' || v.kind === 'hang');
      const report = [
        `the server stopped answering /healthz after batch ${first}..${index - 1} (seed ${opts.seed})`,
        suspects.length > 0 ? `suspects (no answer):\n${suspects.map((v) => `  #${v.index} ${v.gen} ${v.label}\n    ${v.repro}`).join('\n')}` : 'no connection of the batch went unanswered; every case of the batch is a suspect',
        `last server output:\n${server.output().slice(-4000)}`,
      ].join('\n');
      crashes.push(report);
      opts.log(report);
      for (const v of suspects) v.kind = 'crash-suspect';
      violations.push(...found);
      if (server.external || restarts >= opts.maxRestarts) {
        aborted = true;
        return true;
      }
      restarts += 1;
      opts.log(`restarting the server (${restarts} of at most ${opts.maxRestarts})`);
      await server.restart();
      return true;
    }
    violations.push(...found);
    const hangs = violations.filter((v) => v.kind === 'hang').length;
    if (hangs >= opts.maxHangs && opts.replay === undefined) {
      stoppedEarly = `stopped after case ${index - 1}: ${hangs} hangs of ${opts.timeoutMs} ms each (FUZZ_MAX_HANGS=${opts.maxHangs})`;
      opts.log(stoppedEarly);
      aborted = true;
      return true;
    }
    if (Date.now() - lastReport > 15_000) {
      lastReport = Date.now();
      opts.log(`fuzz: ${requests} requests in ${((Date.now() - started) / 1000).toFixed(0)} s, ${violations.length} violations so far`);
    }
    return true;
  });
  await fc.assert(property, { seed: opts.seed, numRuns: batches, endOnFailure: true });
  return { tally, violations, crashes, ms: Date.now() - started, cases: index, ...(stoppedEarly === undefined ? {} : { stoppedEarly }) };
}

/** The end-of-run summary: counts per status class and per generator. */
export const formatTally = (mode: string, seed: number, r: RunResult): string => {
  const classes = Object.entries(r.tally.byClass).sort().map(([k, v]) => `${k} ${v}`).join(', ');
  const gens = Object.entries(r.tally.byGen).sort().map(([g, m]) => `  ${g.padEnd(11)} ${Object.entries(m).sort().map(([k, v]) => `${k} ${v}`).join(', ')}`).join('\n');
  return [
    `fuzz (${mode}, seed ${seed}): ${r.tally.requests} requests on ${r.tally.connections} connections in ${(r.ms / 1000).toFixed(1)} s`,
    `  by status: ${classes}`,
    gens,
    `  slowest: ${r.tally.slowest.map((x) => `#${x.index} ${x.gen} ${x.ms} ms (${x.label})`).join('; ')}`,
    `  violations: ${r.violations.length}, server deaths: ${r.crashes.length}`,
  ].join('\n');
};

export const failureReport = (seed: number, r: RunResult): string => [
  `fuzz found ${r.violations.length} violations and ${r.crashes.length} server deaths; reproduce with FUZZ_SEED=${seed} (one case: FUZZ_SEED=${seed} FUZZ_REPLAY=<#>)`,
  ...(r.stoppedEarly === undefined ? [] : [r.stoppedEarly]),
  ...r.crashes.map((c) => `\n${c}`),
  summarize(r.violations),
].join('\n');
