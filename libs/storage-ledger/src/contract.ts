import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { changeKey, holdKey, type Resolution, type StorageChange, type StorageLedger, type StorageLedgerOptions } from './port.ts';

/**
 * The behaviour every StorageLedger adapter must show. `make` opens a ledger on fresh, empty
 * storage with the options given (a clock and a resolver the tests drive).
 */
export const storageLedgerContract = (name: string, make: (options: StorageLedgerOptions) => Promise<StorageLedger>): void =>
  void describe(`StorageLedger contract: ${name}`, () => {
    const LEASE = 60_000;
    /** A ledger on a clock the test moves, and a resolver that answers from `recorded`. */
    const open = async (recorded = new Set<string>()) => {
      const clock = { now: 1_000_000 };
      const asked: StorageChange[] = [];
      const ledger = await make({
        now: () => clock.now,
        leaseMs: LEASE,
        resolve: async (change): Promise<Resolution> => {
          asked.push(change);
          return recorded.has(changeKey(change)) ? 'recorded' : 'not_recorded';
        },
      });
      return { ledger, clock, asked };
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
