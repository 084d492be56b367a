// The properties every answer of the fuzz suite must have, and the bookkeeping of a run.
import { header, reproduction, type WireResponse, type WireResult } from './wire.ts';
import type { Case } from './gen.ts';

export interface Violation {
  kind: string;
  gen: string;
  index: number;
  label: string;
  detail: string;
  repro: string;
}

const STACK = /\bat [^\s]+ \(?[^)\s]*:\d+:\d+\)?/;
const INTERNALS = /node_modules|\.ts:\d+|"stack"|ECONNREFUSED|ENOENT|TypeError|ReferenceError|SyntaxError|RangeError/;

/**
 * Documented answers that are not the JSON envelope (decisions §12, §13, docs/api-decisions.md
 * "Links"). Not /metrics: it is never served on the public port (docs/observability.md), so
 * Prometheus text there is a violation.
 */
const nonJsonAllowed = (method: string, target: string, res: WireResponse): boolean => {
  const ct = (header(res, 'content-type') ?? '').toLowerCase();
  // Routed as the server routes it: the path without query or fragment (a `#` in a request target
  // ends the path for express too), a trailing slash allowed (express's non-strict routing).
  const path = target.replace(/[?#].*$/s, '');
  if (/^\/docs\/[^/]+\/?$/.test(path) && ct.startsWith('text/html')) return true;
  if (/^\/files\/[^/]+\/content\/?$/.test(path) && (res.status === 200 || res.status === 206) && method !== 'POST') return true;
  // The OpenAPI document is JSON but, being a document, not the envelope.
  if (/^\/api\/V1\/openapi\.json\/?$/.test(path) && method === 'GET' && res.status === 200 && ct.startsWith('application/json')) return true;
  // The documentation a person reads (docs/api-reference.md): the index and the reference page
  // in HTML, and the page's static files.
  if (/^\/(\/|api\/V1\/docs\/?)?$/.test(path) && method === 'GET' && res.status === 200 && ct.startsWith('text/html')) return true;
  if (/^\/api\/V1\/docs\/assets\/[^/]+\/[^/]+\/?$/.test(path) && method === 'GET' && res.status === 200) return true;
  return false;
};

const describe = (res: WireResponse): string =>
  `HTTP ${res.status} ${header(res, 'content-type') ?? '(no content-type)'} ${JSON.stringify(res.body.subarray(0, 300).toString('utf8'))}`;

/** The problems with one response (empty when it is fine). */
export const checkResponse = (method: string, path: string, res: WireResponse): Array<[string, string]> => {
  const out: Array<[string, string]> = [];
  if (res.status >= 500) out.push(['5xx', describe(res)]);
  if (res.status < 100 || res.status > 599) out.push(['bad-status', describe(res)]);
  if (header(res, 'x-request-id') === undefined) out.push(['no-request-id', describe(res)]);
  const text = res.body.toString('utf8');
  if (STACK.test(text) || INTERNALS.test(text)) out.push(['leak', describe(res)]);
  const m = method.toUpperCase();
  if (m === 'HEAD' || res.status === 204 || res.status === 304) return out;
  if (nonJsonAllowed(m, path, res)) return out;
  const ct = header(res, 'content-type') ?? '';
  if (!/^application\/json\b/i.test(ct)) {
    out.push(['not-json', describe(res)]);
    return out;
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    out.push(['not-json', describe(res)]);
    return out;
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    out.push(['not-envelope', describe(res)]);
    return out;
  }
  const env = body as { status?: unknown; message?: unknown };
  if (env.status !== 'success' && env.status !== 'error') out.push(['not-envelope', describe(res)]);
  else if (env.status === 'error' && (typeof env.message !== 'string' || env.message === '')) out.push(['not-envelope', `error without a message: ${describe(res)}`]);
  else if ((env.status === 'error') !== (res.status >= 400)) out.push(['status-mismatch', describe(res)]);
  return out;
};

export interface Tally {
  /** The slowest exchanges (informational: what the run spent its time on). */
  slowest: Array<{ ms: number; gen: string; index: number; label: string }>;
  connections: number;
  requests: number;
  byClass: Record<string, number>;
  byGen: Record<string, Record<string, number>>;
}

export const newTally = (): Tally => ({ slowest: [], connections: 0, requests: 0, byClass: {}, byGen: {} });

const bump = (t: Tally, gen: string, cls: string, n = 1): void => {
  t.byClass[cls] = (t.byClass[cls] ?? 0) + n;
  const g = (t.byGen[gen] ??= {});
  g[cls] = (g[cls] ?? 0) + n;
};

/** Checks one exchange: every owed answer arrived, in time, and is well-formed. */
export const checkExchange = (c: Case, index: number, result: WireResult, port: number, tally: Tally, ms = 0): Violation[] => {
  tally.slowest.push({ ms, gen: c.gen, index, label: c.label.slice(0, 80) });
  tally.slowest.sort((x, y) => y.ms - x.ms);
  if (tally.slowest.length > 8) tally.slowest.length = 8;
  const bytes = Buffer.concat(c.wire.chunks);
  const v = (kind: string, detail: string): Violation => ({ kind, gen: c.gen, index, label: c.label, detail, repro: reproduction(bytes, port) });
  const out: Violation[] = [];
  tally.connections += 1;
  tally.requests += c.wire.methods.length;
  for (const res of result.responses) bump(tally, c.gen, `${Math.floor(res.status / 100)}xx`);
  result.responses.forEach((res, i) => {
    // The path of the i-th pipelined request is only known for the first; the others are API routes.
    const path = i === 0 ? c.path : '';
    for (const [kind, detail] of checkResponse(c.wire.methods[i] ?? 'GET', path, res)) out.push(v(kind, detail));
  });
  if (result.garbage !== undefined) out.push(v('bad-response', result.garbage));
  const owed = c.wire.methods.length;
  const got = result.responses.length;
  if (c.wire.mode === 'abort') {
    if (got === 0) bump(tally, c.gen, 'aborted by client');
    return out;
  }
  if (got < owed) {
    const last = result.responses[got - 1];
    const closedByAnswer = last !== undefined && /close/i.test(header(last, 'connection') ?? '');
    if (result.end === 'timeout') {
      bump(tally, c.gen, 'hang', owed - got);
      out.push(v('hang', `no ${got === 0 ? '' : 'further '}answer within the time bound (${got} of ${owed} answers)`));
    } else if (!result.sentAll && got === 0) {
      // The server answered (or refused) before reading the whole request and closed: a request
      // that was not fully sent is owed nothing (a 413 that stops reading is exactly this).
      bump(tally, c.gen, 'closed before fully sent');
    } else if (!closedByAnswer) {
      bump(tally, c.gen, 'dropped', owed - got);
      out.push(v('dropped', `connection closed after ${got} of ${owed} answers${result.error ? ` (${result.error})` : ''}${result.sentAll ? '' : '; the request was not fully written'}`));
    } else {
      bump(tally, c.gen, 'closed after an answer', owed - got);
    }
  }
  return out;
};

/** Groups violations by kind, generator and a shape of the label, keeping the first of each. */
export const summarize = (violations: Violation[], limit = 40): string => {
  // One group per kind of problem and shape of answer (an empty 417 is one finding, whatever the route).
  const groups = new Map<string, { first: Violation; count: number; gens: Set<string> }>();
  for (const x of violations) {
    const status = /^HTTP (\d{3})/.exec(x.detail)?.[1] ?? '';
    const detailShape = `${status} ${x.detail.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, 'UUID').replace(/\d+/g, 'N').slice(0, 60)}`;
    const key = `${x.kind} | ${x.kind === 'hang' || x.kind === 'dropped' || x.kind === 'crash-suspect' ? x.label.replace(/\d+/g, 'N').slice(0, 40) : ''} | ${detailShape}`;
    const g = groups.get(key);
    if (g === undefined) groups.set(key, { first: x, count: 1, gens: new Set([x.gen]) });
    else {
      g.count += 1;
      g.gens.add(x.gen);
    }
  }
  const lines: string[] = [];
  let shown = 0;
  for (const { first, count, gens } of [...groups.values()].sort((a, b) => b.count - a.count)) {
    if (shown >= limit) {
      lines.push(`… and ${groups.size - limit} more kinds`);
      break;
    }
    shown += 1;
    lines.push(`- [${first.kind}] x${count} (generators: ${[...gens].join(', ')}) e.g. #${first.index} ${first.label}\n    ${first.detail}\n    ${first.repro}`);
  }
  return lines.join('\n');
};
