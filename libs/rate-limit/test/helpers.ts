import { createServer } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { RateLimiterRes } from 'rate-limiter-flexible';
import type { RateLimitLogger } from '../src/index.ts';

export interface LogLine { level: 'info' | 'warn'; obj: object; msg: string }

/** A logger that keeps what it is given. */
export const recordingLogger = (): RateLimitLogger & { lines: LogLine[] } => {
  const lines: LogLine[] = [];
  return {
    lines,
    info: (obj, msg) => void lines.push({ level: 'info', obj, msg }),
    warn: (obj, msg) => void lines.push({ level: 'warn', obj, msg }),
  };
};

/** Retries `attempt` until it stops throwing (the test's own timeout bounds the wait). */
export const eventually = async <T>(attempt: () => T | Promise<T>): Promise<T> => {
  for (;;) {
    try {
      return await attempt();
    } catch {
      await delay(20);
    }
  }
};

/** Resolves with the limiter's answer: 'allowed' or 'refused' (a RateLimiterRes rejection); anything else fails. */
export const decide = async (consume: Promise<RateLimiterRes>): Promise<'allowed' | 'refused'> => {
  try {
    const res = await consume;
    if (!(res instanceof RateLimiterRes)) throw new Error(`consume resolved with ${String(res)}`);
    return 'allowed';
  } catch (rejection) {
    if (rejection instanceof RateLimiterRes) return 'refused';
    throw rejection;
  }
};

/** A TCP port nothing listens on (free at the time of asking). */
export const freePort = async (): Promise<number> => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
};

/** Collects unhandled rejections and uncaught exceptions while the tests run. */
export const watchUnhandled = (): { errors: unknown[]; stop(): void } => {
  const errors: unknown[] = [];
  const onError = (err: unknown): void => void errors.push(err);
  process.on('unhandledRejection', onError);
  process.on('uncaughtException', onError);
  return {
    errors,
    stop: () => {
      process.off('unhandledRejection', onError);
      process.off('uncaughtException', onError);
    },
  };
};
