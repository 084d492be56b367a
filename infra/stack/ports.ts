/**
 * The ports `npm run stack` uses, checked before anything starts: two uses of one port, or a
 * port another process holds, would otherwise surface only when the service that comes last
 * (the gateway) fails to listen, after every server and service before it started.
 */
import { createServer } from 'node:net';
import { GATEWAY, SERVICES } from './services.ts';

export interface PortUse {
  /** The variable that sets it, as the user would write it (`STACK_SERVICE_PORT+1` for the second internal one). */
  variable: string;
  port: number;
  /** Who listens there. */
  use: string;
  /** Checked free by this process (the app's ports); the servers' ports are checked by infra/local/start.sh. */
  app: boolean;
}

/** The servers' port variables and their defaults: the same as infra/local/lib/common.sh. */
export const SERVER_PORTS: readonly { variable: string; fallback: number; use: string }[] = [
  { variable: 'DOCSHARE_KAFKA_PORT', fallback: 19092, use: 'Kafka' },
  { variable: 'DOCSHARE_KAFKA_CONTROLLER_PORT', fallback: 19093, use: 'Kafka controller' },
  { variable: 'DOCSHARE_ES_PORT', fallback: 19200, use: 'Elasticsearch' },
  { variable: 'DOCSHARE_ES_TRANSPORT_PORT', fallback: 19300, use: 'Elasticsearch transport' },
  { variable: 'DOCSHARE_MINIO_PORT', fallback: 19000, use: 'MinIO' },
  { variable: 'DOCSHARE_MINIO_CONSOLE_PORT', fallback: 19001, use: 'MinIO console' },
  { variable: 'DOCSHARE_FERRETDB_PORT', fallback: 27018, use: 'FerretDB' },
  { variable: 'DOCSHARE_REDIS_PORT', fallback: 16379, use: 'Redis' },
];

const portOf = (env: NodeJS.ProcessEnv, variable: string, fallback: number): number => {
  const raw = env[variable];
  if (raw === undefined || raw.trim() === '') return fallback;
  const port = Number(raw);
  if (!Number.isSafeInteger(port) || port < 1 || port > 65_535) throw new Error(`${variable} must be a port number (1-65535), got "${raw}"`);
  return port;
};

/** Every port the stack will use, from the environment; throws on a value that is not a port. */
export const stackPorts = (env: NodeJS.ProcessEnv): PortUse[] => {
  const first = portOf(env, 'STACK_SERVICE_PORT', 18081);
  if (first + SERVICES.length - 1 > 65_535) throw new Error(`STACK_SERVICE_PORT=${first} leaves no room for ${SERVICES.length} ports`);
  return [
    { variable: 'PORT', port: portOf(env, 'PORT', 8080), use: GATEWAY.name, app: true },
    ...SERVICES.map((spec, i) => ({
      variable: i === 0 ? 'STACK_SERVICE_PORT' : `STACK_SERVICE_PORT+${i}`, port: first + i, use: spec.name, app: true,
    })),
    ...SERVER_PORTS.map(({ variable, fallback, use }) => ({ variable, port: portOf(env, variable, fallback), use, app: false })),
    // Only when set: the gateway's metrics listener.
    ...(env.METRICS_PORT?.trim() ? [{ variable: 'METRICS_PORT', port: portOf(env, 'METRICS_PORT', 0), use: `${GATEWAY.name} metrics`, app: true }] : []),
  ];
};

const describe = (u: PortUse): string => `${u.variable}=${u.port} (${u.use})`;

/** One message per port used twice, naming both variables. */
export const portClashes = (uses: readonly PortUse[]): string[] => {
  const seen = new Map<number, PortUse>();
  const clashes: string[] = [];
  for (const use of uses) {
    const earlier = seen.get(use.port);
    if (earlier) clashes.push(`${describe(use)} collides with ${describe(earlier)}; give one of them another port`);
    else seen.set(use.port, use);
  }
  return clashes;
};

/** Whether nothing listens on 127.0.0.1:`port` (a listener on 0.0.0.0 counts: binding fails). */
export const portFree = (port: number, host = '127.0.0.1'): Promise<boolean> => new Promise((resolve) => {
  const probe = createServer();
  probe.once('error', () => resolve(false));
  probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(true)));
});

/** One message per app port something else already holds. */
export const portsTaken = async (uses: readonly PortUse[]): Promise<string[]> => {
  const taken: string[] = [];
  for (const use of uses.filter((u) => u.app)) {
    if (!(await portFree(use.port))) taken.push(`${describe(use)}: 127.0.0.1:${use.port} is already in use by another process`);
  }
  return taken;
};

/** All problems with the stack's ports: bad values, clashes, app ports taken. Empty when fine. */
export const checkStackPorts = async (env: NodeJS.ProcessEnv): Promise<string[]> => {
  let uses: PortUse[];
  try {
    uses = stackPorts(env);
  } catch (error) {
    return [(error as Error).message];
  }
  const clashes = portClashes(uses);
  return clashes.length > 0 ? clashes : portsTaken(uses);
};

export { freePort, freePorts } from './free-ports.ts';
