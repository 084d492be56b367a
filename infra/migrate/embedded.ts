import { join } from 'node:path';
import { stat } from 'node:fs/promises';
import { loadOrCreateSecret } from '@docshare/auth';
import { openFileClaimStore } from '@docshare/claim-store';
import { lockForProcess } from '@docshare/durable-log';
import { openFileEventLog } from '@docshare/event-store';
import { openFileIdempotencyStore } from '@docshare/idempotency-store';
import { makePersonalData, openFileKeyStore, parseKek } from '@docshare/personal-data';
import { dirname } from 'node:path';
import { dropExpiredAnswers } from './expired-answers.ts';
import { rekeyClaimRecords } from './rekey-claims.ts';
import { rewriteLog, type RewriteLogResult } from './rewrite-log.ts';
import { sealEventRecords } from './seal-events.ts';
import type { Sealer } from './sealer.ts';

/*
 * `npm run migrate -- encrypt-personal-data` on an embedded DATA_DIR (design §9): with the
 * service stopped (the data dir's lock, as `npm start` takes it), events/events.log is rewritten
 * with every event sealed (rewrite-log.ts: same records, ids, positions, id reservations), then
 * claims/claims.log with the account claims re-keyed by the e-mail blind index, and the expired
 * stored answers dropped from idempotency/idempotency.log (expired-answers.ts). The read models
 * are in memory in embedded mode: the next start rebuilds them from the sealed log.
 * The events go first: a crash between the two leaves plain claims, which the next run re-keys
 * (and which login still finds meanwhile: a legacy claim is looked up by its plain e-mail).
 */

/** Where `npm start` keeps each store under DATA_DIR (services/standalone/src/embedded.ts). */
export const DATA_DIR_LAYOUT = {
  lock: '.lock',
  events: 'events',
  claims: 'claims',
  idempotency: 'idempotency',
  keys: 'keys',
  kek: join('secrets', 'data-kek'),
} as const;

export interface EmbeddedMigration {
  events: RewriteLogResult;
  claims: RewriteLogResult;
  /** Expired stored answers dropped from idempotency.log. */
  idempotency: RewriteLogResult;
}

/** Rewrites the two logs under `dataDir` with `pd` (the caller holds the data dir). */
export async function sealDataDir(dataDir: string, pd: Sealer, keepBackup: boolean): Promise<EmbeddedMigration> {
  const events = await rewriteLog({
    file: join(dataDir, DATA_DIR_LAYOUT.events, 'events.log'),
    name: 'event log',
    rewrite: sealEventRecords(pd),
    // The raw file event store opens it as `npm start` will: positions gap-free, streams continuous.
    verify: async (file) => {
      const log = await openFileEventLog(dirname(file));
      await log.close();
    },
    keepBackup,
  });
  const claims = await rewriteLog({
    file: join(dataDir, DATA_DIR_LAYOUT.claims, 'claims.log'),
    name: 'claim store',
    rewrite: rekeyClaimRecords(pd),
    verify: async (file) => {
      const store = await openFileClaimStore(dirname(file));
      await store.close();
    },
    keepBackup,
  });
  const idempotency = await rewriteLog({
    file: join(dataDir, DATA_DIR_LAYOUT.idempotency, 'idempotency.log'),
    name: 'idempotency store',
    rewrite: dropExpiredAnswers(Date.now()),
    verify: async (file) => {
      const store = await openFileIdempotencyStore(dirname(file));
      await store.close();
    },
    keepBackup,
  });
  return { events, claims, idempotency };
}

const exists = (path: string): Promise<boolean> => stat(path).then(() => true, () => false);

/**
 * The whole embedded migration: takes the data dir (refused while `npm start` runs on it), the KEK
 * (`kekText`, else DATA_DIR/secrets/data-kek, made as `npm start` makes it), the data keys
 * (DATA_DIR/keys), and seals. Returns what it did.
 */
export async function migrateDataDir(dataDir: string, options: { kekText?: string; keepBackup: boolean }): Promise<EmbeddedMigration> {
  if (!(await exists(dataDir))) throw new Error(`no data dir at ${dataDir}`);
  const unlock = await lockForProcess(join(dataDir, DATA_DIR_LAYOUT.lock), (holder, lockFile) =>
    new Error(`data dir is in use by process ${holder} (${lockFile}): stop the service first`));
  try {
    const kek = parseKek(options.kekText ?? await loadOrCreateSecret(join(dataDir, DATA_DIR_LAYOUT.kek)));
    const store = await openFileKeyStore(join(dataDir, DATA_DIR_LAYOUT.keys));
    try {
      return await sealDataDir(dataDir, makePersonalData({ store, kek }), options.keepBackup);
    } finally {
      await store.close();
    }
  } finally {
    await unlock();
  }
}
