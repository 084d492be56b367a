import type { CloudEvent, StoredEvent } from '@docshare/contracts';
import type { EventStore } from '@docshare/event-store';

/** Events per page of a rebuild's replay: one log read and one bulk write of the read model each. */
export const PAGE = 1_000;

/**
 * Replays the log after `after` into `handle` a page at a time, one bulk write per page, reading
 * the next page while the current one is written: the log read and the model's writes overlap, so
 * a page costs the slower of the two, not their sum.
 */
export const replay = async (
  events: Pick<EventStore, 'readAll'>, after: number, handle: (records: readonly StoredEvent<CloudEvent>[]) => Promise<void>,
  pageSize = PAGE,
): Promise<{ count: number; last: number }> => {
  let position = after;
  let count = 0;
  let next = events.readAll(position, pageSize);
  for (;;) {
    const page = await next;
    const last = page.at(-1);
    const more = last !== undefined && page.length >= pageSize;
    if (more) {
      next = events.readAll(last.position, pageSize);
      // Awaited on the next turn; a failed write below must not leave its rejection unhandled.
      next.catch(() => undefined);
    }
    if (page.length > 0) await handle(page);
    count += page.length;
    if (!more) return { count, last: last?.position ?? position };
    position = last.position;
  }
};
