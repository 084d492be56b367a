// Helpers for the creator analytics tests (issue 21): views made the way the page's visitors make
// them, the server's UTC day, the three analytics queries, and a bounded-concurrency runner for
// the view loads (the distributed target answers more slowly, so loads stay at a few dozen in flight).
import type { Api, Res } from './client.ts';
import { TARGET } from './server.ts';

/** Requests in flight for a load: enough to overlap views of one file, few enough for a shared machine. */
export const LOAD_CONCURRENCY = TARGET === 'distributed' ? 16 : 32;

/** The counters of one day (and of `totals`) in api-daily. */
export const DAY_COUNTERS = ['views', 'unique_viewers', 'downloads', 'unique_downloaders', 'sales', 'comments'] as const;
export type DayCounter = typeof DAY_COUNTERS[number];
export type Counts = Record<DayCounter, number>;
export const ZERO_COUNTS: Counts = { views: 0, unique_viewers: 0, downloads: 0, unique_downloaders: 0, sales: 0, comments: 0 };

/**
 * Runs `fn` over `items` with at most `concurrency` calls in flight; resolves when all are done.
 * The first rejection is rethrown after the calls already started have settled.
 */
export const inParallel = async <T>(items: readonly T[], concurrency: number, fn: (item: T, index: number) => Promise<void>): Promise<void> => {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < items.length) {
      const index = next;
      next += 1;
      try {
        await fn(items[index] as T, index);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, worker));
  if (failure !== undefined) throw failure.error;
};

/** The numbers 0..n-1 (the items of a load of n requests). */
export const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** The server's clock (its `Date` header; whole seconds): days are the server's UTC days, not ours. */
export const serverNow = async (c: Pick<Api, 'raw'>): Promise<Date> => {
  const res = await c.raw('GET', '/healthz');
  const date = res.headers.get('date');
  if (date === null) throw new Error('the server sent no Date header');
  return new Date(date);
};

/** 'YYYY-MM-DD' of a time, in UTC. */
export const dayOf = (time: Date): string => time.toISOString().slice(0, 10);

/** The UTC day `n` days after `day` (negative: before). */
export const addDays = (day: string, n: number): string => dayOf(new Date(Date.parse(`${day}T00:00:00Z`) + n * 86_400_000));

/** Who views: a signed-in user (token), or an anonymous visitor told apart by its User-Agent. */
export interface Viewer { token?: string; userAgent?: string }

/** GET /docs/<id> as `viewer` would (the page's view counts when it answers 200). */
export const viewAs = (c: Pick<Api, 'raw'>, fileId: string, viewer: Viewer = {}): Promise<Res> => {
  const headers: Record<string, string> = {};
  if (viewer.token !== undefined) headers['X-Authorization'] = `Bearer ${viewer.token}`;
  if (viewer.userAgent !== undefined) headers['User-Agent'] = viewer.userAgent;
  return c.raw('GET', `/docs/${fileId}`, { headers });
};

type Query = Record<string, string | number | readonly (string | number)[] | undefined>;

/** A query string; an array value repeats the parameter, `undefined` leaves it out. */
export const queryOf = (query: Query): string => {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) params.append(name, String(one));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
};

export const daily = (c: Pick<Api, 'request'>, token: string | undefined, query: Query): Promise<Res> =>
  c.request('GET', `/api/V1/stats/api-daily${queryOf(query)}`, token);
export const top = (c: Pick<Api, 'request'>, token: string | undefined, query: Query = {}): Promise<Res> =>
  c.request('GET', `/api/V1/stats/api-top${queryOf(query)}`, token);
export const trending = (c: Pick<Api, 'request'>, token: string | undefined, query: Query = {}): Promise<Res> =>
  c.request('GET', `/api/V1/stats/api-trending${queryOf(query)}`, token);
