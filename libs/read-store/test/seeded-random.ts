import type { GuardedUpdate, Update } from '../src/port.ts';

/** mulberry32: integers in [0, n) from a seeded generator, so a failure replays identically. */
export function seededRandom(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

/**
 * Delivers a random event log the way a projector sees it: batches of consecutive events, mostly
 * moving on, sometimes delivered again from an earlier position (a crash before the checkpoint),
 * so batches overlap what earlier ones applied. Each event updates one or two of 12 documents in 2
 * collections ('a', 'b'), with mixes of set, inc and setOnInsert that make the Mongo store split a
 * document's writes (a field set, then incremented).
 */
export async function replayRandomLog(
  random: (n: number) => number,
  batches: number,
  deliver: (batch: GuardedUpdate[], label: string) => Promise<void>,
): Promise<void> {
  const log: GuardedUpdate[][] = [];
  const eventAt = (position: number): GuardedUpdate[] => {
    while (log.length < position) {
      const at = log.length + 1;
      const docs = new Set([random(12), random(12)].slice(0, 1 + random(2)));
      log.push([...docs].map((doc) => {
        const kind = random(6);
        const update: Update = kind === 0 ? { set: { n: random(50), f: `v${at}` } }
          : kind === 1 ? { setOnInsert: { created: at }, inc: { m: 1 } }
          : kind === 2 ? { set: { created: -at } }
          : kind === 3 ? { inc: { n: random(2) === 0 ? 0.5 : random(7) - 3, m: 1 } }
          : { inc: { n: random(5) }, set: { f: random(3) === 0 ? null : `w${at}` } };
        return { collection: doc < 6 ? 'a' : 'b', id: `d${doc % 6}`, update, position: at };
      }));
    }
    return log[position - 1] as GuardedUpdate[];
  };
  let next = 1;
  for (let b = 0; b < batches; b++) {
    const from = next > 1 && random(5) === 0 ? 1 + random(next - 1) : next;
    const to = from + random(12);
    const batch: GuardedUpdate[] = [];
    for (let position = from; position <= to; position++) batch.push(...eventAt(position));
    await deliver(batch, `batch ${b}: positions ${from}..${to}`);
    next = Math.max(next, to + 1);
  }
}
