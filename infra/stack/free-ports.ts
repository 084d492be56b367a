import { createServer, type Server } from 'node:net';
import { randomInt } from 'node:crypto';

/**
 * Ports are taken below the kernel's ephemeral range (32768–60999 on Linux): a port the OS picked
 * (`listen(0)`) is one it also hands out as the source port of outgoing connections, so a service
 * that binds it seconds later can find it taken by a connection of a running instance (CI saw a
 * gateway fail with EADDRINUSE ten times in a row). Here nothing but a listener takes a port.
 */
const LOWEST = 20_000;
const HIGHEST = 32_767;

const tryListen = (port: number): Promise<Server | null> => new Promise((resolve) => {
  const probe = createServer();
  probe.once('error', () => resolve(null));
  // Every address: a service that binds any one of them then finds the port free.
  probe.listen({ port, host: '0.0.0.0', exclusive: true }, () => resolve(probe));
});

/** `count` ports nobody listens on now, held open together while they are chosen, so they differ. */
export const freePorts = async (count: number): Promise<number[]> => {
  const held: Server[] = [];
  const ports: number[] = [];
  try {
    for (let tries = 0; ports.length < count; tries++) {
      if (tries > 10_000) throw new Error(`no ${count} free ports between ${LOWEST} and ${HIGHEST}`);
      const port = randomInt(LOWEST, HIGHEST + 1);
      if (ports.includes(port)) continue;
      const probe = await tryListen(port);
      if (probe === null) continue;
      held.push(probe);
      ports.push(port);
    }
    return ports;
  } finally {
    await Promise.all(held.map((probe) => new Promise((ok) => probe.close(ok))));
  }
};

/** One port nobody listens on now. */
export const freePort = async (): Promise<number> => (await freePorts(1))[0] as number;
