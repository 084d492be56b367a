import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { changeKey, holdKey, type HoldState, type Resolution, type StorageChange, type StorageLedger, type StorageLedgerOptions } from './port.ts';

/**
 * The behaviour every StorageLedger adapter must show. `make` opens a ledger on fresh, empty
 * storage with the options given (a clock and a resolver the tests drive).
 */
export const storageLedgerContract = (name: string, make: (options: StorageLedgerOptions) => Promise<StorageLedger>): void =>
  void describe(`StorageLedger contract: ${name}`, () => {
    const LEASE = 60_000;
    /**
     * A ledger on a clock the test moves, a resolver that answers from `recorded`, and (unless
     * `withoutResolveHold`) a hold resolver that answers from `sessions` ('open' when not listed).
     */
    const open = async (recorded = new Set<string>(), { withoutResolveHold = false } = {}) => {
      const clock = { now: 1_000_000 };
      const asked: StorageChange[] = [];
      const askedHolds: string[] = [];
      const sessions = new Map<string, HoldState>();
      const ledger = await make({
        now: () => clock.now,
        leaseMs: LEASE,
        resolve: async (change): Promise<Resolution> => {
          asked.push(change);
          return recorded.has(changeKey(change)) ? 'recorded' : 'not_recorded';
        },
        ...(withoutResolveHold ? {} : {
          resolveHold: async (holdId: string): Promise<HoldState> => {
            askedHolds.push(holdId);
            return sessions.get(holdId) ?? 'open';
          },
        }),
      });
      return { ledger, clock, asked, askedHolds, sessions };
    };
    const upload = (fileId: number, bytes: number): StorageChange => ({ kind: 'upload', fileId, bytes });
    const deletion = (fileId: number, bytes: number): StorageChange => ({ kind: 'delete', fileId, bytes });
    /** A recorded upload, the whole way: reserve, resize, pend, settle. */
    const uploaded = async (ledger: StorageLedger, userId: number, fileId: number, bytes: number, quota = 1_000): Promise<void> => {
      assert.ok((await ledger.reserve(userId, `h${fileId}`, bytes, quota)).held >= bytes);
      assert.equal(await ledger.resize(userId, `h${fileId}`, bytes, quota), true);
      await ledger.pend(userId, upload(fileId, bytes), `h${fileId}`);
      await ledger.settle(userId, upload(fileId, bytes));
    };

    it('a user never seen uses nothing', async () => {
      const { ledger } = await open();
      assert.equal(await ledger.usage(7), 0);
      assert.equal(await ledger.total(), 0);
      await ledger.close();
    });

    it('a reserve holds what the body declares, or the whole free space when it declares nothing, and 0 when the user is full', async () => {
      const { ledger } = await open();
      assert.deepEqual(await ledger.reserve(1, 'a', 300, 1_000), { held: 300, free: 1_000 });
      assert.equal(await ledger.usage(1), 300);
      assert.equal((await ledger.reserve(1, 'b', undefined, 1_000)).held, 700);
      assert.equal((await ledger.reserve(1, 'c', 10, 1_000)).held, 0);
      assert.equal(await ledger.usage(1), 1_000);
      await ledger.cancel(1, holdKey('b'));
      assert.equal((await ledger.reserve(1, 'c', 900, 1_000)).held, 700);
      await ledger.close();
    });

    it('concurrent reserves of one user never hold more than the quota between them', async () => {
      const { ledger } = await open();
      const held = await Promise.all(Array.from({ length: 20 }, (_, i) => ledger.reserve(2, `h${i}`, 100, 1_000).then((r) => r.held)));
      assert.equal(held.reduce((a, b) => a + b, 0), 1_000);
      assert.equal(held.filter((bytes) => bytes === 0).length, 10);
      assert.equal(await ledger.usage(2), 1_000);
      await ledger.close();
    });

    it('a resize to the real size fits within the quota or is refused, the hold unchanged', async () => {
      const { ledger } = await open();
      await ledger.reserve(3, 'a', 100, 1_000);
      await ledger.reserve(3, 'b', 500, 1_000);
      assert.equal(await ledger.resize(3, 'a', 400, 1_000), true);
      assert.equal(await ledger.usage(3), 900);
      assert.equal(await ledger.resize(3, 'a', 600, 1_000), false);
      assert.equal(await ledger.usage(3), 900);
      assert.equal(await ledger.resize(3, 'a', 50, 1_000), true);
      assert.equal(await ledger.usage(3), 550);
      await ledger.close();
    });

    it('an upload counts from its hold to its settle, once, however often it is settled', async () => {
      const { ledger } = await open();
      await ledger.reserve(4, 'h', 250, 1_000);
      await ledger.pend(4, upload(40, 200), 'h');
      assert.equal(await ledger.usage(4), 200);
      await ledger.settle(4, upload(40, 200));
      await ledger.settle(4, upload(40, 200));
      assert.equal(await ledger.usage(4), 200);
      // Pended and settled again (a retried record of the same file): still once.
      await ledger.pend(4, upload(40, 200));
      await ledger.settle(4, upload(40, 200));
      assert.equal(await ledger.usage(4), 200);
      assert.equal(await ledger.total(), 200);
      await ledger.close();
    });

    it('a cancelled upload counts nothing; a settle of a change never pended does nothing', async () => {
      const { ledger } = await open();
      await ledger.reserve(5, 'h', 300, 1_000);
      await ledger.pend(5, upload(50, 300), 'h');
      await ledger.cancel(5, changeKey(upload(50, 300)));
      await ledger.settle(5, upload(51, 999));
      assert.equal(await ledger.usage(5), 0);
      await ledger.close();
    });

    it('a deletion counts as used until settled, then gives its bytes back once', async () => {
      const { ledger } = await open();
      await uploaded(ledger, 6, 60, 400);
      await uploaded(ledger, 6, 61, 100);
      await ledger.pend(6, deletion(60, 400));
      assert.equal(await ledger.usage(6), 500);
      await ledger.settle(6, deletion(60, 400));
      assert.equal(await ledger.usage(6), 100);
      await ledger.settle(6, deletion(60, 400));
      await ledger.pend(6, deletion(60, 400));
      await ledger.settle(6, deletion(60, 400));
      assert.equal(await ledger.usage(6), 100);
      // The bytes given back are free at once (read-your-writes).
      assert.equal((await ledger.reserve(6, 'next', undefined, 1_000)).held, 900);
      await ledger.close();
    });

    it('users are independent, and total sums what they settled', async () => {
      const { ledger } = await open();
      await uploaded(ledger, 8, 80, 700);
      await uploaded(ledger, 9, 90, 50);
      await ledger.reserve(9, 'held', 100, 1_000);
      assert.equal((await ledger.reserve(8, 'x', 500, 1_000)).held, 300);
      assert.equal(await ledger.usage(9), 150);
      assert.equal(await ledger.total(), 750);
      await ledger.close();
    });

    it('repairs entries older than the lease on the user\'s next operation: recorded changes applied, others and holds dropped', async () => {
      const recorded = new Set([changeKey(upload(100, 300)), changeKey(deletion(101, 200))]);
      const { ledger, clock, asked } = await open(recorded);
      await uploaded(ledger, 10, 101, 200);
      // A crash after each of these was pended (or held), before its settle or cancel.
      await ledger.reserve(10, 'upload-of-100', 300, 1_000);
      await ledger.pend(10, upload(100, 300), 'upload-of-100');
      await ledger.reserve(10, 'upload-of-102', 50, 1_000);
      await ledger.pend(10, upload(102, 50), 'upload-of-102');
      await ledger.pend(10, deletion(101, 200));
      await ledger.reserve(10, 'body-never-finished', 100, 1_000);
      assert.equal(await ledger.usage(10), 200 + 300 + 50 + 100);
      assert.deepEqual(asked, [], 'entries within the lease are left to their requests');

      clock.now += LEASE + 1;
      assert.equal(await ledger.usage(10), 300);
      assert.deepEqual(asked.map(changeKey).sort(), ['delete:101', 'upload:100', 'upload:102']);
      // Repaired once: the recorded ones are settled now, a late settle does not count them again.
      await ledger.settle(10, upload(100, 300));
      await ledger.settle(10, deletion(101, 200));
      assert.equal(await ledger.usage(10), 300);
      assert.equal(await ledger.total(), 300);
      await ledger.close();
    });

    it('an exact reserve holds all it wants or nothing', async () => {
      const { ledger } = await open();
      await ledger.reserve(20, 'a', 300, 1_000);
      assert.deepEqual(await ledger.reserve(20, 'b', 800, 1_000, { exact: true }), { held: 0, free: 700 });
      assert.equal(await ledger.usage(20), 300);
      assert.deepEqual(await ledger.reserve(20, 'b', 700, 1_000, { exact: true }), { held: 700, free: 700 });
      assert.equal(await ledger.usage(20), 1_000);
      await ledger.close();
    });

    it('of two exact reserves that together exceed the quota the second is refused and the first kept', async () => {
      const { ledger } = await open();
      assert.equal((await ledger.reserve(21, 's1', 600, 1_000, { exact: true, until: 2_000_000 })).held, 600);
      assert.deepEqual(await ledger.reserve(21, 's2', 600, 1_000, { exact: true, until: 2_000_000 }), { held: 0, free: 400 });
      assert.equal(await ledger.usage(21), 600);
      // At once: one of them holds, never both.
      const held = await Promise.all(['c1', 'c2'].map((id) => ledger.reserve(22, id, 600, 1_000, { exact: true }).then((r) => r.held)));
      assert.deepEqual(held.sort(), [0, 600]);
      assert.equal(await ledger.usage(22), 600);
      await ledger.close();
    });

    it('a reserve of a hold already there replaces it, its own bytes free to it', async () => {
      const { ledger } = await open();
      assert.equal((await ledger.reserve(23, 's', 600, 1_000, { exact: true })).held, 600);
      assert.deepEqual(await ledger.reserve(23, 's', 600, 1_000, { exact: true }), { held: 600, free: 1_000 });
      assert.equal(await ledger.usage(23), 600);
      await ledger.close();
    });

    it('a session hold outlives the lease while its session is open, asked once a lease, and goes when it has ended', async () => {
      const { ledger, clock, askedHolds, sessions } = await open();
      await ledger.reserve(24, 's', 500, 1_000, { exact: true, until: clock.now + 10 * LEASE });
      clock.now += LEASE;
      assert.equal(await ledger.usage(24), 500);
      assert.deepEqual(askedHolds, [], 'not asked within the lease');
      clock.now += 1;
      assert.equal(await ledger.usage(24), 500);
      assert.deepEqual(askedHolds, ['s']);
      assert.equal(await ledger.usage(24), 500);
      assert.equal((await ledger.reserve(24, 'other', undefined, 1_000)).held, 500);
      assert.deepEqual(askedHolds, ['s'], 'an open hold\'s lease restarts: not asked on every call');
      await ledger.cancel(24, holdKey('other'));
      clock.now += LEASE + 1;
      assert.equal(await ledger.usage(24), 500);
      assert.deepEqual(askedHolds, ['s', 's']);
      sessions.set('s', 'ended');
      clock.now += LEASE + 1;
      assert.equal(await ledger.usage(24), 0);
      assert.deepEqual(askedHolds, ['s', 's', 's']);
      await ledger.close();
    });

    it('a session hold goes once past its until, without asking, lease or not', async () => {
      const { ledger, clock, askedHolds } = await open();
      const start = clock.now;
      await ledger.reserve(25, 'short', 100, 1_000, { until: start + 1_000 });
      await ledger.reserve(25, 'long', 200, 1_000, { until: start + 3 * LEASE });
      clock.now = start + 1_000;
      assert.equal(await ledger.usage(25), 300, 'kept up to its until');
      clock.now = start + 1_001;
      assert.equal(await ledger.usage(25), 200);
      clock.now = start + 3 * LEASE + 1;
      assert.equal(await ledger.usage(25), 0);
      assert.deepEqual(askedHolds, []);
      await ledger.close();
    });

    it('without resolveHold a session hold is kept past the lease until its until', async () => {
      const { ledger, clock } = await open(new Set(), { withoutResolveHold: true });
      const start = clock.now;
      await ledger.reserve(26, 's', 400, 1_000, { until: start + 5 * LEASE });
      clock.now = start + 5 * LEASE;
      assert.equal(await ledger.usage(26), 400);
      clock.now += 1;
      assert.equal(await ledger.usage(26), 0);
      await ledger.close();
    });

    it('a session hold resized keeps its until; pended, it becomes the upload\'s pending change', async () => {
      const { ledger, clock, asked, askedHolds } = await open(new Set([changeKey(upload(270, 350))]));
      const start = clock.now;
      await ledger.reserve(27, 's', 500, 1_000, { exact: true, until: start + 3 * LEASE });
      assert.equal(await ledger.resize(27, 's', 400, 1_000), true);
      assert.equal(await ledger.usage(27), 400);
      clock.now = start + LEASE + 1;
      assert.equal(await ledger.usage(27), 400, 'still a session hold: kept past the lease');
      assert.deepEqual(askedHolds, ['s']);
      clock.now = start + 3 * LEASE + 1;
      assert.equal(await ledger.usage(27), 0, 'its until kept: gone after it');
      assert.deepEqual(askedHolds, ['s']);
      // A resize of a hold no longer there makes it again (a plain hold).
      assert.equal(await ledger.resize(27, 's', 300, 1_000), true);
      assert.equal(await ledger.usage(27), 300);
      clock.now += LEASE + 1;
      assert.equal(await ledger.usage(27), 0);
      assert.deepEqual(askedHolds, ['s']);

      await ledger.reserve(27, 't', 500, 1_000, { exact: true, until: clock.now + 3 * LEASE });
      await ledger.pend(27, upload(270, 350), 't');
      assert.equal(await ledger.usage(27), 350);
      clock.now += 4 * LEASE;
      assert.equal(await ledger.usage(27), 350, 'the pending change is repaired from the event log, not by the hold\'s until');
      assert.deepEqual(asked.map(changeKey), ['upload:270']);
      assert.deepEqual(askedHolds, ['s']);
      await ledger.settle(27, upload(270, 350));
      assert.equal(await ledger.total(), 350);
      await ledger.close();
    });

    it('a hold without until is dropped after the lease as before, resolveHold not asked', async () => {
      const { ledger, clock, askedHolds } = await open();
      await ledger.reserve(28, 'request', 100, 1_000);
      await ledger.reserve(28, 'session', 200, 1_000, { until: clock.now + 3 * LEASE });
      clock.now += LEASE + 1;
      assert.equal(await ledger.usage(28), 200);
      assert.deepEqual(askedHolds, ['session']);
      await ledger.close();
    });

    it('a seed sets the users\' settled bytes once', async () => {
      const { ledger } = await open();
      assert.equal(await ledger.seed(async () => new Map([[11, 500], [12, 20]])), true);
      assert.equal(await ledger.seed(async () => { throw new Error('not called again'); }), false);
      assert.equal(await ledger.usage(11), 500);
      assert.equal((await ledger.reserve(12, 'h', undefined, 100)).held, 80);
      assert.equal(await ledger.total(), 520);
      await ledger.close();
    });
  });
