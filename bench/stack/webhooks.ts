/**
 * bench:stack's webhooks scenario (issue 23; BENCH_STACK_ONLY=webhooks): the issue's three goals
 * measured in one run on the distributed stack, the receivers on loopback (the stack runs with
 * WEBHOOK_ALLOW_PRIVATE_NETWORKS=true, WEBHOOK_ALLOW_HTTP=true and a short WEBHOOK_RETRY_SCHEDULE).
 *
 *   1. event recorded → first delivery attempt at `rate` events/s spread over `endpoints` endpoints
 *      (one user each, subscribed to comment.received; the events are comments posted through the
 *      gateway, each user on their own file; the event's time is the payload's `timestamp`, the
 *      attempt's is its arrival at the receiver), beside the ceiling: the same receiver hit at the
 *      same rate by a bare loop of signed POSTs from the bench (timestamped as they are sent);
 *   2. the same load again with one more endpoint hanging for `hangSeconds` (the receiver holds its
 *      requests; `hangRate` of the `rate` events/s go to it, the same total): the others' p99 in both runs and the difference;
 *   3. a soak of `soakSeconds` with an endpoint answering 500 to everything (`failRate` events/s) beside
 *      `soakRate` events/s to the others: the dispatcher's RSS (/proc, the supervisor's pid file)
 *      every `sampleSeconds`: start, end, max and the slope.
 *
 * Each comment carries a tag (`whb:<phase>:<seq>`) so a delivery is matched to the request that
 * made it: deliveries still missing after `settleSeconds` are counted, a retry (same `webhook-id`)
 * is counted apart, and a late delivery of an earlier phase is never taken for this one's.
 */
import { Webhook } from 'standardwebhooks';
import { sleep } from '@docshare/contracts';
import { fileInput, type Api, type User } from './api.ts';
import { cpuUsed, describeLag, rssMiB, type CpuSnapshot, type PipelineLag } from './infra.ts';
import { expectOk, mapLimit, pacedLoad, percentile, request, summarizeErrors, type LoadResult } from './load.ts';
import { fmt, ratioOf, type Row } from './report.ts';
import { startReceiver, type Receiver, type ReceiverCounts } from './webhooks-receiver.ts';
import {
  FirstArrivals, commentTag, missingSeqs, rssTrend, summarizeLatencies, type LatencySummary, type ReceiverMode, type RssSample, type RssTrend,
} from './webhooks-stats.ts';

export interface WebhookPhaseOptions {
  api: Api;
  runId: string;
  receiverPort: number;
  endpoints: number;
  rate: number;
  loadSeconds: number;
  hangSeconds: number;
  hangRate: number;
  settleSeconds: number;
  ceilingSeconds: number;
  soakSeconds: number;
  soakRate: number;
  failRate: number;
  sampleSeconds: number;
  /** The dispatcher's current pid (the supervisor rewrites its pid file on a restart). */
  dispatcherPid: () => Promise<number | null>;
  /** Waits until the pipeline (the dispatcher's consumer group included) has caught up. */
  catchUp: (label: string) => Promise<unknown>;
  /** Why the instance stopped, or null while it runs. */
  lost: () => string | null;
  log: (line: string) => void;
  /**
   * Where the time goes, sampled during each run: every process's CPU (cpuSnapshot) and how far
   * each consumer group is behind the log (the lag probe; the dispatcher's group counts events not
   * yet turned into stored tasks, not deliveries not yet made).
   */
  probe?: { cpu: () => Promise<CpuSnapshot>; lag: () => Promise<PipelineLag> };
}

export interface LoadSummary { offered: number; ok: number; errors: number; rate: number; ackP99Ms: number; errorKinds: Record<string, number> }

export interface RunStats {
  seconds: number;
  load: Record<string, LoadSummary>;
  /** event → first arrival per endpoint mode (ms) */
  latency: Partial<Record<ReceiverMode, LatencySummary>>;
  sent: Partial<Record<ReceiverMode, number>>;
  missing: Partial<Record<ReceiverMode, number>>;
  repeats: number;
  settleSeconds: number;
  /** CPU of each process during the load, % of one core (probe) */
  cpuPercent?: Record<string, number>;
  /** the most events each consumer group (and the outbox) was behind during the load and the settling (probe) */
  maxBehind?: Record<string, number>;
}

export interface SoakStats {
  seconds: number;
  samples: RssSample[];
  trend: RssTrend;
  /** dispatcher pids seen (more than one: it restarted during the soak) */
  pids: number[];
  load: Record<string, LoadSummary>;
  /** requests the failing endpoint answered with 500, and the deliveries the others got, during the soak */
  failAttempts: number;
  okDeliveries: number;
}

export interface WebhookResult {
  setupSeconds: number;
  ceiling: RunStats;
  base: RunStats;
  hanging: RunStats;
  soak: SoakStats | null;
  receiver: ReceiverCounts;
}

interface Owner extends User { fileId: number }

const loadSummary = (r: LoadResult, offered: number): LoadSummary => ({
  offered, ok: r.ok, errors: r.errors, rate: r.rate, ackP99Ms: percentile(r.latencies, 99), errorKinds: r.errorKinds,
});

export const runWebhookPhase = async (o: WebhookPhaseOptions): Promise<WebhookResult> => {
  const receiver = await startReceiver(o.receiverPort);
  try {
    return await measure(o, receiver);
  } finally {
    await receiver.close();
  }
};

const measure = async (o: WebhookPhaseOptions, receiver: Receiver): Promise<WebhookResult> => {
  const { api, log } = o;
  const alive = (): void => {
    const lost = o.lost();
    if (lost) throw new Error(`the instance stopped: ${lost}`);
  };

  // ---- setup: users, one endpoint and one file each -----------------------------------------------
  const t0 = performance.now();
  const plan: { mode: ReceiverMode; index: number }[] = [
    ...Array.from({ length: o.endpoints }, (_, index) => ({ mode: 'ok' as const, index })),
    { mode: 'hang', index: 0 }, { mode: 'fail', index: 0 },
  ];
  log(`webhooks: registering ${plan.length} users, each with an endpoint on ${receiver.url('ok', 0).replace(/\/ok\/0$/, '')} (comment.received) and a file`);
  const secrets = new Map<string, string>();
  let done = 0;
  const owners = await mapLimit(plan.length, 16, async (i): Promise<Owner> => {
    alive();
    const { mode, index } = plan[i]!;
    const user = await api.register(`Webhook ${mode} ${index}`, `wh-${mode}-${index}-${o.runId}@bench.test`);
    const created = await api.json('/api/V1/users/api-webhooks', user.token, {
      url: receiver.url(mode, index), events: ['comment.received'], description: `bench ${mode} ${index}`,
    }, 'api-webhooks');
    const secret = String(created.secret);
    receiver.setSecret(mode, index, secret);
    secrets.set(`${mode}/${index}`, secret);
    const fileId = await api.upload(user.token, fileInput(i, 256));
    done += 1;
    if (done % 200 === 0) log(`webhooks: ${done}/${plan.length} users set up`);
    return { ...user, fileId };
  });
  const ok = owners.slice(0, o.endpoints);
  const hang = owners[o.endpoints]!;
  const fail = owners[o.endpoints + 1]!;
  await o.catchUp('webhooks setup');
  const setupSeconds = (performance.now() - t0) / 1000;
  log(`webhooks: set up in ${setupSeconds.toFixed(1)} s`);

  const comment = (owner: Owner, phase: string, seq: number): Promise<void> =>
    api.comment(owner.token, owner.fileId, `${commentTag(phase, seq)} bench webhook load`);

  /**
   * One phase: paced loads (one per mode) for `seconds`, then waits until every event sent to the
   * `ok` endpoints (and the hanging one, when `waitFor` says so) has arrived, at most settleSeconds.
   */
  const phase = async (
    name: string, seconds: number, loads: { mode: ReceiverMode; rate: number; op: (seq: number) => Promise<void> }[],
    waitFor: readonly ReceiverMode[] = ['ok'],
  ): Promise<RunStats> => {
    alive();
    const arrivals = new FirstArrivals(name);
    receiver.sink = (d) => { arrivals.add(d); };
    const sent: Partial<Record<ReceiverMode, number[]>> = {};
    const cpuBefore = await o.probe?.cpu();
    const maxBehind: Record<string, number> = {};
    let sampling = o.probe !== undefined;
    const sampler = (async () => {
      while (sampling && o.probe) {
        const lag = await o.probe.lag().catch(() => null);
        if (lag) for (const [group, n] of [['outbox', lag.outbox] as const, ...Object.entries(lag.groups)]) maxBehind[group] = Math.max(maxBehind[group] ?? 0, n);
        await sleep(2000);
      }
    })();
    const loadStart = performance.now();
    const stops = loads.map(({ mode, rate, op }) => {
      const mine: number[] = [];
      sent[mode] = mine;
      return { mode, rate, stop: pacedLoad(rate, 256, async (seq) => { await op(seq); mine.push(seq); }) };
    });
    await sleep(seconds * 1000);
    const load: Record<string, LoadSummary> = {};
    for (const { mode, rate, stop } of stops) load[mode] = loadSummary(await stop(), rate);
    const cpuAfter = await o.probe?.cpu();
    const loadSeconds = (performance.now() - loadStart) / 1000;
    const settleStart = performance.now();
    const missingOf = (mode: ReceiverMode): number => missingSeqs(arrivals, mode, sent[mode] ?? []).length;
    while (waitFor.some((m) => missingOf(m) > 0) && performance.now() - settleStart < o.settleSeconds * 1000 && !o.lost()) await sleep(250);
    sampling = false;
    await sampler;
    const out: RunStats = {
      seconds, load, latency: {}, sent: {}, missing: {}, repeats: arrivals.repeats, settleSeconds: (performance.now() - settleStart) / 1000,
      ...(cpuBefore && cpuAfter ? {
        cpuPercent: Object.fromEntries(Object.entries(cpuUsed(cpuBefore, cpuAfter)).map(([name, used]) => [name, Math.round((used / loadSeconds) * 100)])),
        maxBehind,
      } : {}),
    };
    for (const { mode } of loads) {
      out.latency[mode] = summarizeLatencies(arrivals.latencies(mode));
      out.sent[mode] = sent[mode]!.length;
      out.missing[mode] = missingOf(mode);
    }
    receiver.sink = () => undefined;
    return out;
  };
  const describe = (name: string, r: RunStats): void => {
    for (const [mode, l] of Object.entries(r.latency)) {
      log(`webhooks ${name} (${mode}): event → first delivery p50 ${fmt(l.p50)} ms, p99 ${fmt(l.p99)} ms, max ${fmt(l.max)} ms; `
        + `${l.count} of ${r.sent[mode as ReceiverMode]} arrived, ${r.missing[mode as ReceiverMode]} missing after ${r.settleSeconds.toFixed(1)} s`);
    }
    for (const [mode, l] of Object.entries(r.load)) {
      log(`webhooks ${name} (${mode}): ${fmt(l.rate)}/s acknowledged of ${l.offered} offered, ack p99 ${fmt(l.ackP99Ms)} ms`
        + (l.errors > 0 ? `, ${l.errors} errors: ${summarizeErrors(l.errorKinds)}` : ''));
    }
    if (r.cpuPercent) log(`webhooks ${name}: CPU during the load (% of one core): ${cpuText(r.cpuPercent)}`);
    if (r.maxBehind) log(`webhooks ${name}: most behind during the load and settling: ${describeLag(lagOf(r.maxBehind))}`);
  };
  const byIndex = (n: number): Owner => ok[n % ok.length]!;

  // ---- warm-up: one event per endpoint (connections opened, caches filled), not measured --------
  log(`webhooks: warm-up, one event to each endpoint`);
  const warm = await phase('w', Math.max(1, ok.length / o.rate), [{ mode: 'ok', rate: o.rate, op: (seq) => comment(byIndex(seq), 'w', seq) }]);
  describe('warm-up', warm);
  if ((warm.latency.ok?.count ?? 0) === 0) throw new Error(`no delivery reached the receiver within ${o.settleSeconds} s of the warm-up: is the webhook-dispatcher running?`);

  // ---- the ceiling: the bench's own signed POSTs to the same receiver -------------------------------
  const signers = ok.map((_, i) => new Webhook(secrets.get(`ok/${i}`)!));
  log(`webhooks: ceiling, ${o.rate} signed POSTs/s from the bench to the receiver for ${o.ceilingSeconds} s`);
  const ceiling = await phase('c', o.ceilingSeconds, [{
    mode: 'ok', rate: o.rate,
    op: async (seq) => {
      const index = seq % ok.length;
      const now = new Date();
      const body = JSON.stringify({
        type: 'comment.received', timestamp: now.toISOString(),
        data: { comment_id: seq, file_id: ok[index]!.fileId, owner_id: ok[index]!.userId, author_id: ok[index]!.userId, comment: `${commentTag('c', seq)} bench webhook load`, posted_at: now.toISOString() },
      });
      const id = `msg_${o.runId}c${seq.toString(16).padStart(24, '0')}`;
      expectOk(await request('POST', receiver.url('ok', index), {
        'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': signers[index]!.sign(id, now, body),
      }, body), 'ceiling POST');
    },
  }]);
  describe('ceiling', ceiling);

  // ---- goal 1: the load alone -------------------------------------------------------------------------
  log(`webhooks: ${o.rate} events/s over ${ok.length} endpoints for ${o.loadSeconds} s`);
  const base = await phase('a', o.loadSeconds, [{ mode: 'ok', rate: o.rate, op: (seq) => comment(byIndex(seq), 'a', seq) }]);
  describe('load', base);
  await o.catchUp('webhooks load');

  // ---- goal 2: the same with one endpoint hanging -------------------------------------------------
  // The same total rate (the hanging endpoint's share taken from the others'): what moves the
  // others' p99 is then the hang, not a heavier load on a saturated machine.
  log(`webhooks: the same ${o.rate} events/s with one endpoint hanging for ${o.hangSeconds} s (${o.hangRate} events/s of them to it)`);
  receiver.hangUntil = Date.now() + o.hangSeconds * 1000;
  const hanging = await phase('b', o.loadSeconds, [
    { mode: 'ok', rate: Math.max(1, o.rate - o.hangRate), op: (seq) => comment(byIndex(seq), 'b', seq) },
    { mode: 'hang', rate: o.hangRate, op: (seq) => comment(hang, 'b', seq) },
  ], ['ok', 'hang']);
  receiver.hangUntil = 0;
  describe('hanging', hanging);
  await o.catchUp('webhooks hanging');

  // ---- goal 3: the soak with a failing endpoint -----------------------------------------------------
  let soak: SoakStats | null = null;
  if (o.soakSeconds > 0) {
    log(`webhooks: soak of ${o.soakSeconds} s, ${o.failRate} events/s to an endpoint answering 500, ${o.soakRate} events/s to the others; dispatcher RSS every ${o.sampleSeconds} s`);
    const before = { fail: receiver.counts.byMode.fail, ok: receiver.counts.byMode.ok };
    const loads = [
      { mode: 'ok', rate: o.soakRate, stop: pacedLoad(o.soakRate, 256, (seq) => comment(byIndex(seq), 's', seq)) },
      { mode: 'fail', rate: o.failRate, stop: pacedLoad(o.failRate, 256, (seq) => comment(fail, 's', seq)) },
    ];
    const samples: RssSample[] = [];
    const pids = new Set<number>();
    const began = performance.now();
    let lastLog = began;
    try {
      for (;;) {
        const pid = await o.dispatcherPid();
        if (pid !== null) pids.add(pid);
        const t = (performance.now() - began) / 1000;
        samples.push({ t, mib: pid === null ? Number.NaN : await rssMiB(pid) });
        if (performance.now() - lastLog >= 60_000) {
          lastLog = performance.now();
          log(`webhooks soak: ${t.toFixed(0)} s, dispatcher RSS ${fmt(samples.at(-1)!.mib)} MiB, failing endpoint ${receiver.counts.byMode.fail - before.fail} requests`);
        }
        if (t >= o.soakSeconds || o.lost()) break;
        await sleep(Math.min(o.sampleSeconds * 1000, Math.max(0, (o.soakSeconds - t) * 1000)));
      }
    } finally {
      const load: Record<string, LoadSummary> = {};
      for (const l of loads) load[l.mode] = loadSummary(await l.stop(), l.rate);
      const trend = rssTrend(samples);
      soak = {
        seconds: (performance.now() - began) / 1000, samples, trend, pids: [...pids], load,
        failAttempts: receiver.counts.byMode.fail - before.fail, okDeliveries: receiver.counts.byMode.ok - before.ok,
      };
    }
    log(`webhooks soak: dispatcher RSS ${fmt(soak.trend.startMiB)} → ${fmt(soak.trend.endMiB)} MiB (max ${fmt(soak.trend.maxMiB)}), `
      + `slope ${fmt(soak.trend.slopeMiBPerHour)} MiB/h (second half ${fmt(soak.trend.secondHalfSlopeMiBPerHour)}), ${soak.failAttempts} requests to the failing endpoint`);
  }
  return { setupSeconds, ceiling, base, hanging, soak, receiver: receiver.counts };
};

const cpuText = (cpu: Record<string, number>): string =>
  Object.entries(cpu).map(([name, pct]) => `${name.replace(/-projector$/, '')} ${Number.isFinite(pct) ? `${pct}%` : 'n/a'}`).join(', ');
const lagOf = (behind: Record<string, number>): PipelineLag => {
  const { outbox = 0, ...groups } = behind;
  return { outbox, groups, total: Object.values(behind).reduce((a, b) => a + b, 0) };
};
/** The load was carried: at least 95 % of what was offered acknowledged (else the latencies say the machine was saturated, not what the goal asks). */
const sustained = (r: RunStats): boolean => Object.values(r.load).every((l) => l.rate >= 0.95 * l.offered);

const lat = (l: LatencySummary | undefined): string => (l ? `${fmt(l.p50)} / ${fmt(l.p99)} ms` : 'n/a');
const arrived = (r: RunStats, mode: ReceiverMode): string =>
  `${r.latency[mode]?.count ?? 0}/${r.sent[mode] ?? 0} arrived${r.missing[mode] ? `, ${r.missing[mode]} missing` : ''}`;

/** The scenario's rows of the bench:stack table. */
export const webhookRows = (r: WebhookResult, o: Pick<WebhookPhaseOptions, 'endpoints' | 'rate' | 'hangSeconds' | 'hangRate' | 'soakSeconds' | 'soakRate' | 'failRate' | 'settleSeconds'>): Row[] => {
  const rows: Row[] = [{ section: `webhooks (issue 23): ${o.endpoints} endpoints, comments through the gateway, receivers on loopback` }];
  const base = r.base.latency.ok;
  const ceiling = r.ceiling.latency.ok;
  rows.push({
    measure: `event → first delivery p50 / p99 at ${o.rate} events/s (goal: p99 ≤ 1000 ms)`,
    docshareText: `${lat(base)} (${arrived(r.base, 'ok')})`,
    ceilingText: `${lat(ceiling)} (bench's signed POSTs)`,
    ratioText: `${ratioOf(base?.p99, ceiling?.p99)} p99; goal ${base && base.p99 <= 1000 && !r.base.missing.ok ? 'met' : 'MISSED'}${sustained(r.base) ? '' : ' (load not sustained)'}`,
  });
  const load = r.base.load.ok;
  if (load) rows.push({ measure: 'comments acknowledged (events/s)', docshare: load.rate, ceiling: load.offered, unit: '/s', ceilingName: 'offered' });
  const hung = r.hanging.latency.ok;
  const diff = hung && base ? hung.p99 - base.p99 : Number.NaN;
  rows.push({
    measure: `others' p50 / p99 with one endpoint hanging ${o.hangSeconds} s (${o.hangRate} of the ${o.rate} events/s to it; goal: p99 moves ≤ 100 ms)`,
    docshareText: `${lat(hung)} (${arrived(r.hanging, 'ok')})`,
    ceilingText: `${lat(base)} (without it)`,
    ratioText: `Δp99 ${fmt(diff)} ms; goal ${!sustained(r.base) || !sustained(r.hanging) ? 'not measured (load not sustained)' : Number.isFinite(diff) && diff <= 100 && !r.hanging.missing.ok ? 'met' : 'MISSED'}`,
  });
  rows.push({
    measure: 'the hanging endpoint\'s events (held, then delivered)',
    docshareText: `${arrived(r.hanging, 'hang')} within ${o.settleSeconds} s; ${r.receiver.abandoned} requests given up by the dispatcher`, ceilingText: '', ratioText: '',
  });
  for (const [name, run] of [['the load', r.base], ['the load with the hang', r.hanging]] as const) {
    if (run.cpuPercent) rows.push({ measure: `CPU during ${name} (% of one core)`, docshareText: cpuText(run.cpuPercent), ceilingText: '', ratioText: '' });
    if (run.maxBehind) rows.push({ measure: `most events behind during ${name}`, docshareText: describeLag(lagOf(run.maxBehind)), ceilingText: '0', ratioText: '' });
  }
  rows.push({
    measure: 'deliveries re-sent with the same webhook-id (retries) / signatures not verified',
    docshareText: `${r.base.repeats + r.hanging.repeats} / ${r.receiver.badSignatures}`, ceilingText: '', ratioText: '',
  });
  if (r.soak) {
    const t = r.soak.trend;
    rows.push({
      measure: `dispatcher RSS over a ${fmt(r.soak.seconds)} s soak (an endpoint answering 500 at ${o.failRate}/s, ${o.soakRate}/s to the others): start → end (max)`,
      docshareText: `${fmt(t.startMiB)} → ${fmt(t.endMiB)} (${fmt(t.maxMiB)}) MiB`, ceilingText: 'flat',
      ratioText: `${fmt(t.slopeMiBPerHour)} MiB/h (2nd half ${fmt(t.secondHalfSlopeMiBPerHour)})${r.soak.pids.length > 1 ? `; restarted (${r.soak.pids.length} pids)` : ''}`,
    });
    rows.push({
      measure: 'soak: failing endpoint requests / others\' deliveries',
      docshareText: `${r.soak.failAttempts} / ${r.soak.okDeliveries}`, ceilingText: '', ratioText: '',
    });
  }
  return rows;
};
