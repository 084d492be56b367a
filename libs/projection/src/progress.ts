import type { Db } from 'mongodb';

/** Which entity versions each projector has applied: what read-your-writes waits on across processes. */
export interface Progress {
  /** Records that `group` has applied `subject` up to `version` (never moves backwards). */
  record(group: string, subject: string, version: number): Promise<void>;
  /** True when every group has applied `subject` at `version` or later. */
  reached(groups: readonly string[], subject: string, version: number): Promise<boolean>;
}

interface ProgressDoc { _id: string; version: number }

/** Progress kept in MongoDB, shared by every replica of every projector. */
export const makeMongoProgress = (db: Db, collection = 'progress'): Progress => {
  const docs = db.collection<ProgressDoc>(collection);
  const id = (group: string, subject: string): string => `${group}\u0000${subject}`;
  return {
    record: async (group, subject, version) => {
      await docs.updateOne({ _id: id(group, subject) }, { $max: { version } }, { upsert: true });
    },
    reached: async (groups, subject, version) => {
      const found = await docs.find({ _id: { $in: groups.map((g) => id(g, subject)) } }).toArray();
      return found.length === groups.length && found.every((d) => d.version >= version);
    },
  };
};

/**
 * Read-your-writes for a command: resolves once every projector group reflects the recorded
 * event, or after `timeoutMs` (returning false) so a slow projector delays answers but never
 * blocks them.
 */
export const waitForProjections = (progress: Progress, groups: readonly string[], timeoutMs: number, pollMs = 15) =>
  async (recorded: { subject: string; version: number }): Promise<boolean> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (await progress.reached(groups, recorded.subject, recorded.version)) return true;
      if (Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  };
