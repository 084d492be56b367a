/**
 * What one operation costs each process of the stack, for sizing (docs/ops.md, Sizing): each
 * operation type runs as a phase of its own at a steady rate; the CPU time of every service and
 * server (process trees, procs.ts) and the store commands of every service (metrics.ts) are read
 * before it and after the pipeline has caught up with it, and the idle cost of the same span
 * (measured just before the phases) is taken off:
 *
 *   CPU-s per 1,000 ops = (CPU used over the span − idle CPU rate × span) ÷ ops × 1,000
 *   one core carries     = 1,000 ÷ that, ops/s
 *
 * Pure functions: the bench (bench/stack.ts) runs the phases.
 */
import { BACKEND_SERVICES, GATEWAY_SERVICE } from '@docshare/contracts/services';
import type { StoreCommands } from './metrics.ts';
import { fmt, renderGrid } from './report.ts';

/** The services' columns: the gateway, then every service behind it (the registry, libs/contracts/src/services.ts). */
export const SERVICE_COLUMNS: readonly { key: string; label: string }[] =
  [GATEWAY_SERVICE, ...BACKEND_SERVICES].map(({ name }) => ({ key: name, label: name }));
/** The table's columns: the services, then the servers (keys as cpuSnapshot names them). */
export const COST_COLUMNS: readonly { key: string; label: string }[] = [
  ...SERVICE_COLUMNS,
  { key: 'kafka', label: 'kafka' },
  { key: 'ferretdb', label: 'ferretdb(+postgres)' },
  { key: 'elasticsearch', label: 'elasticsearch' },
  { key: 'minio', label: 'minio' },
  { key: 'redis', label: 'redis' },
];

/** What a span of time cost: its length, CPU seconds per process tree, store commands per service. */
export interface SpanCost {
  seconds: number;
  cpu: Record<string, number>;
  commands: Record<string, StoreCommands | null>;
}

/** One operation's phase: the span from its first request to the pipeline caught up with it. */
export interface PhaseCost extends SpanCost {
  operation: string;
  ok: number;
  errors: number;
  /** completed operations per second while the load ran */
  rate: number;
  /** what failed, and how often (load.ts) */
  errorKinds?: Record<string, number>;
}

/** The idle rate × the span, taken off the span's use: what the operations themselves cost. */
const net = (used: number, idleUsed: number, idleSeconds: number, seconds: number): number =>
  used - (idleSeconds > 0 ? (idleUsed / idleSeconds) * seconds : 0);

/** CPU-s per 1,000 operations of each column (NaN where unmeasured or restarted) and of all of them. */
export const cpuPerThousand = (phase: PhaseCost, idle: SpanCost): Record<string, number> => {
  const out: Record<string, number> = {};
  let all = 0;
  for (const { key } of COST_COLUMNS) {
    const used = phase.cpu[key];
    const idleUsed = idle.cpu[key];
    const value = used === undefined || idleUsed === undefined || phase.ok === 0
      ? NaN
      : (net(used, idleUsed, idle.seconds, phase.seconds) / phase.ok) * 1000;
    out[key] = value;
    if (Number.isFinite(value)) all += value;
  }
  out.all = all;
  return out;
};

/** Store commands per operation of each service (null where a service has no counter) and of all of them. */
export const commandsPerOp = (phase: PhaseCost, idle: SpanCost): Record<string, number | null> => {
  const out: Record<string, number | null> = {};
  let all: number | null = null;
  for (const { key } of SERVICE_COLUMNS) {
    const used = phase.commands[key];
    const idleUsed = idle.commands[key];
    if (!used || !idleUsed || phase.ok === 0) {
      out[key] = null;
      continue;
    }
    const value = net(used.total, idleUsed.total, idle.seconds, phase.seconds) / phase.ok;
    out[key] = value;
    all = (all ?? 0) + value;
  }
  out.all = all;
  return out;
};

/** Store commands per operation and command name, net of idle (the commands a service sends for one operation). */
export const commandsByName = (phase: PhaseCost, idle: SpanCost, service: string): Record<string, number> | null => {
  const used = phase.commands[service];
  const idleUsed = idle.commands[service];
  if (!used || !idleUsed || phase.ok === 0) return null;
  const names = new Set([...Object.keys(used.byCommand), ...Object.keys(idleUsed.byCommand)]);
  const out: Record<string, number> = {};
  for (const name of names) {
    const value = net(used.byCommand[name] ?? 0, idleUsed.byCommand[name] ?? 0, idle.seconds, phase.seconds) / phase.ok;
    if (Math.abs(value) >= 0.005) out[name] = Number(value.toFixed(2));
  }
  return out;
};

const opsCell = (p: PhaseCost): string => `${p.ok} (${fmt(p.rate)}/s${p.errors > 0 ? `, ${p.errors} errors` : ''})`;

/** `operation | ops | <each column> | all`, in CPU-s per 1,000 operations, net of idle; the idle row in CPU-s per 1,000 s. */
export const renderCpuTable = (phases: readonly PhaseCost[], idle: SpanCost): string => {
  const header = ['operation', 'ops', ...COST_COLUMNS.map((c) => c.label), 'all'];
  const body = phases.map((p) => {
    const cost = cpuPerThousand(p, idle);
    return [p.operation, opsCell(p), ...COST_COLUMNS.map((c) => fmt(cost[c.key])), fmt(cost.all)];
  });
  const idleRow = COST_COLUMNS.map((c) => (idle.seconds > 0 ? ((idle.cpu[c.key] ?? NaN) / idle.seconds) * 1000 : NaN));
  body.push([`idle (per 1,000 s)`, `${idle.seconds.toFixed(0)} s`, ...idleRow.map((v) => fmt(v)), fmt(idleRow.filter(Number.isFinite).reduce((a, b) => a + b, 0))]);
  return renderGrid(header, body);
};

/**
 * What one core of each process carries of each operation alone: 1,000 ÷ CPU-s per 1,000 ops,
 * in ops/s; '-' where the operation cost that process less than `floor` CPU-s per 1,000 (below
 * what the span can tell from idle).
 */
export const renderCapacityTable = (phases: readonly PhaseCost[], idle: SpanCost, floor = 0.05): string => {
  const header = ['operation (ops/s per core)', ...COST_COLUMNS.map((c) => c.label)];
  const body = phases.map((p) => {
    const cost = cpuPerThousand(p, idle);
    return [p.operation, ...COST_COLUMNS.map((c) => {
      const v = cost[c.key]!;
      return !Number.isFinite(v) ? 'n/a' : v < floor ? '-' : fmt(1000 / v);
    })];
  });
  return renderGrid(header, body);
};

/** `operation | ops | <each service> | all`, store commands per operation net of idle ('n/a': no counter); the idle row per second. */
export const renderCommandsTable = (phases: readonly PhaseCost[], idle: SpanCost): string => {
  const header = ['operation (store commands per op)', 'ops', ...SERVICE_COLUMNS.map((c) => c.label), 'all'];
  const cell = (v: number | null | undefined): string => (v === null || v === undefined ? 'n/a' : fmt(v));
  const body = phases.map((p) => {
    const per = commandsPerOp(p, idle);
    return [p.operation, opsCell(p), ...SERVICE_COLUMNS.map((c) => cell(per[c.key])), cell(per.all)];
  });
  const idleRate = SERVICE_COLUMNS.map((c) => {
    const n = idle.commands[c.key];
    return n && idle.seconds > 0 ? n.total / idle.seconds : null;
  });
  const known = idleRate.filter((v): v is number => v !== null);
  body.push(['idle (per second)', `${idle.seconds.toFixed(0)} s`, ...idleRate.map(cell), cell(known.length > 0 ? known.reduce((a, b) => a + b, 0) : null)]);
  return renderGrid(header, body);
};
