/**
 * The store commands each service sent: `docshare_store_commands_total{command,collection}`
 * (libs/projection/src/store-commands.ts: the MongoDB driver's command monitoring), scraped from
 * every service's /metrics (the URLs infra/stack/instance.ts writes to DATA_DIR/run/metrics.json).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from './load.ts';

export const STORE_COMMANDS = 'docshare_store_commands_total';

/** One service's counter: the sum over its series, and per command name. */
export interface StoreCommands { total: number; byCommand: Record<string, number> }

/** A service's reading: null when its /metrics has no such counter (or did not answer). */
export type StoreCommandsSnapshot = Record<string, StoreCommands | null>;

const SAMPLE = /^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)/;

/** The counter's series in a Prometheus text exposition; null when it has none. */
export const parseStoreCommands = (text: string, metric = STORE_COMMANDS): StoreCommands | null => {
  let found = false;
  const out: StoreCommands = { total: 0, byCommand: {} };
  for (const line of text.split('\n')) {
    const m = SAMPLE.exec(line);
    if (!m || m[1] !== metric) continue;
    const value = Number(m[3]);
    if (!Number.isFinite(value)) continue;
    found = true;
    out.total += value;
    const command = /(?:^|[{,])command="([^"]*)"/.exec(m[2] ?? '')?.[1] ?? '';
    out.byCommand[command] = (out.byCommand[command] ?? 0) + value;
  }
  return found ? out : null;
};

/** Every service's store commands so far (services without a metrics URL or the counter: null). */
export const storeCommandsSnapshot = async (dataDir: string, services: readonly string[]): Promise<StoreCommandsSnapshot> => {
  let urls: Record<string, string> = {};
  try {
    urls = JSON.parse(await readFile(join(dataDir, 'run', 'metrics.json'), 'utf8')) as Record<string, string>;
  } catch {
    // no metrics listeners written: every service n/a
  }
  const out: StoreCommandsSnapshot = {};
  await Promise.all(services.map(async (name) => {
    const url = urls[name];
    if (!url) {
      out[name] = null;
      return;
    }
    try {
      const answer = await request('GET', `${url}/metrics`, {}, undefined, 10_000);
      out[name] = answer.status === 200 ? parseStoreCommands(answer.text) : null;
    } catch {
      out[name] = null;
    }
  }));
  return out;
};

/** Commands each service sent between two snapshots; null where either has no counter or it went back (a restart). */
export const storeCommandsUsed = (before: StoreCommandsSnapshot, after: StoreCommandsSnapshot): Record<string, StoreCommands | null> =>
  Object.fromEntries(Object.entries(after).map(([name, a]) => {
    const b = before[name];
    if (!a || !b || a.total < b.total) return [name, null];
    const byCommand: Record<string, number> = {};
    for (const [command, n] of Object.entries(a.byCommand)) {
      const d = n - (b.byCommand[command] ?? 0);
      if (d !== 0) byCommand[command] = d;
    }
    return [name, { total: a.total - b.total, byCommand }];
  }));
