import type { RequestHandler } from 'express';
import type { Db } from 'mongodb';
import { counter, type Logger, type Ops } from '@docshare/http';
import { honourConsistency, makeConsistencyGate, makeMongoCheckpoints, type Checkpoints } from '@docshare/consistency';
import { makeGenerationalReadStore, perGeneration, type DocumentProjector } from '@docshare/projection';
import type { ReadStore } from '@docshare/read-store';

export interface LocalQueryOptions {
  /** The read models' database (MONGO_READ_DB): the model's generations and the projectors' checkpoints. */
  db: Db;
  /** How one generation of the model is opened (the MongoDB read store with the generation's prefix). */
  open: (prefix: string) => ReadStore;
  /** The projector's consumer group as its checkpoints name it (its name + KAFKA_GROUP_SUFFIX). */
  group: string;
  /** Partitions of the event topic (KAFKA_EVENTS_PARTITIONS). */
  partitions: number;
  /** Longest a read carrying a consistency token waits for the model (CONSISTENCY_WAIT_MS). */
  consistencyWaitMs: number;
  publicBaseUrl: string;
  logger: Logger;
  ops: Ops;
  /** Where the projector records its progress (default: its MongoDB checkpoints in `db`). */
  checkpoints?: Checkpoints;
}

/**
 * A projector's query API answered in the gateway's own process, from the projector's read model:
 * what embedded mode does for every projector (services/standalone), here for a document model in
 * MongoDB. The same query app (the projector module's `queryApp`, on the ReadStore port), behind
 * the same read-your-writes gate as the projector's own service (the group's checkpoints, polled
 * once per process however many reads wait), following the model's generation pointer as every
 * reader does (re-read at most every second, so a rebuild's switch reaches it as it reaches the
 * projector's service). What it saves is the HTTP hop to that service: one request's parsing,
 * serialising and socket writes on each side, for a read that costs the store one `_id` lookup.
 */
export const localQuery = (module: DocumentProjector, options: LocalQueryOptions): RequestHandler => {
  const store = makeGenerationalReadStore(options.db, module.model, perGeneration(options.open));
  const app = module.queryApp(store, { publicBaseUrl: options.publicBaseUrl, logger: options.logger });
  const lagging = counter(options.ops.registry, 'docshare_consistency_timeouts_total',
    'Queries answered before the read model reached their consistency token', ['model']);
  const gate = makeConsistencyGate(options.checkpoints ?? makeMongoCheckpoints(options.db), options.group, options.partitions);
  const honour = honourConsistency(gate, options.consistencyWaitMs, () => lagging.inc({ model: module.model }));
  return (req, res, next) => honour(req, res, (err?: unknown) => (err ? next(err) : app(req, res, next)));
};
