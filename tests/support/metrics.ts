// Scraping a server's metrics in the black-box tests: never on its public port, always on the
// internal metrics listener (METRICS_PORT; docs/observability.md).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ServiceName } from '@docshare/contracts/services';
import { TARGET, type Server } from './server.ts';

/** A service of the registry (libs/contracts/src/services.ts). */
export type Service = ServiceName;

/**
 * Where `service`'s /metrics is: embedded, the one process's metrics listener; distributed, the
 * gateway's is the server's, the others' are in DATA_DIR/run/metrics.json (infra/stack/instance.ts).
 * Undefined against an external server.
 */
export const metricsUrlOf = async (server: Server, service: Service): Promise<string | undefined> => {
  if (server.external) return undefined;
  if (TARGET === 'embedded' || service === 'gateway') return server.metricsUrl;
  const urls = JSON.parse(await readFile(join(server.dataDir, 'run', 'metrics.json'), 'utf8')) as Record<string, string>;
  return urls[service];
};

/** The Prometheus text of `service`'s /metrics. */
export const scrape = async (server: Server, service: Service): Promise<string> => {
  const base = await metricsUrlOf(server, service);
  if (base === undefined) throw new Error(`no metrics listener for ${service}`);
  const res = await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(10_000) });
  if (res.status !== 200) throw new Error(`${service} /metrics answered ${res.status}`);
  return res.text();
};

export interface Sample { labels: Record<string, string>; value: number }

/** Every sample of `name` in a Prometheus text exposition. */
export const samplesOf = (text: string, name: string): Sample[] => {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match || match[1] !== name) continue;
    const labels = Object.fromEntries([...(match[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1] as string, l[2] as string]));
    out.push({ labels, value: Number(match[3]) });
  }
  return out;
};

/** The value of the one sample of `name` whose labels include `labels` (undefined when none). */
export const sampleOf = (text: string, name: string, labels: Record<string, string> = {}): number | undefined =>
  samplesOf(text, name).find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
