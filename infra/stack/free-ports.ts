import { createServer, type AddressInfo, type Server } from 'node:net';

/** `count` ports nobody listens on now, held open together while they are chosen, so they differ. */
export const freePorts = async (count: number): Promise<number[]> => {
  const probes = await Promise.all(Array.from({ length: count }, () => new Promise<Server>((ok, fail) => {
    const probe = createServer();
    probe.once('error', fail);
    probe.listen(0, '127.0.0.1', () => ok(probe));
  })));
  const ports = probes.map((p) => (p.address() as AddressInfo).port);
  await Promise.all(probes.map((p) => new Promise((ok) => p.close(ok))));
  return ports;
};

/** One port nobody listens on now. */
export const freePort = async (): Promise<number> => (await freePorts(1))[0] as number;
