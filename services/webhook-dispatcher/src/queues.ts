/**
 * The dispatcher's in-memory delivery queues: one FIFO per endpoint, at most `perKey` attempts in
 * flight per endpoint and `total` in all, endpoints served round-robin. So one slow or hanging
 * endpoint holds at most its own `perKey` slots and its own queue; every other endpoint keeps being
 * served. Memory is bounded too: an endpoint holds at most `bound` items (reserved, waiting or in
 * flight) and the whole process `maxHeld`; what does not fit stays in the store (the backlog), for
 * the poller to claim when there is room.
 *
 * Room is taken in two steps because a batch's tasks are leased when they are scheduled but queued
 * only once the read models have the batch: `reserve` takes a place, `fill` puts the item in it (or
 * `cancel` gives it back).
 */
export interface FairQueueOptions<K, T> {
  /** Attempts in flight per key. */
  perKey: number;
  /** Attempts in flight in all. */
  total: number;
  /** Items per key: reserved, waiting and in flight together. */
  bound: number;
  /** Items in all (default total × bound). */
  maxHeld?: number;
  /** Runs one item; never rejects (a rejection is reported to `onError` and counted as done). */
  run: (key: K, item: T) => Promise<void>;
  onError?: (error: unknown, key: K, item: T) => void;
}

export interface FairQueueStats {
  /** Items reserved or waiting (not yet running). */
  queued: number;
  inFlight: number;
}

export interface FairQueue<K, T> {
  /** Takes a place for an item of `key`; false when its queue or the process is full. */
  reserve(key: K): boolean;
  /** Puts an item in a place `reserve` took. */
  fill(key: K, item: T): void;
  /** Gives back a place `reserve` took without an item. */
  cancel(key: K): void;
  /** reserve + fill; false (and nothing queued) when there is no room. */
  push(key: K, item: T): boolean;
  /** Places left in the whole process. */
  room(): number;
  /** Whether `key` has a place left. */
  hasRoom(key: K): boolean;
  /** The keys whose queue is full (the poller skips their tasks). */
  full(): Set<K>;
  /** Items held per key (waiting, reserved and in flight), for the keys holding any. */
  depths(): Map<K, number>;
  stats(): FairQueueStats;
  /** Removes every waiting item (not started) and returns them; reservations stay until filled or cancelled. */
  drain(): { key: K; item: T }[];
  /** Resolves once nothing is in flight. */
  idle(): Promise<void>;
}

interface Lane<T> {
  waiting: T[];
  reserved: number;
  running: number;
}

export const makeFairQueue = <K, T>(options: FairQueueOptions<K, T>): FairQueue<K, T> => {
  const { perKey, total, bound } = options;
  const maxHeld = options.maxHeld ?? total * bound;
  const lanes = new Map<K, Lane<T>>();
  /** Keys with a waiting item and a free slot of their own, in the order they are served. */
  const ready: K[] = [];
  const inReady = new Set<K>();
  let held = 0;
  let running = 0;
  let idleWaiters: (() => void)[] = [];

  const heldBy = (lane: Lane<T>): number => lane.waiting.length + lane.reserved + lane.running;
  const laneOf = (key: K): Lane<T> => {
    let lane = lanes.get(key);
    if (lane === undefined) {
      lane = { waiting: [], reserved: 0, running: 0 };
      lanes.set(key, lane);
    }
    return lane;
  };
  const forget = (key: K, lane: Lane<T>): void => {
    if (heldBy(lane) === 0) lanes.delete(key);
  };
  const markReady = (key: K, lane: Lane<T>): void => {
    if (lane.waiting.length > 0 && lane.running < perKey && !inReady.has(key)) {
      inReady.add(key);
      ready.push(key);
    }
  };

  const pump = (): void => {
    while (running < total && ready.length > 0) {
      const key = ready.shift() as K;
      inReady.delete(key);
      const lane = lanes.get(key);
      const item = lane?.waiting.shift();
      if (lane === undefined || item === undefined) continue;
      lane.running++;
      running++;
      // Round-robin: the endpoint goes to the back of the line if it can run more.
      markReady(key, lane);
      void (async () => {
        try {
          await options.run(key, item);
        } catch (error) {
          options.onError?.(error, key, item);
        } finally {
          lane.running--;
          running--;
          held--;
          markReady(key, lane);
          forget(key, lane);
          pump();
          if (running === 0) {
            const waiters = idleWaiters;
            idleWaiters = [];
            for (const resolve of waiters) resolve();
          }
        }
      })();
    }
  };

  const hasRoom = (key: K): boolean => held < maxHeld && heldBy(lanes.get(key) ?? { waiting: [], reserved: 0, running: 0 }) < bound;

  const reserve = (key: K): boolean => {
    if (!hasRoom(key)) return false;
    laneOf(key).reserved++;
    held++;
    return true;
  };
  const fill = (key: K, item: T): void => {
    const lane = laneOf(key);
    if (lane.reserved === 0) throw new Error('fill without a reservation');
    lane.reserved--;
    lane.waiting.push(item);
    markReady(key, lane);
    pump();
  };
  const cancel = (key: K): void => {
    const lane = lanes.get(key);
    if (lane === undefined || lane.reserved === 0) throw new Error('cancel without a reservation');
    lane.reserved--;
    held--;
    forget(key, lane);
  };

  return {
    reserve,
    fill,
    cancel,
    push(key, item) {
      if (!reserve(key)) return false;
      fill(key, item);
      return true;
    },
    room: () => Math.max(0, maxHeld - held),
    hasRoom,
    full() {
      const keys = new Set<K>();
      for (const [key, lane] of lanes) if (heldBy(lane) >= bound) keys.add(key);
      return keys;
    },
    depths() {
      const depths = new Map<K, number>();
      for (const [key, lane] of lanes) depths.set(key, heldBy(lane));
      return depths;
    },
    stats: () => ({ queued: held - running, inFlight: running }),
    drain() {
      const drained: { key: K; item: T }[] = [];
      for (const [key, lane] of lanes) {
        for (const item of lane.waiting.splice(0)) drained.push({ key, item });
        forget(key, lane);
      }
      held -= drained.length;
      ready.length = 0;
      inReady.clear();
      return drained;
    },
    idle: () => (running === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve))),
  };
};
