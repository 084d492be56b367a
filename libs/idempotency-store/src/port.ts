/**
 * Safe retries (the IETF httpapi Idempotency-Key draft): what a write with a key answered, kept so
 * that the same key replays that answer instead of doing the work again.
 *
 * A key goes through two states. `begin` marks it in flight under a lease (a request working on
 * it; the lease ends if that request's process dies, so a crash never blocks a key for good);
 * `complete` stores the request's fingerprint and its answer until `expiresAt`; `abandon` removes
 * a key whose request did nothing that must be replayed (it failed with a 5xx, or its client went
 * away mid-body). Each in-flight claim carries a `token` only its owner knows: a stale owner can
 * neither complete, renew nor abandon a key a newer request has taken over.
 */
export interface StoredAnswer {
  status: number;
  /** The answer's headers worth replaying (lower-case names). */
  headers: Record<string, string>;
  /** The JSON body as sent. */
  body: string;
}

export interface CompletedKey {
  fingerprint: string;
  answer: StoredAnswer;
  /** Epoch ms after which the key is forgotten. */
  expiresAt: number;
}

export type Begun =
  | { state: 'started'; token: string }
  | { state: 'in_flight' }
  | ({ state: 'done' } & CompletedKey);

export interface IdempotencyStore {
  /**
   * Takes `key` for a request (`started`, with the token that owns it until `now + leaseMs`), or
   * reports what holds it: another request in flight under a live lease, or a completed answer not
   * yet expired. An expired answer or a lapsed lease counts as no key.
   */
  begin(key: string, now: number, leaseMs: number): Promise<Begun>;
  /** Extends the lease of a key still in flight under `token`; false when it is not (any more). */
  renew(key: string, token: string, now: number, leaseMs: number): Promise<boolean>;
  /** Stores the answer of the request owning `key` under `token`; resolves once durable. False: not the owner. */
  complete(key: string, token: string, completed: CompletedKey): Promise<boolean>;
  /** Releases `key` held under `token` (nothing to replay); never rejects for a key already gone. */
  abandon(key: string, token: string): Promise<void>;
  /**
   * Removes every key starting with `prefix` (`<userId>/`: an erased account's keys), answered or
   * in flight, so their answers leave the store (the file adapter compacts its log; expired answers
   * still on disk go too). A request in flight under a removed key can no longer complete it.
   * Resolves once durable, with the number of kept answers removed (expired ones not yet swept
   * included). An answer a request completes while the prefix is being removed may be kept on
   * MongoDB: call it once the account's requests have ended (its tokens refused).
   */
  removeScope(prefix: string): Promise<number>;
  close(): Promise<void>;
}
