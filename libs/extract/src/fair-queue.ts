/**
 * Fair turns at the extraction pool. A hostile file holds a child for a whole time budget, so first
 * in, first out lets one user's files delay everyone else's by as many budgets as they upload. Here
 * the files of each owner wait in their own line, and a free slot goes:
 * - to an owner who is not demoted, the one whose last turn is the oldest (an owner new to the
 *   queue first): round robin. Another owner's file therefore waits at most for the files already
 *   running when it arrived, i.e. one budget, however many files the first owner queued;
 * - to a demoted owner (a repeat offender: `demoteAfter` files that hit the time or memory budget
 *   within `strikeWindowMs`) only when nobody else's file waits, and to one of their files at a time.
 * Work conserving: no slot idles while a file waits that may take it.
 */

export interface FairQueueOptions {
  /** Files run at once (the pool's size). */
  concurrency: number;
  /** Strikes (files that hit the time or memory budget) within `strikeWindowMs` that demote an owner (default 2). */
  demoteAfter?: number;
  /** How long a strike counts (default one hour). */
  strikeWindowMs?: number;
  /** Test hook: the clock strikes are dated with. */
  now?: () => number;
}

/** One owner, as `nextOwner` sees it. */
export interface OwnerTurns {
  owner: number;
  waiting: number;
  running: number;
  /** When this owner last started a file (a turn counter); -1: not since it joined the queue. */
  lastTurn: number;
  demoted: boolean;
}

export interface FairQueueStats {
  running: number;
  waiting: number;
  /** Owners with a file waiting or running. */
  owners: number;
  /** Owners demoted now (whether or not they have files queued). */
  demoted: number;
}

export interface FairQueue {
  /** Runs `work` in `owner`'s turn; settles as `work` does (or rejects with close()'s error if closed first). */
  run<T>(owner: number, work: () => Promise<T>): Promise<T>;
  /** Tells that one of `owner`'s files hit a budget (time or memory). */
  strike(owner: number): void;
  /** Files of `owner` waiting or running. */
  pending(owner: number): number;
  demoted(owner: number): boolean;
  stats(): FairQueueStats;
  /** Rejects every waiting file with `error` and refuses new ones; running work goes on. */
  close(error: Error): void;
}

/**
 * The owner whose file takes the next free slot, or undefined when no one may start. `owners` is
 * in order of arrival (ties of `lastTurn` go to the earlier).
 */
export const nextOwner = (owners: readonly OwnerTurns[]): number | undefined => {
  let best: OwnerTurns | undefined;
  for (const candidate of owners) {
    if (candidate.waiting === 0 || candidate.demoted) continue;
    if (!best || candidate.lastTurn < best.lastTurn) best = candidate;
  }
  if (best) return best.owner;
  for (const candidate of owners) {
    if (candidate.waiting === 0 || !candidate.demoted || candidate.running > 0) continue;
    if (!best || candidate.lastTurn < best.lastTurn) best = candidate;
  }
  return best?.owner;
};

interface Waiting { start: () => void; reject: (error: Error) => void }

interface Line extends OwnerTurns { queue: Waiting[]; strikes: number[] }

/** How often owners that have nothing queued and no strike left are forgotten. */
const SWEEP_EVERY_MS = 60_000;

export function makeFairQueue(options: FairQueueOptions): FairQueue {
  const concurrency = Math.max(1, Math.floor(options.concurrency));
  const demoteAfter = Math.max(1, options.demoteAfter ?? 2);
  const strikeWindowMs = options.strikeWindowMs ?? 60 * 60_000;
  const now = options.now ?? Date.now;
  const lines = new Map<number, Line>();
  let running = 0;
  let turns = 0;
  let closedWith: Error | null = null;
  let sweptAt = now();

  const liveStrikes = (line: Line): number[] => {
    const since = now() - strikeWindowMs;
    line.strikes = line.strikes.filter((at) => at > since);
    return line.strikes;
  };

  const lineOf = (owner: number): Line => {
    let line = lines.get(owner);
    if (!line) lines.set(owner, (line = { owner, waiting: 0, running: 0, lastTurn: -1, demoted: false, queue: [], strikes: [] }));
    return line;
  };

  /** An owner with nothing queued and no strike that still counts is forgotten (memory stays bounded by active owners). */
  const forgetIfIdle = (line: Line): void => {
    if (line.waiting === 0 && line.running === 0 && liveStrikes(line).length === 0) lines.delete(line.owner);
  };

  const sweep = (): void => {
    if (now() - sweptAt < SWEEP_EVERY_MS) return;
    sweptAt = now();
    for (const line of lines.values()) forgetIfIdle(line);
  };

  const dispatch = (): void => {
    while (running < concurrency) {
      for (const line of lines.values()) line.demoted = liveStrikes(line).length >= demoteAfter;
      const owner = nextOwner([...lines.values()]);
      if (owner === undefined) return;
      const line = lines.get(owner)!;
      const next = line.queue.shift()!;
      line.waiting -= 1;
      line.running += 1;
      line.lastTurn = turns++;
      running += 1;
      next.start();
    }
  };

  return {
    run(owner, work) {
      if (closedWith) return Promise.reject(closedWith);
      sweep();
      const line = lineOf(owner);
      return new Promise((resolve, reject) => {
        line.queue.push({
          reject,
          start: () => {
            const finish = (): void => {
              line.running -= 1;
              running -= 1;
              forgetIfIdle(line);
              dispatch();
            };
            let result: Promise<unknown>;
            try {
              result = work();
            } catch (error) {
              result = Promise.reject(error);
            }
            // The slot is free before the caller hears the outcome, so the next turn is never held up by it.
            result.then((value) => { finish(); resolve(value as never); }, (error: unknown) => { finish(); reject(error); });
          },
        });
        line.waiting += 1;
        dispatch();
      });
    },

    strike(owner) {
      const line = lineOf(owner);
      line.strikes.push(now());
      line.strikes = line.strikes.slice(-demoteAfter);
      forgetIfIdle(line);
    },

    pending: (owner) => {
      const line = lines.get(owner);
      return line ? line.waiting + line.running : 0;
    },

    demoted: (owner) => {
      const line = lines.get(owner);
      return line !== undefined && liveStrikes(line).length >= demoteAfter;
    },

    stats() {
      let waiting = 0;
      let owners = 0;
      let demoted = 0;
      for (const line of lines.values()) {
        waiting += line.waiting;
        if (line.waiting + line.running > 0) owners += 1;
        if (liveStrikes(line).length >= demoteAfter) demoted += 1;
      }
      return { running, waiting, owners, demoted };
    },

    close(error) {
      closedWith ??= error;
      for (const line of lines.values()) {
        for (const waiting of line.queue.splice(0)) waiting.reject(error);
        line.waiting = 0;
      }
    },
  };
}
