/**
 * UTC days and hours as the text keys the analytics read models are bucketed by
 * (`YYYY-MM-DD`, `YYYY-MM-DDTHH`). Statistics are in UTC whatever the caller's timezone: a day
 * is the same bucket for every process and every user, and the text keys sort as time does, so
 * a range of days is a list of ids to read by `in` rather than a range scan.
 */

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;
/** An ISO time in UTC as `toISOString` writes it (the events' times): the key is a prefix of it. */
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z$/;

const iso = (time: string | Date): string => {
  if (typeof time === 'string' && ISO_UTC.test(time)) return time;
  const date = typeof time === 'string' ? new Date(time) : time;
  if (Number.isNaN(date.getTime())) throw new RangeError(`not a time: ${String(time)}`);
  return date.toISOString();
};

/** The UTC day of a time, `YYYY-MM-DD`. Throws a RangeError on a string that is not a time. */
export const utcDay = (time: string | Date): string => iso(time).slice(0, 10);

/** The UTC hour of a time, `YYYY-MM-DDTHH`. Throws a RangeError on a string that is not a time. */
export const utcHour = (time: string | Date): string => iso(time).slice(0, 13);

const daysInMonth = (year: number, month: number): number =>
  month === 2 ? (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;

/**
 * A strict calendar date `YYYY-MM-DD` (a query parameter, say), or null: anything else, a
 * day that does not exist (2026-02-30), a missing zero (2026-1-01) or a value that is not a string.
 */
export const parseDay = (text: unknown): string | null => {
  if (typeof text !== 'string') return null;
  const match = DAY.exec(text);
  if (!match) return null;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  return text;
};

const startOf = (day: string): number => {
  if (parseDay(day) === null) throw new RangeError(`not a day: ${day}`);
  return Date.parse(`${day}T00:00:00.000Z`);
};

/** Every day from `from` to `to`, both included, ascending; none when `from` is after `to`. */
export const daysFrom = (from: string, to: string): string[] => {
  const days: string[] = [];
  for (let time = startOf(from), end = startOf(to); time <= end; time += DAY_MS) days.push(new Date(time).toISOString().slice(0, 10));
  return days;
};

/** The `n` UTC days ending with today (`now`'s day), ascending. */
export const lastDays = (now: Date, n: number): string[] => {
  const today = Date.parse(`${utcDay(now)}T00:00:00.000Z`);
  return Array.from({ length: Math.max(0, n) }, (_, i) => new Date(today - (n - 1 - i) * DAY_MS).toISOString().slice(0, 10));
};

/** The `n` UTC hours ending with the current one (`now`'s hour), ascending. */
export const lastHours = (now: Date, n: number): string[] => {
  const hour = Math.floor(now.getTime() / HOUR_MS) * HOUR_MS;
  if (Number.isNaN(hour)) throw new RangeError('not a time');
  return Array.from({ length: Math.max(0, n) }, (_, i) => new Date(hour - (n - 1 - i) * HOUR_MS).toISOString().slice(0, 13));
};
