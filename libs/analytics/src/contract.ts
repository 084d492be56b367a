import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ViewerSalts } from './viewer-key.ts';

/** Opens an adapter on one storage; called again on the same storage, it is a reopen or a second process. */
export type OpenViewerSalts = (options: { now: () => Date }) => Promise<ViewerSalts>;

/**
 * The behaviour every ViewerSalts adapter must show. `fresh` gives fresh, empty storage: a
 * function opening adapters on it with the clock given (the tests move it).
 */
export const viewerSaltsContract = (name: string, fresh: () => OpenViewerSalts): void =>
  void describe(`ViewerSalts contract: ${name}`, () => {
    const DAY_MS = 86_400_000;
    const open = async () => {
      const clock = { now: Date.parse('2026-03-10T12:00:00.000Z') };
      const storage = fresh();
      const options = { now: () => new Date(clock.now) };
      return { salts: await storage(options), reopen: () => storage(options), clock };
    };
    /** The salt must not show in an error's text. */
    const rejectsWithoutSalts = async (promise: Promise<Buffer>, salts: readonly Buffer[]): Promise<void> => {
      await assert.rejects(promise, (error: unknown) => {
        assert.ok(error instanceof Error);
        const text = `${error.message}\n${error.stack ?? ''}`;
        for (const salt of salts) for (const encoding of ['hex', 'base64', 'base64url'] as const) assert.ok(!text.includes(salt.toString(encoding)));
        return true;
      });
    };

    it('hands out one random 32-byte salt per day, the same on every ask, concurrent first asks included', async () => {
      const { salts } = await open();
      const first = await Promise.all(Array.from({ length: 10 }, () => salts.saltOf('2026-03-10')));
      assert.equal(first[0]!.length, 32);
      for (const salt of first) assert.deepEqual(salt, first[0]);
      assert.deepEqual(await salts.saltOf('2026-03-10'), first[0]);
      assert.notDeepEqual(first[0], Buffer.alloc(32));
      await salts.close();
    });

    it('different days have different salts (yesterday, today, tomorrow)', async () => {
      const { salts } = await open();
      const days = await Promise.all(['2026-03-09', '2026-03-10', '2026-03-11'].map((day) => salts.saltOf(day)));
      assert.equal(new Set(days.map((salt) => salt.toString('hex'))).size, 3);
      assert.deepEqual(await salts.saltOf('2026-03-09'), days[0]);
      await salts.close();
    });

    it('a second adapter on the same storage (reopened, or another process) gets the same salts', async () => {
      const { salts, reopen } = await open();
      const today = await salts.saltOf('2026-03-10');
      const yesterday = await salts.saltOf('2026-03-09');
      await salts.close();
      const again = await reopen();
      assert.deepEqual(await again.saltOf('2026-03-10'), today);
      assert.deepEqual(await again.saltOf('2026-03-09'), yesterday);
      await again.close();
    });

    it('forgets days before yesterday: they are rejected, and their salt is gone for good', async () => {
      const { salts, reopen, clock } = await open();
      const older = await salts.saltOf('2026-03-09');
      const day = await salts.saltOf('2026-03-10');
      clock.now += DAY_MS;
      assert.deepEqual(await salts.saltOf('2026-03-10'), day, 'yesterday is kept');
      await rejectsWithoutSalts(salts.saltOf('2026-03-09'), [older, day]);
      clock.now += DAY_MS;
      await salts.saltOf('2026-03-12');
      await rejectsWithoutSalts(salts.saltOf('2026-03-10'), [older, day]);
      await rejectsWithoutSalts(salts.saltOf('not a day'), [older, day]);
      await rejectsWithoutSalts(salts.saltOf('2026-02-30'), [older, day]);
      await salts.close();
      // Deleted, not merely refused: with the clock set back, the day gets a new salt.
      clock.now -= 2 * DAY_MS;
      const back = await reopen();
      const fresh = await back.saltOf('2026-03-10');
      assert.equal(fresh.length, 32);
      assert.notDeepEqual(fresh, day);
      assert.notDeepEqual(await back.saltOf('2026-03-09'), older);
      await back.close();
    });

    it('a returned salt is a copy: changing it changes nothing stored', async () => {
      const { salts } = await open();
      const salt = await salts.saltOf('2026-03-10');
      const kept = Buffer.from(salt);
      salt.fill(0);
      assert.deepEqual(await salts.saltOf('2026-03-10'), kept);
      await salts.close();
    });
  });
