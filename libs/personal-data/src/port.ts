/**
 * Where every person's data key is kept, wrapped (sealed) under the operator's key-encryption key
 * (KEK, DATA_KEK_FILE), never in clear (issue 24). Ids are `user-<userId>` for a person's key and
 * `email-index` for the key of the e-mail blind index. Destroying a key is what erases a person:
 * every field sealed under it can never be opened again, wherever copies of the events went.
 */

/** A data key sealed under the KEK named `kid` (AES-256-GCM; base64url fields). */
export interface WrappedKey { kid: string; iv: string; ct: string; tag: string }

export type StoredKey =
  | { state: 'live'; wrapped: WrappedKey }
  /** The wrapped bytes are gone; the tombstone stays so the key is never made again. */
  | { state: 'destroyed'; destroyedAt: string };

export interface DataKeyStore {
  /** The stored keys of `ids` (an id never created is absent from the map): one round trip. */
  get(ids: readonly string[]): Promise<Map<string, StoredKey>>;
  /**
   * Stores `wrapped` under `id` unless a key, live or destroyed, is there already: the first
   * wins, across processes. Resolves, once durable, with what the store holds.
   */
  create(id: string, wrapped: WrappedKey): Promise<StoredKey>;
  /**
   * Destroys `id`'s key: its wrapped bytes leave the store (the file adapter rewrites its file
   * without them and fsyncs; MongoDB replaces the document by a tombstone), a tombstone stays.
   * Idempotent; also records a tombstone for an id never created. Resolves once durable.
   */
  destroy(id: string, at: string): Promise<void>;
  /** KEK rotation: replaces a live key's wrapping by `next` if it is still `expected` (same kid and ct); false otherwise. */
  rewrap(id: string, expected: WrappedKey, next: WrappedKey): Promise<boolean>;
  /** Every id with its key, ordered by id, after `after` (null: from the start): KEK rotation, the destroyed list for backups. */
  list(after: string | null, limit: number): Promise<Array<{ id: string; key: StoredKey }>>;
  close(): Promise<void>;
}

export const userKeyId = (userId: number): string => `user-${userId}`;
export const EMAIL_INDEX_KEY_ID = 'email-index';
