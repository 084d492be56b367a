import { randomUUID } from 'node:crypto';
import { DocshareError, EVENT_SOURCE, makeFreshReads, makeKeyedQueue, retrying, type CloudEvent } from '@docshare/contracts';
import { VersionConflict, type EventStore } from '@docshare/event-store';

/** A pure decider: the state of one entity folded from its events, and what a command records. */
export interface Decider<C, S, E extends { type: string; data: unknown }> {
  initialState: () => S;
  evolve: (state: S, event: E) => S;
  decide: (command: C, state: S) => E[];
}

/** Who asked: carried into every event's correlation and causation ids. */
export interface CommandMeta {
  requestId: string;
  correlationId?: string;
}

export interface Handled<S> {
  state: S;
  events: CloudEvent[];
  /** Global position of the last event recorded, or null when the command recorded nothing. */
  position: number | null;
}

export interface CommandHandlerOptions {
  /** How many entities' folded states to keep between commands (default 10,000). */
  cacheSize?: number;
  /** Attempts when another process appends to the same stream first (default 8). */
  maxAttempts?: number;
}

/** A CloudEvents envelope around one recorded fact (decisions §14). */
export const envelope = (
  body: { type: string; data: unknown }, streamId: string, version: number, now: string, meta: CommandMeta,
): CloudEvent => ({
  specversion: '1.0',
  id: randomUUID(),
  source: EVENT_SOURCE,
  type: body.type,
  time: now,
  subject: streamId,
  datacontenttype: 'application/json',
  data: body.data,
  correlationid: meta.correlationId ?? meta.requestId,
  causationid: meta.requestId,
  streamversion: version,
});

/**
 * handleCommand = read the stream, fold, decide, append at the expected version; on a concurrent
 * append, read again and decide again. Folded states are cached by stream and only the newer
 * events are read. (Views and downloads record nothing in the file's stream: context.ts `recordActivity`.)
 *
 * A stream whose fold is cached is not read first at all (nor one this process has not seen: it
 * is taken for empty): the command is decided on the cached (or empty) fold and appended at its version, which the store refuses (a version conflict) when another
 * writer appended since; only then is it read and decided again, at once. A decision on the cached
 * fold that records nothing or refuses is made again on a fresh read, so no answer ever rests on a
 * fold that may be stale. A command on a cached stream is then one append, not a read and an append.
 */
/** An entity's state folded from its whole stream, read once (no cache: for sweepers and repairs). */
export const foldStream = async <C, S, E extends { type: string; data: unknown }>(
  store: EventStore, decider: Decider<C, S, E>, streamId: string,
): Promise<S> => {
  let state = decider.initialState();
  for (const { event } of await store.readStream(streamId)) state = decider.evolve(state, { type: event.type, data: event.data } as E);
  return state;
};

export const makeCommandHandler = (store: EventStore, options: CommandHandlerOptions = {}) => {
  const cacheSize = options.cacheSize ?? 10_000;
  const maxAttempts = options.maxAttempts ?? 8;
  const cache = new Map<string, { state: unknown; version: number }>();

  const remember = (streamId: string, state: unknown, version: number): void => {
    cache.delete(streamId);
    cache.set(streamId, { state, version });
    if (cache.size > cacheSize) {
      const oldest = cache.keys().next().value;
      if (oldest !== undefined) cache.delete(oldest);
    }
  };

  /** A fold read from the store replaces the cached one only when it is newer (an append may have landed meanwhile). */
  const rememberRead = (streamId: string, state: unknown, version: number): { state: unknown; version: number } => {
    const cached = cache.get(streamId);
    if (cached && cached.version >= version) return cached;
    remember(streamId, state, version);
    return { state, version };
  };

  // Reads of one stream are coalesced: the callers that come while one runs share the next one,
  // which begins after all of them came (so each sees every append acknowledged before its call).
  const freshRead = makeFreshReads();

  /**
   * The entity's current state and version: the cached fold and the stream's newer events. With
   * `settled`, a cached fold it holds for final (a state no later event can change in what the
   * caller asks, e.g. a user who is registered) is returned as it is, without a read. A popular
   * file's views all load its state: concurrent loads of one stream cost one read.
   */
  const load = async <C, S, E extends { type: string; data: unknown }>(
    decider: Decider<C, S, E>, streamId: string, settled?: (state: S) => boolean,
  ): Promise<{ state: S; version: number }> => {
    const cached = cache.get(streamId);
    if (cached && settled?.(cached.state as S)) return { state: cached.state as S, version: cached.version };
    const folded = await freshRead(streamId, async () => {
      const from = cache.get(streamId);
      let state = from ? (from.state as S) : decider.initialState();
      let version = from?.version ?? 0;
      const newer = await store.readStream(streamId, version);
      for (const { event } of newer) {
        state = decider.evolve(state, { type: event.type, data: event.data } as E);
        version = event.streamversion;
      }
      return rememberRead(streamId, state, version);
    });
    return { state: folded.state as S, version: folded.version };
  };

  // Commands on one stream run one at a time in this process: they would only conflict with each
  // other. Conflicts with other processes (replicas) are retried after a jittered backoff.
  const serialized = makeKeyedQueue();

  const handle = <C, S, E extends { type: string; data: unknown }>(
    decider: Decider<C, S, E>, streamId: string, command: C, now: string, meta: CommandMeta,
  ): Promise<Handled<S>> => serialized(streamId, () => attempt(decider, streamId, command, now, meta));

  const attempt = async <C, S, E extends { type: string; data: unknown }>(
    decider: Decider<C, S, E>, streamId: string, command: C, now: string, meta: CommandMeta,
  ): Promise<Handled<S>> => {
    /**
     * Decides on `state` at `version` and appends. On a fold that may be stale (`optimistic`), a
     * refusal, a decision to record nothing and a version conflict all answer `stale` (decide
     * again on a fresh fold); on a fresh fold they stand (a conflict is thrown, to be retried).
     */
    const decideAndAppend = async (state: S, version: number, optimistic: boolean): Promise<Handled<S> | 'stale'> => {
      let bodies: E[];
      try {
        bodies = decider.decide(command, state);
      } catch (error) {
        if (optimistic) return 'stale';
        throw error;
      }
      if (bodies.length === 0) return optimistic ? 'stale' : { state, events: [], position: null };
      const events = bodies.map((body, i) => envelope(body, streamId, version + i + 1, now, meta));
      try {
        const result = await store.append(streamId, version, events);
        const next = bodies.reduce(decider.evolve, state);
        remember(streamId, next, result.version);
        return { state: next, events, position: result.position };
      } catch (error) {
        if (!(error instanceof VersionConflict)) throw error;
        if (optimistic) return 'stale';
        cache.delete(streamId);
        throw error;
      }
    };

    // The first attempt decides without reading the stream: on the cached fold, or, for a stream
    // this process has not seen, on the empty one (a new file's, a new category's stream: nothing to
    // read; a stream that exists refuses the append at version 0, or the decision, and is read).
    const cached = cache.get(streamId);
    const first = await decideAndAppend(cached ? (cached.state as S) : decider.initialState(), cached?.version ?? 0, true);
    if (first !== 'stale') return first;
    // Then on the stream as read; a conflict with another process (a replica) is retried after a
    // jittered backoff.
    return retrying(async () => {
      const { state, version } = await load(decider, streamId);
      const outcome = await decideAndAppend(state, version, false);
      if (outcome === 'stale') throw new Error('a fresh fold is never stale');
      return outcome;
    }, { attempts: maxAttempts, baseMs: 10, capMs: 1_000, retryIf: (error) => error instanceof VersionConflict }).catch((error: unknown) => {
      if (error instanceof VersionConflict) throw new DocshareError('unavailable', 'Too many concurrent changes, try again');
      throw error;
    });
  };

  return { handle, load };
};
