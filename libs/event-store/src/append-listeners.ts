/** A warning sink that cannot break the store it serves: what `options.onWarning` throws is dropped. */
export function safeWarning(options: { onWarning?: (message: string) => void }): (message: string) => void {
  return (message) => {
    try {
      options.onWarning?.(message);
    } catch {
      // A broken warning sink must not break the store.
    }
  };
}

/** The `onAppend` listeners of a store. */
export interface AppendListeners {
  /** Calls every listener with `lastPosition`; one that throws is reported to `warn` and the others still run. */
  notify(lastPosition: number): void;
  /** Adds `listener`; returns its unsubscribe. */
  onAppend(listener: (lastPosition: number) => void): () => void;
}

/** Listeners for the store named `owner` in warnings (e.g. `event log <file>`). */
export function appendListeners(owner: string, warn: (message: string) => void): AppendListeners {
  const listeners = new Set<(lastPosition: number) => void>();
  return {
    notify(lastPosition) {
      for (const listener of listeners) {
        try {
          listener(lastPosition);
        } catch (error) {
          warn(`${owner}: onAppend listener threw: ${String(error)}`);
        }
      }
    },
    onAppend(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
  };
}
