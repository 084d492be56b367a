import { randomInt } from 'node:crypto';
import type { Server } from './server.ts';

/**
 * The durability tests' trigger: SIGKILLs `server` once a random number of requests, between a
 * quarter and three quarters of `planned`, have been acknowledged (`ack` after each 200), so the
 * kill lands in the middle of the load, wherever that is on a slow machine. `finish` kills it
 * anyway if the load ended first, and waits until the process is gone.
 */
export const makeKillSwitch = (server: Server, planned: number) => {
  const killAt = randomInt(Math.floor(planned * 0.25), Math.floor(planned * 0.75));
  let acked = 0;
  let killing: Promise<void> | null = null;
  const kill = (): Promise<void> => (killing ??= server.kill());
  return {
    killAt,
    get acked(): number { return acked; },
    /** Whether the kill was sent: a failure after it is the kill's doing, one before it is a bug. */
    get killed(): boolean { return killing !== null; },
    ack: (): void => {
      acked += 1;
      if (acked >= killAt) void kill();
    },
    finish: (): Promise<void> => kill(),
  };
};
