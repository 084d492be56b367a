/**
 * Runs work one at a time per key (and concurrently across keys): what must not overlap for one
 * entity or document, within one process. A failed run does not stop the next one.
 */
export const makeKeyedQueue = () => {
  const tails = new Map<string, Promise<unknown>>();
  return <T>(key: string, work: () => Promise<T>): Promise<T> => {
    const previous = tails.get(key) ?? Promise.resolve();
    const run = previous.then(work, work);
    const tail = run.catch(() => undefined);
    tails.set(key, tail);
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key);
    });
    return run;
  };
};

/**
 * Coalesces reads per key without serving a stale one: every call is answered by a read that
 * began after the call. A call made while no read of its key runs starts one; calls made while
 * one runs all share the next, which starts when the running one settles. So a key read by a
 * thousand callers at once costs two reads, not a thousand, and none of them gets an answer
 * older than its own call (what a cache kept by reads needs: a write acknowledged before the call
 * is in the answer). `read` is the first waiter's; calls on one key must ask for the same thing.
 */
export const makeFreshReads = () => {
  interface Slot { running: Promise<unknown>; next?: Promise<unknown> }
  const slots = new Map<string, Slot>();
  const start = <T>(key: string, read: () => Promise<T>): Promise<T> => {
    const running = read();
    const slot: Slot = { running };
    slots.set(key, slot);
    // Registered before any waiter's continuation, so the key is free when the next read starts.
    const settled = (): void => {
      if (slots.get(key) === slot) slots.delete(key);
    };
    running.then(settled, settled);
    return running;
  };
  return <T>(key: string, read: () => Promise<T>): Promise<T> => {
    const slot = slots.get(key);
    if (!slot) return start(key, read);
    const again = (): Promise<T> => start(key, read);
    slot.next ??= slot.running.then(again, again);
    return slot.next as Promise<T>;
  };
};
