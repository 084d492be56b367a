/**
 * The command side's own small store for what must never be in an event (credentials) and for
 * uniqueness (one account per e-mail, one category per name): first claim of a key wins.
 */
export interface ClaimStore {
  /**
   * Stores `value` under (scope, key) unless something is there already. Resolves once durable,
   * with `created: true` and the new value, or `created: false` and the value that was there.
   */
  claim<T>(scope: string, key: string, value: T): Promise<{ created: boolean; value: T }>;
  /** The value under (scope, key), or null. */
  get<T>(scope: string, key: string): Promise<T | null>;
  /**
   * Removes the claim under (scope, key), so that the key can be claimed again; true when there
   * was one. Account erasure: the claim holds a person's credentials and name, so its bytes leave
   * the store (the file adapter rewrites its log without them). Resolves once durable.
   */
  release(scope: string, key: string): Promise<boolean>;
  close(): Promise<void>;
}
