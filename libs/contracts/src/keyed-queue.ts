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
