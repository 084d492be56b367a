/**
 * Who viewed, privately. A view or download carries a viewer key so that unique viewers can be
 * counted: `u:<id>` for a signed-in user, else `a:` + the first 16 bytes (base64url, 22
 * characters) of HMAC-SHA256 of the client address and User-Agent under a salt of the UTC day.
 * The salt is random, the same for every process of a deployment (so a visitor is one viewer
 * whichever replica served them), rotates every UTC day and is deleted once the day is older
 * than yesterday: after that nobody, the operator included, can link an anonymous key to an
 * address, nor two days' keys to each other. The salt is a secret: it is never logged nor put
 * in an error message.
 *
 * `ViewerSalts` is the port (the store of the days' salts); here its memory adapter (tests, a
 * single process) and its file adapter (embedded mode: one JSON file in the data directory); the
 * MongoDB one is mongo-viewer-salts.ts.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { userViewer, type ViewerKey } from '@docshare/contracts';
import { fsyncDir, replaceFile } from '@docshare/durable-log';
import { lastDays, parseDay, utcDay } from './days.ts';

/** How long a salt is, in bytes. */
export const SALT_BYTES = 32;

/**
 * The days' salts. Every process sharing the store gets the same random 32-byte salt for a day;
 * days before yesterday (UTC, by the store's clock) are deleted whenever a salt is handed out,
 * and never handed out again: `saltOf` of such a day (or of text that is not a day) rejects.
 */
export interface ViewerSalts {
  saltOf(day: string): Promise<Buffer>;
  close(): Promise<void>;
}

export interface ViewerSaltsOptions {
  /** The store's clock (default: the system's). */
  now?: () => Date;
}

/** The oldest day whose salt is kept: yesterday, by `now`. */
export const oldestKeptDay = (now: Date): string => lastDays(now, 2)[0]!;

/** Rejects a day whose salt may not be handed out (the message names the day, never a salt). */
export const checkSaltDay = (day: string, oldest: string): void => {
  if (parseDay(day) === null) throw new Error(`viewer salt: ${JSON.stringify(String(day)).slice(0, 40)} is not a day`);
  if (day < oldest) throw new Error(`viewer salt: the salt of ${day} is forgotten (salts before ${oldest} are not kept)`);
};

const newSalt = (): Buffer => randomBytes(SALT_BYTES);

/** Salts in this process's memory: tests and single-process use (lost at exit, which only rotates the keys early). */
export const makeMemoryViewerSalts = (options: ViewerSaltsOptions = {}): ViewerSalts => {
  const now = options.now ?? (() => new Date());
  const salts = new Map<string, Buffer>();
  return {
    saltOf: async (day) => {
      const oldest = oldestKeptDay(now());
      checkSaltDay(day, oldest);
      for (const kept of salts.keys()) if (kept < oldest) salts.delete(kept);
      let salt = salts.get(day);
      if (!salt) salts.set(day, (salt = newSalt()));
      return Buffer.from(salt);
    },
    close: async () => {},
  };
};

const SALT_FILE = 'viewer-salts.json';
/** The file's content: `{"salts": {"YYYY-MM-DD": "<base64 of 32 bytes>", ...}}`. */
interface SaltFile { salts: Record<string, string> }

const readSaltFile = async (file: string): Promise<Map<string, Buffer>> => {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if (typeof error === 'object' && error !== null && 'code' in error && error.code === 'ENOENT') return new Map();
    throw error;
  }
  // The messages name the file only: JSON.parse's would quote the content, salts included.
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${file} is not JSON`);
  }
  const salts = typeof parsed === 'object' && parsed !== null && 'salts' in parsed ? parsed.salts : undefined;
  if (typeof salts !== 'object' || salts === null) throw new Error(`${file} is not a viewer salt file`);
  const days = new Map<string, Buffer>();
  for (const [day, encoded] of Object.entries(salts)) {
    const salt = typeof encoded === 'string' ? Buffer.from(encoded, 'base64') : Buffer.alloc(0);
    if (parseDay(day) === null || salt.length !== SALT_BYTES) throw new Error(`${file} holds an entry that is not a day's salt`);
    days.set(day, salt);
  }
  return days;
};

/**
 * Salts in `<dir>/viewer-salts.json` (embedded mode: one process owns the data directory), kept
 * in memory and written whole on every change (a new day, days forgotten), replaced atomically
 * and durably (libs/durable-log replaceFile) before the salt is handed out, so a restart, even
 * after kill -9, keeps the day's keys and never brings a forgotten salt back.
 */
export const openFileViewerSalts = async (dir: string, options: ViewerSaltsOptions = {}): Promise<ViewerSalts> => {
  const now = options.now ?? (() => new Date());
  await mkdir(dir, { recursive: true });
  await fsyncDir(join(dir, '..'));
  const file = join(dir, SALT_FILE);
  const salts = await readSaltFile(file);
  let closed = false;
  /** Changes one at a time: two first calls of a day must not each draw a salt. */
  let queue: Promise<unknown> = Promise.resolve();
  const serially = <T>(step: () => Promise<T>): Promise<T> => {
    const run = queue.then(step, step);
    queue = run.catch(() => undefined);
    return run;
  };
  const write = async (days: Map<string, Buffer>): Promise<void> => {
    const content: SaltFile = { salts: Object.fromEntries([...days].map(([day, salt]) => [day, salt.toString('base64')])) };
    await replaceFile(file, Buffer.from(JSON.stringify(content)));
  };
  return {
    saltOf: (day) => serially(async () => {
      if (closed) throw new Error('viewer salts closed');
      const oldest = oldestKeptDay(now());
      checkSaltDay(day, oldest);
      const next = new Map([...salts].filter(([kept]) => kept >= oldest));
      if (!next.has(day)) next.set(day, newSalt());
      if (next.size !== salts.size || [...next.keys()].some((kept) => !salts.has(kept))) {
        await write(next);
        salts.clear();
        for (const [kept, salt] of next) salts.set(kept, salt);
      }
      return Buffer.from(salts.get(day)!);
    }),
    close: () => serially(async () => {
      closed = true;
    }),
  };
};

/** A request as the viewer key sees it: the signed-in user (or null), the client address and User-Agent. */
export interface ViewerRequest { userId: number | null; address: string; userAgent: string }

export interface ViewerKeys {
  /** `u:<id>` for a signed-in user, else `a:` + HMAC of address and User-Agent under today's salt (cached in memory for the day). */
  keyOf(request: ViewerRequest): Promise<ViewerKey>;
}

/**
 * The viewer keys of a process. Today's salt is asked of the store once and kept in memory
 * until the UTC day changes (only the current day is kept; a failed ask is not kept, the next
 * request asks again).
 */
export const makeViewerKeys = ({ salts, now = () => new Date() }: { salts: ViewerSalts; now?: () => Date }): ViewerKeys => {
  let today: { day: string; salt: Promise<Buffer> } | null = null;
  const saltOf = (day: string): Promise<Buffer> => {
    if (today?.day === day) return today.salt;
    const salt = salts.saltOf(day);
    const entry = { day, salt };
    today = entry;
    salt.catch(() => {
      if (today === entry) today = null;
    });
    return salt;
  };
  return {
    keyOf: async ({ userId, address, userAgent }) => {
      if (userId !== null) return userViewer(userId);
      const salt = await saltOf(utcDay(now()));
      return `a:${createHmac('sha256', salt).update(`${address}\n${userAgent}`).digest().subarray(0, 16).toString('base64url')}`;
    },
  };
};
