/**
 * Session consistency (read-your-writes) without waiting on writes: a command answers at once with
 * a consistency token, the global position of the last event it recorded; a read that carries a
 * token is answered once its read model has applied every event up to that position (or after a
 * bound). The gateway keeps each user's newest token and adds it to the user's requests, so
 * clients need not know about it; a client may also send one itself.
 */
export const CONSISTENCY_HEADER = 'x-docshare-consistency';
/**
 * From docs-command to the gateway only (the gateway removes it): besides the actor, the users
 * whose read models the command changed (a file's owner, for a comment, download or purchase by
 * someone else), whose tokens advance too.
 */
export const CONSISTENCY_USERS_HEADER = 'x-docshare-consistency-users';

/** A token as sent in a header: a positive safe integer, else null (ignored). */
export const parseConsistencyToken = (value: unknown): number | null => {
  const raw = Array.isArray(value) ? value[0] : value;
  if (typeof raw !== 'string' || !/^[1-9][0-9]{0,15}$/.test(raw)) return null;
  const token = Number(raw);
  return Number.isSafeInteger(token) ? token : null;
};

/** The user ids of a CONSISTENCY_USERS_HEADER value (invalid entries dropped). */
export const parseConsistencyUsers = (value: unknown): number[] => {
  const raw = Array.isArray(value) ? value.join(',') : value;
  if (typeof raw !== 'string') return [];
  return raw.split(',').map((part) => Number(part.trim())).filter((id) => Number.isSafeInteger(id) && id > 0);
};

/**
 * Internal answer header (issue 24): an erasure's answer names the erased user to the gateway,
 * which refuses their tokens from then on, forgets their consistency token and rate-limit keys,
 * and removes the header before the answer leaves.
 */
export const ERASED_USER_HEADER = 'x-docshare-erased-user';
