import { invalid, M } from '@docshare/contracts';
import { parseDay } from '@docshare/analytics';

/*
 * The query parameters of api-daily, api-top and api-trending, checked strictly: a value is a
 * single string of the expected form (a repeated parameter, which the query parser gives as an
 * array, is as invalid as a bad value), integers are plain decimal digits in their range. An
 * optional parameter absent or empty takes its default (as `page`/`per_page` do); unknown
 * parameters are ignored. Each failure is a DocshareError('invalid') with its message (M), which
 * the app's error handler answers as a JSON 400 in the spec's envelope.
 */

export const METRICS = ['views', 'unique_viewers', 'downloads', 'sales', 'comments'] as const;
export type Metric = typeof METRICS[number];

/** The longest api-daily range, in days (a leap year). */
export const MAX_RANGE_DAYS = 366;
const DAY_MS = 86_400_000;

type Query = Record<string, unknown>;

const absent = (value: unknown): boolean => value === undefined || value === '';

/** An integer from `min` to `max` written as plain digits, else null. */
const integerIn = (value: unknown, min: number, max: number): number | null => {
  if (typeof value !== 'string' || !/^\d{1,15}$/.test(value)) return null;
  const n = Number(value);
  return Number.isSafeInteger(n) && n >= min && n <= max ? n : null;
};

/** An optional integer parameter: `fallback` when absent, else in range or `message`. */
const optionalInteger = <F extends number | undefined>(value: unknown, fallback: F, min: number, max: number, message: string): number | F => {
  if (absent(value)) return fallback;
  const n = integerIn(value, min, max);
  if (n === null) throw invalid(message);
  return n;
};

const limitOf = (query: Query): number => optionalInteger(query.limit, 10, 1, 50, M.invalidLimit);

export interface DailyParams { from: string; to: string; fileId?: number }

/** api-daily: `from` and `to` (calendar dates, from ≤ to, at most 366 days inclusive), optional `file_id`. */
export const dailyParams = (query: Query): DailyParams => {
  const from = parseDay(query.from);
  if (from === null) throw invalid(M.invalidFrom);
  const to = parseDay(query.to);
  if (to === null) throw invalid(M.invalidTo);
  if (from > to) throw invalid(M.fromAfterTo);
  if ((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS + 1 > MAX_RANGE_DAYS) throw invalid(M.rangeTooLong);
  const fileId = optionalInteger(query.file_id, undefined, 1, Number.MAX_SAFE_INTEGER, M.invalidFileId);
  return fileId === undefined ? { from, to } : { from, to, fileId };
};

export interface TopParams { metric: Metric; days: number; limit: number }

/** api-top: `metric` (default views), `days` 1..90 (default 7), `limit` 1..50 (default 10). */
export const topParams = (query: Query): TopParams => {
  let metric: Metric = 'views';
  if (!absent(query.metric)) {
    const found = METRICS.find((m) => m === query.metric);
    if (found === undefined) throw invalid(M.invalidMetric);
    metric = found;
  }
  const days = optionalInteger(query.days, 7, 1, 90, M.invalidDays);
  return { metric, days, limit: limitOf(query) };
};

export interface TrendingParams { hours: number; categoryId?: number; limit: number }

/** api-trending: `hours` 1..168 (default 24), optional `category_id`, `limit` 1..50 (default 10). */
export const trendingParams = (query: Query): TrendingParams => {
  const hours = optionalInteger(query.hours, 24, 1, 168, M.invalidHours);
  const categoryId = optionalInteger(query.category_id, undefined, 1, Number.MAX_SAFE_INTEGER, M.invalidCategoryId);
  const limit = limitOf(query);
  return categoryId === undefined ? { hours, limit } : { hours, categoryId, limit };
};
