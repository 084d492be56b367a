// `docshare stats --daily`: the range of UTC days it asks for, and the table it prints.
import type { DailyStatsResponse } from '@docshare/client';
import { visible } from './terminal.ts';

/** Days asked for when neither --from nor --to says otherwise: the last 30 UTC days, today included. */
export const DEFAULT_DAYS = 30;

const DAY_MS = 86_400_000;

/** A calendar date `YYYY-MM-DD` (no 2025-02-30), else undefined. */
export function parseDay(text: string): string | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return undefined;
  const time = Date.parse(`${text}T00:00:00Z`);
  return Number.isNaN(time) || new Date(time).toISOString().slice(0, 10) !== text ? undefined : text;
}

const shift = (day: string, days: number): string => new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);

/**
 * The range to ask for: both ends given are kept as they are (the server judges their order and
 * length); a missing `to` is today (UTC); a missing `from` is DEFAULT_DAYS days ending at `to`.
 */
export function dayRange(from: string | undefined, to: string | undefined, now: Date): { from: string; to: string } {
  const last = to ?? now.toISOString().slice(0, 10);
  return { from: from ?? shift(last, -(DEFAULT_DAYS - 1)), to: last };
}

const COLUMNS = ['views', 'unique_viewers', 'downloads', 'unique_downloaders', 'sales', 'comments'] as const;
const HEADINGS = ['date', 'views', 'unique viewers', 'downloads', 'unique downloaders', 'sales', 'comments'];

/**
 * The answer as a table: a heading, a line per day and a `total` line, numbers aligned right.
 * Quiet: the days only, tab-separated, for scripts. The server's values are shown escaped.
 */
export function dailyTable(answer: DailyStatsResponse, quiet: boolean): string[] {
  const rows = [
    ...answer.days.map((d) => [d.date, ...COLUMNS.map((c) => String(d[c]))]),
    ...(quiet ? [] : [['total', ...COLUMNS.map((c) => String(answer.totals[c]))]]),
  ].map((row) => row.map(visible));
  if (quiet) return rows.map((row) => row.join('\t'));
  const all = [HEADINGS, ...rows];
  const widths = HEADINGS.map((_h, i) => Math.max(...all.map((row) => (row[i] ?? '').length)));
  return all.map((row) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  '));
}
