/**
 * kafkajs 2.2.4 re-arms a pending-request check on every connection with a negative timeout
 * (clamped to 1 ms) even when nothing is pending or throttled: each open connection wakes the
 * event loop ~1000 times a second (≈2 % of a core per client idle, measured) and Node 24 prints a
 * TimeoutNegativeWarning. Upstream: tulios/kafkajs#1704, #1751 (fixes #1755/#1768 unreleased).
 * Skipping the re-arm when the queue is empty and unthrottled is the fix proposed there: a
 * request that cannot be sent at once is queued by push(), which schedules the check itself.
 *
 * The patch replaces a private method, so it is applied only to the kafkajs release it was read
 * against and tested on (test/kafkajs-patch.test.ts); any other version runs unpatched and
 * makeClient logs why. After a kafkajs upgrade: check whether the release still has the loop
 * (then re-read `scheduleCheckPendingRequests`, bump KAFKAJS_IDLE_PATCH_VERSION and the test) or
 * fixed it (then delete this file).
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { errorMessage } from './log.ts';

/** The only kafkajs version the patch touches. */
export const KAFKAJS_IDLE_PATCH_VERSION = '2.2.4';

export type KafkajsIdlePatchResult =
  /** `already`: an earlier call had applied it, this one changed nothing. */
  | { applied: true; version: string; already: boolean }
  /** kafkajs runs unpatched; `reason` says why. */
  | { applied: false; version: string | null; reason: string };

interface RequestQueueLike {
  pending: unknown[];
  throttledUntil: number;
  scheduleCheckPendingRequests(): void;
}

/** On the patched prototype; a registered symbol, so a second copy of this module sees it too. */
const PATCHED = Symbol.for('docshare.kafkajsIdlePatch');

/**
 * Applies the idle-loop fix to kafkajs's RequestQueue (every connection of every client, also
 * those created before). Idempotent; never throws. makeClient calls it, so every bus and
 * ensureTopics gets it; nothing is patched merely by importing this package.
 *
 * `from`: where kafkajs is resolved from (a file path or URL; default this package's own kafkajs,
 * the one the bus uses). Tests point it at other installs.
 */
export function applyKafkajsIdlePatch(options: { from?: string | URL } = {}): KafkajsIdlePatchResult {
  const require = createRequire(options.from ?? import.meta.url);
  let root: string;
  let version: string | null;
  try {
    const manifest = require.resolve('kafkajs/package.json');
    root = path.dirname(manifest);
    const declared = (require(manifest) as { version?: unknown }).version;
    version = typeof declared === 'string' ? declared : null;
  } catch (error) {
    return { applied: false, version: null, reason: `cannot read kafkajs's package.json: ${errorMessage(error)}` };
  }
  if (version !== KAFKAJS_IDLE_PATCH_VERSION) {
    return {
      applied: false,
      version,
      reason:
        `kafkajs ${version ?? '(no version)'} is installed; the idle-loop patch is only for ${KAFKAJS_IDLE_PATCH_VERSION}. ` +
        'Check whether this release still re-arms the request-queue check when idle (tulios/kafkajs#1751), then re-pin or remove the patch',
    };
  }
  let proto: (RequestQueueLike & { [PATCHED]?: true }) | undefined;
  try {
    const RequestQueue = require(path.join(root, 'src/network/requestQueue/index.js')) as { prototype?: typeof proto };
    proto = RequestQueue.prototype;
  } catch (error) {
    return { applied: false, version, reason: `cannot load kafkajs's RequestQueue: ${errorMessage(error)}` };
  }
  if (!proto || typeof proto.scheduleCheckPendingRequests !== 'function') {
    return { applied: false, version, reason: 'kafkajs\'s RequestQueue has no scheduleCheckPendingRequests method' };
  }
  if (proto[PATCHED]) return { applied: true, version, already: true };
  const original = proto.scheduleCheckPendingRequests;
  proto.scheduleCheckPendingRequests = function (this: RequestQueueLike): void {
    if (Array.isArray(this.pending) && this.pending.length === 0 && this.throttledUntil <= Date.now()) return;
    original.call(this);
  };
  Object.defineProperty(proto, PATCHED, { value: true });
  return { applied: true, version, already: false };
}
