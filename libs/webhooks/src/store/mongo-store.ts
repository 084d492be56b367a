import { MongoBulkWriteError, type AnyBulkWriteOperation, type Collection, type Db, type Filter } from 'mongodb';
import { decodeCursor, encodeCursor, type Keyset } from './cursor.ts';
import {
  SETTLED_STATES, type DeliveryAttempt, type DeliveryTask, type EndpointRecord, type Page, type SettleNext, type WebhookStore,
} from './port.ts';

interface SettleItem { taskId: string; next: SettleNext; attempt: DeliveryAttempt | null }

/**
 * Group commit: `add` resolves once its item is written. Items that come while a write is in
 * flight wait for it to end and then go together in the next one (at most `max`).
 */
const groupCommit = <T>(write: (items: T[]) => Promise<void>, max = 500) => {
  let waiting: { item: T; done: (error?: unknown) => void }[] = [];
  let writing = false;
  const drain = async (): Promise<void> => {
    writing = true;
    while (waiting.length > 0) {
      const batch = waiting.slice(0, max);
      waiting = waiting.slice(batch.length);
      try {
        await write(batch.map((entry) => entry.item));
        for (const entry of batch) entry.done();
      } catch (error) {
        for (const entry of batch) entry.done(error);
      }
    }
    writing = false;
  };
  return {
    add: (item: T): Promise<void> => new Promise<void>((resolve, reject) => {
      waiting.push({ item, done: (error) => (error === undefined ? resolve() : reject(error instanceof Error ? error : new Error(String(error)))) });
      if (!writing) void drain();
    }),
  };
};

/*
 * The distributed adapter: five collections, each call a bounded query on an index created at
 * open (createIndexes is idempotent), no transaction, no $expr (FerretDB 2 stands in for
 * MongoDB in CI and serves both the same way).
 * - webhook_endpoints {_id: webhookId}: {ownerId} for endpointsOf. applyEndpoints is a
 *   conditional upsert on {_id, position < new}: an older record finds the newer one and its
 *   upsert fails on the _id (ignored).
 * - webhook_tasks {_id: task id}: {state, nextAt, position} for claimDue (candidates in order,
 *   then each taken by a conditional findOneAndUpdate, so two dispatchers never both get one; the
 *   candidates scanned past are the tasks leased and in flight, which the dispatchers' bounded
 *   queues bound), {webhookId, eventTime} and {webhookId, messageId} for reopen,
 *   {webhookId, state, updatedAt} for pendingCount and dead letters, {state, updatedAt} for prune.
 * - webhook_attempts {_id: attempt id}: {webhookId, at, _id} and {webhookId, outcome, at, _id}
 *   (keyset pages, no skip), {at} for prune.
 * - webhook_health {_id: webhookId, since}, webhook_checkpoints {_id: `${group}/${partition}`} ($max).
 * - removeOwner: the owner's endpoint ids ({ownerId}), then deletes by {webhookId $in} on tasks and attempts.
 */

type EndpointDoc = Omit<EndpointRecord, 'webhookId'> & { _id: number };
type TaskDoc = Omit<DeliveryTask, 'id'> & { _id: string };
type AttemptDoc = Omit<DeliveryAttempt, 'id'> & { _id: string };
interface HealthDoc { _id: number; since: number }
interface CheckpointDoc { _id: string; group: string; partition: number; position: number }

const DUPLICATE_KEY = 11000;
const isDuplicate = (error: unknown): boolean => typeof error === 'object' && error !== null && 'code' in error && error.code === DUPLICATE_KEY;

const endpointOf = ({ _id, ...rest }: EndpointDoc): EndpointRecord => ({ webhookId: _id, ...rest });
const taskOf = ({ _id, ...rest }: TaskDoc): DeliveryTask => ({ id: _id, ...rest });
const attemptOf = ({ _id, ...rest }: AttemptDoc): DeliveryAttempt => ({ id: _id, ...rest });

/** Newest first after the cursor: `field` < at, or = at with a smaller _id. */
const after = (field: string, key: Keyset) => ({ $or: [{ [field]: { $lt: key.at } }, { [field]: key.at, _id: { $lt: key.id } }] });

const pageOf = <T>(docs: T[], limit: number, keyOf: (item: T) => Keyset): Page<T> => {
  const items = docs.slice(0, limit);
  const last = items.at(-1);
  return { items, next: docs.length > limit && last !== undefined ? encodeCursor(keyOf(last)) : null };
};

/** Opens the MongoDB WebhookStore on `db`, creating its indexes. */
export async function makeMongoWebhookStore(db: Db): Promise<WebhookStore> {
  const endpoints: Collection<EndpointDoc> = db.collection('webhook_endpoints');
  const tasks: Collection<TaskDoc> = db.collection('webhook_tasks');
  const attempts: Collection<AttemptDoc> = db.collection('webhook_attempts');
  const health: Collection<HealthDoc> = db.collection('webhook_health');
  const checkpoints: Collection<CheckpointDoc> = db.collection('webhook_checkpoints');
  await Promise.all([
    endpoints.createIndexes([{ key: { ownerId: 1 }, name: 'owner' }]),
    tasks.createIndexes([
      { key: { state: 1, nextAt: 1, position: 1 }, name: 'due' },
      { key: { webhookId: 1, eventTime: 1 }, name: 'webhook_time' },
      { key: { webhookId: 1, messageId: 1 }, name: 'webhook_message' },
      { key: { webhookId: 1, state: 1, updatedAt: 1 }, name: 'webhook_state' },
      { key: { state: 1, updatedAt: 1 }, name: 'settled' },
    ]),
    attempts.createIndexes([
      { key: { webhookId: 1, at: -1, _id: -1 }, name: 'webhook_at' },
      { key: { webhookId: 1, outcome: 1, at: -1, _id: -1 }, name: 'webhook_outcome_at' },
      { key: { at: 1 }, name: 'at' },
    ]),
  ]);
  // Settles are group-committed: those that come while one write is in flight go together in the
  // next (one bulk update of the tasks, one unordered insert of the attempts), so a dispatcher
  // delivering hundreds a second costs the store a few commands a second, not two per delivery.
  // Alone, a settle is written at once. Each caller is answered with its batch's outcome.
  const settles = groupCommit<SettleItem>(async (items) => {
    const updates: AnyBulkWriteOperation<TaskDoc>[] = items.map(({ taskId, next }) => ({
      updateOne: {
        filter: next.cycle === undefined ? { _id: taskId } : { _id: taskId, cycle: next.cycle },
        update: {
          $set: {
            state: next.state, attempts: next.attempts, nextAt: next.nextAt, lastError: next.lastError, lastStatus: next.lastStatus,
            updatedAt: next.now, leaseOwner: null, leaseUntil: 0,
          },
        },
      },
    }));
    const recorded = items.flatMap(({ attempt }) => {
      if (attempt === null) return [];
      const { id, ...rest } = attempt;
      return [{ _id: id, ...rest }];
    });
    await Promise.all([
      tasks.bulkWrite(updates, { ordered: false }),
      recorded.length === 0 ? undefined : attempts.insertMany(recorded, { ordered: false }).catch((error: unknown) => {
        // Recorded already (a settle retried): the others went in.
        if (!(error instanceof MongoBulkWriteError) || ![error.writeErrors].flat().every(isDuplicate)) throw error;
      }),
    ]);
  });
  let closed = false;
  const check = (): void => {
    if (closed) throw new Error('webhook store is closed');
  };

  return {
    async applyEndpoints(records) {
      check();
      await Promise.all(records.map(async ({ webhookId, ...rest }) => {
        try {
          await endpoints.updateOne({ _id: webhookId, position: { $lt: rest.position } }, { $set: rest }, { upsert: true });
        } catch (error) {
          if (!isDuplicate(error)) throw error; // a record at the same or a later position is there
        }
      }));
    },

    async endpoint(webhookId) {
      check();
      const doc = await endpoints.findOne({ _id: webhookId });
      return doc ? endpointOf(doc) : null;
    },

    async endpointsOf(ownerIds) {
      check();
      if (ownerIds.length === 0) return [];
      const docs = await endpoints.find({ ownerId: { $in: [...ownerIds] }, deleted: false }).toArray();
      return docs.map(endpointOf);
    },

    async schedule(list) {
      check();
      if (list.length === 0) return [];
      // Plain inserts, unordered: a task already there (a batch delivered again) fails on its _id
      // and stays as it is; the others go in. One command, and cheaper than upserts (on the
      // FerretDB stand-in an upsert is a read and a write per document).
      try {
        await tasks.insertMany(list.map(({ id, ...rest }) => ({ _id: id, ...rest })), { ordered: false });
        return list.map((task) => task.id);
      } catch (error) {
        if (!(error instanceof MongoBulkWriteError)) throw error;
        const failed = [error.writeErrors].flat();
        if (!failed.every(isDuplicate)) throw error;
        const existing = new Set(failed.map((writeError) => writeError.index));
        return list.filter((_task, index) => !existing.has(index)).map((task) => task.id);
      }
    },

    async releaseLeases(owner) {
      check();
      // Once per start: the pending tasks (the `due` index's prefix), those this owner held.
      const { modifiedCount } = await tasks.updateMany({ state: 'pending', leaseOwner: owner }, { $set: { leaseOwner: null, leaseUntil: 0 } });
      return modifiedCount;
    },

    async claimDue(now, limit, leaseMs, owner, skip) {
      check();
      if (limit <= 0) return [];
      const due: Filter<TaskDoc> = { state: 'pending', nextAt: { $lte: now }, leaseUntil: { $lte: now } };
      const candidates = await tasks
        .find(skip.size > 0 ? { ...due, webhookId: { $nin: [...skip] } } : due, { projection: { _id: 1 } })
        .sort({ nextAt: 1, position: 1 })
        .limit(limit)
        .toArray();
      const taken = await Promise.all(candidates.map(({ _id }) =>
        tasks.findOneAndUpdate({ _id, ...due }, { $set: { leaseOwner: owner, leaseUntil: now + leaseMs } }, { returnDocument: 'after' })));
      return taken.filter((doc): doc is NonNullable<typeof doc> => doc !== null).map(taskOf);
    },

    settle(taskId, next, attempt) {
      check();
      return settles.add({ taskId, next, attempt });
    },

    async reopen(webhookId, selector, now) {
      check();
      const filter: Filter<TaskDoc> = 'messageIds' in selector
        ? { webhookId, messageId: { $in: [...selector.messageIds] } }
        : { webhookId, eventTime: { $gte: selector.since, $lt: selector.until } };
      if ('messageIds' in selector && selector.messageIds.length === 0) return 0;
      const result = await tasks.updateMany(filter, {
        $set: { state: 'pending', attempts: 0, nextAt: now, leaseOwner: null, leaseUntil: 0, updatedAt: now },
        $inc: { cycle: 1 },
      });
      return result.matchedCount;
    },

    async pendingCount(webhookId) {
      check();
      return tasks.countDocuments({ webhookId, state: 'pending' });
    },

    async attempts(webhookId, { outcome, cursor, limit }) {
      check();
      const key = cursor === undefined ? null : decodeCursor(cursor);
      const filter: Filter<AttemptDoc> = { webhookId, ...(outcome ? { outcome } : {}), ...(key ? after('at', key) : {}) };
      const docs = await attempts.find(filter).sort({ at: -1, _id: -1 }).limit(limit + 1).toArray();
      return pageOf(docs.map(attemptOf), limit, (a) => ({ at: a.at, id: a.id }));
    },

    async deadLetters(webhookId, { cursor, limit }) {
      check();
      const key = cursor === undefined ? null : decodeCursor(cursor);
      const filter: Filter<TaskDoc> = { webhookId, state: 'dead', ...(key ? after('updatedAt', key) : {}) };
      const docs = await tasks.find(filter).sort({ updatedAt: -1, _id: -1 }).limit(limit + 1).toArray();
      return pageOf(docs.map(taskOf), limit, (t) => ({ at: t.updatedAt, id: t.id }));
    },

    async failingSince(webhookId) {
      check();
      return (await health.findOne({ _id: webhookId }))?.since ?? null;
    },

    async setFailingSince(webhookId, since) {
      check();
      if (since === null) await health.deleteOne({ _id: webhookId });
      else await health.updateOne({ _id: webhookId }, { $set: { since } }, { upsert: true });
    },

    async checkpoint(group, partition) {
      check();
      return (await checkpoints.findOne({ _id: `${group}/${partition}` }))?.position ?? 0;
    },

    async setCheckpoint(group, partition, position) {
      check();
      await checkpoints.updateOne({ _id: `${group}/${partition}` }, { $max: { position }, $setOnInsert: { group, partition } }, { upsert: true });
    },

    async prune(before) {
      check();
      const [old, settled] = await Promise.all([
        attempts.deleteMany({ at: { $lt: before } }),
        tasks.deleteMany({ state: { $in: [...SETTLED_STATES] }, updatedAt: { $lt: before } }),
      ]);
      return old.deletedCount + settled.deletedCount;
    },

    async removeOwner(ownerId) {
      check();
      // The owner's endpoints (index `owner`), then their tasks and attempts by webhookId (the
      // prefixes of `webhook_time` and `webhook_at`): no index on ownerId to keep up on every delivery.
      const webhookIds = (await endpoints.find({ ownerId }, { projection: { _id: 1 } }).toArray()).map((doc) => doc._id);
      if (webhookIds.length === 0) return { tasks: 0, attempts: 0 };
      const [removedTasks, removedAttempts] = await Promise.all([
        tasks.deleteMany({ webhookId: { $in: webhookIds }, ownerId }),
        attempts.deleteMany({ webhookId: { $in: webhookIds }, ownerId }),
      ]);
      return { tasks: removedTasks.deletedCount, attempts: removedAttempts.deletedCount };
    },

    async close() {
      closed = true;
    },
  };
}
