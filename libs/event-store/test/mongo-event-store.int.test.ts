import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { MongoServerError } from 'mongodb';
import type { CloudEvent } from '@docshare/contracts';
import { testEvent, testEvents } from '@docshare/contracts/testing';
import { eventStoreContract } from '../src/contract.ts';
import { openFileEventLog } from '../src/file-log.ts';
import { MAX_EVENT_DEPTH, mongoOutbox, openMongoEventStore } from '../src/mongo-event-store.ts';
import type { AppendDoc, MongoEventStore, StreamIndexDoc } from '../src/mongo-event-store.ts';
import { VersionConflict } from '../src/port.ts';
import { connectTestServer, transactionsOrChangeStreams } from './mongo-server.ts';

const server = await connectTestServer();
after(() => server.cleanup());

/** Appends one event to `stream`, reading its version and retrying on conflicts, as the command handler does. */
async function appendWithRetry(store: MongoEventStore, stream: string): Promise<void> {
  for (;;) {
    const version = (await store.readStream(stream)).length;
    try {
      await store.append(stream, version, [testEvent(stream, version + 1)]);
      return;
    } catch (error) {
      if (!(error instanceof VersionConflict)) throw error;
    }
  }
}

it('reports which MongoDB wire server answered', (t) => {
  t.diagnostic(`MongoDB wire server: ${server.server}`);
  assert.ok(server.server.length > 0);
});

const contractDb = server.freshDb('es_contract');
eventStoreContract('mongo', () => openMongoEventStore(contractDb));

describe('mongo event store', () => {
  it('stores one document per append keyed by position, its events as documents, and one stream-index entry per event', async () => {
    const db = server.freshDb('es_shape');
    const store = await openMongoEventStore(db);
    const first = [testEvent('shape', 1, { nested: [[1, 2], [3, [4]]], empty: {}, list: [] })];
    const more = testEvents('shape', 2, 3);
    assert.deepEqual(await store.append('shape', 0, first), { version: 1, position: 1 });
    assert.deepEqual(await store.append('shape', 1, more), { version: 4, position: 4 });

    const docs = await db.collection<AppendDoc>('events').find({}).sort({ position: 1 }).toArray();
    assert.deepEqual(docs.map((doc) => ({ ...doc, appendedAt: doc.appendedAt instanceof Date })), [
      { _id: '1', position: 1, count: 1, stream: 'shape', firstVersion: 1, version: 1, events: first, appendedAt: true },
      { _id: '2', position: 2, count: 3, stream: 'shape', firstVersion: 2, version: 4, events: more, appendedAt: true },
    ]);
    const entries = await db.collection<StreamIndexDoc>('stream_index').find({}).sort({ version: 1 }).toArray();
    assert.deepEqual(entries.map((e) => [e._id, e.version, e.position, e.last]), [
      ['shape:1', 1, 1, 1], ['shape:2', 2, 2, 4], ['shape:3', 3, 3, 4], ['shape:4', 4, 4, 4],
    ]);
    assert.deepEqual(entries[2]!.event, more[1]);
    // Nested arrays and empty objects come back intact.
    assert.deepEqual((await store.readStream('shape')).map((r) => r.event), [...first, ...more]);
    assert.deepEqual((await store.readStream('shape', 2)).map((r) => [r.position, r.event.streamversion]), [[3, 3], [4, 4]]);

    const indexes = new Map((await db.collection('events').indexes()).map((index) => [index.name, index]));
    assert.deepEqual(indexes.get('stream_first_version')?.key, { stream: 1, firstVersion: 1 });
    assert.equal(indexes.get('stream_first_version')?.unique, true);
    assert.deepEqual(indexes.get('stream_version')?.key, { stream: 1, version: 1 });
    assert.equal(indexes.get('stream_version')?.unique, true);
    assert.equal(indexes.get('position')?.unique, true);
    await store.close();
    // Reopening finds its indexes in place (and does not recreate them).
    await (await openMongoEventStore(db)).close();
  });

  it('gives back what the file log gives back, whatever JSON.stringify makes of the events (stored as documents, or as text where BSON would change them)', async () => {
    const db = server.freshDb('es_exact');
    const store = await openMongoEventStore(db);
    const dir = await mkdtemp(path.join(os.tmpdir(), 'docshare-es-exact-'));
    const fileLog = await openFileEventLog(dir);
    try {
      let deep: unknown = 'bottom';
      for (let i = 0; i < MAX_EVENT_DEPTH + 5; i++) deep = { d: deep };
      const asDocuments: Record<string, unknown>[] = [
        // What JSON changes: a Date becomes its ISO text, -0 becomes 0, undefined goes (and is
        // null in arrays), NaN and Infinity become null, toJSON applies.
        { at: new Date('2026-01-02T03:04:05.678Z'), zero: -0, gone: undefined, list: [undefined, -0, NaN, Infinity], custom: { toJSON: () => 'custom' } },
        // What BSON keeps: int32 or double, keys in their order (integer-like keys first, as JS orders them).
        { big: 2 ** 53 - 1, over: 2 ** 53 + 2, tiny: 5e-324, huge: 1.7976931348623157e308, fraction: 0.1 + 0.2, negative: -2147483649, int: 2147483647 },
        { b: 1, 10: 'ten', a: 2, 2: 'two', '': 'empty key', 'dotted.key': 1, nested: [[[]], {}, [null, true]] },
        // An own key named __proto__ (as JSON.parse makes one) stays a key, not a prototype.
        JSON.parse('{"__proto__": {"polluted": true}, "after": 1}') as Record<string, unknown>,
        { text: 'é ✓ "quoted"\nline \u0000 nul \u{1F600} 𝄞', sameAsKeys: { é: 1, '✓': 2 } },
      ];
      const asText: Record<string, unknown>[] = [
        { lone: 'a\ud800b' },
        { $ref: 'files', $id: 7 },
        { 'nul\u0000key': 1 },
        { deep },
      ];
      const streams = new Map<string, CloudEvent[]>();
      for (const [i, data] of [...asDocuments, ...asText].entries()) {
        const stream = `exact-${i}`;
        const events = [testEvent(stream, 1, data), testEvent(stream, 2, { i })];
        streams.set(stream, events);
        await store.append(stream, 0, events);
        await fileLog.append(stream, 0, events);
      }
      const raw = await db.collection<AppendDoc>('events').find({}).sort({ position: 1 }).toArray();
      assert.deepEqual(raw.map((doc) => typeof doc.events), [...asDocuments.map(() => 'object'), ...asText.map(() => 'string')]);
      // Compared as JSON text too: deepEqual does not see key order, nor tell -0 from 0 in every place.
      const same = (actual: unknown, expected: unknown, label: string): void => {
        assert.deepEqual(actual, expected, label);
        assert.equal(JSON.stringify(actual), JSON.stringify(expected), label);
      };
      for (const [stream, events] of streams) {
        const fromFile = (await fileLog.readStream(stream)).map((r) => r.event);
        same(fromFile, JSON.parse(JSON.stringify(events)), `file log ${stream}`);
        same((await store.readStream(stream)).map((r) => r.event), fromFile, `readStream ${stream}`);
      }
      const fromFile = (await fileLog.readAll(0, 100)).map((r) => r.event);
      same((await store.readAll(0, 100)).map((r) => r.event), fromFile, 'readAll');
      same((await mongoOutbox(db).readAfter(0, 100)).map((r) => r.event), fromFile, 'outbox');
      // The numbers came back as numbers, -0 as 0 (Object.is tells them apart).
      const [first] = (await store.readStream('exact-0')).map((r) => r.event.data as { zero: number; list: unknown[] });
      assert.ok(Object.is(first?.zero, 0));
      assert.deepEqual(first?.list, [null, 0, null, null]);
      const [proto] = (await store.readStream('exact-3')).map((r) => r.event.data as object);
      assert.equal(Object.getPrototypeOf(proto), Object.prototype);
      assert.deepEqual(Object.keys(proto ?? {}), ['__proto__', 'after']);
    } finally {
      await store.close();
      await fileLog.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('tells a lost position from a version conflict without the duplicate-key error\'s keyPattern (the stand-in sends none, MongoDB does)', async (t) => {
    const db = server.freshDb('es_duplicate');
    const [a, b] = [await openMongoEventStore(db), await openMongoEventStore(db)];
    // What the server says of each duplicate: code 11000 on both; keyPattern on MongoDB only.
    await a.append('d1', 0, testEvents('d1', 1, 1));
    const described: string[] = [];
    for (const doc of [
      { _id: '1', position: 99, count: 1, stream: 'x', firstVersion: 1, version: 1 },
      { _id: '99', position: 99, count: 1, stream: 'd1', firstVersion: 1, version: 1 },
    ]) {
      const error = await db.collection('events').insertOne(doc as never).then(() => null, (e: unknown) => e);
      assert.ok(error instanceof MongoServerError && error.code === 11000, String(error));
      described.push(`keyPattern ${JSON.stringify(error.keyPattern ?? null)}`);
    }
    t.diagnostic(`${server.server}: duplicate key on _id, on stream+firstVersion: ${described.join('; ')}`);
    // b's end of the log is stale: its append loses position 2 to a's, steps over it and is stored after it.
    await a.append('d2', 0, testEvents('d2', 1, 1));
    assert.deepEqual(await b.append('d3', 0, testEvents('d3', 1, 1)), { version: 1, position: 3 });
    // A second append of d1's version 1 is a conflict, also from a store that knew nothing of d1.
    await assert.rejects(b.append('d1', 0, testEvents('d1', 1, 1)), (error: unknown) => error instanceof VersionConflict && error.actual === 1);
    assert.deepEqual((await a.readAll(0, 10)).map((r) => r.event.subject), ['d1', 'd2', 'd3']);
    await Promise.all([a.close(), b.close()]);
  });

  it('uses no transaction and no change stream (the stand-in fails a transaction at commit and has no change streams)', async () => {
    const { db, commands } = await server.recordedDb('es_no_txn');
    const [a, b] = [await openMongoEventStore(db), await openMongoEventStore(db)];
    await a.append('t', 0, testEvents('t', 1, 2));
    await b.append('u', 0, testEvents('u', 1, 1));
    await assert.rejects(b.append('t', 0, testEvents('t', 1, 1)), VersionConflict);
    await a.readStream('t');
    await b.readAll(0, 10);
    await a.nextId('files');
    const outbox = mongoOutbox(db);
    await outbox.readAfter(0, 10);
    await outbox.lastPosition();
    await outbox.appendedAfter(0);
    await Promise.all([a.close(), b.close()]);
    assert.ok(commands.length > 10);
    assert.deepEqual(transactionsOrChangeStreams(commands), []);
  });

  it('refuses an append at a version inside a multi-event append', async () => {
    const store = await openMongoEventStore(server.freshDb('es_inside'));
    await store.append('in', 0, testEvents('in', 1, 3));
    await assert.rejects(store.append('in', 2, testEvents('in', 3, 1)), (error: unknown) => {
      assert.ok(error instanceof VersionConflict);
      assert.equal(error.actual, 3);
      return true;
    });
    assert.equal((await store.append('in', 3, testEvents('in', 4, 1))).version, 4);
    await store.close();
  });

  it('recovers from a writer that died between storing an append and indexing it (appends in the earlier JSON-text form)', async () => {
    const db = server.freshDb('es_repair');
    const store = await openMongoEventStore(db);
    await store.append('r', 0, testEvents('r', 1, 1));
    // What a writer killed right after its insert leaves behind: the append, no stream-index
    // entries. Written with its events as JSON text, as appends stored before events were documents.
    const orphan = testEvents('r', 2, 2);
    await db.collection<AppendDoc>('events').insertOne({
      _id: '2', position: 2, count: 2, stream: 'r', firstVersion: 2, version: 3, events: JSON.stringify(orphan), appendedAt: new Date(),
    });
    assert.equal((await store.readStream('r')).length, 1);
    assert.equal(await store.lastPosition(), 3);

    // An append at the stale version conflicts, names the real version and fills the index in.
    await assert.rejects(store.append('r', 1, testEvents('r', 2, 1)), (error: unknown) => {
      assert.ok(error instanceof VersionConflict);
      assert.equal(error.actual, 3);
      return true;
    });
    assert.deepEqual((await store.readStream('r', 1)).map((r) => r.event), orphan);
    assert.deepEqual(await store.append('r', 3, testEvents('r', 4, 1)), { version: 4, position: 4 });

    // The relay's read fills the index in too.
    const other = testEvents('q', 1, 1);
    await db.collection<AppendDoc>('events').insertOne({
      _id: '5', position: 5, count: 1, stream: 'q', firstVersion: 1, version: 1, events: JSON.stringify(other), appendedAt: new Date(),
    });
    assert.deepEqual(await store.readStream('q'), []);
    assert.deepEqual((await mongoOutbox(db).readAfter(4, 10)).map((r) => r.event), other);
    assert.deepEqual((await store.readStream('q')).map((r) => r.event), other);
    await store.close();
  });

  it('numbers positions 1..n without gaps under many concurrent appends, across two replicas', async () => {
    const db = server.freshDb('es_race');
    const [a, b] = [await openMongoEventStore(db), await openMongoEventStore(db)];
    const streams = Array.from({ length: 12 }, (_, i) => `race-${i}`);
    // Every stream is appended to 6 times by each replica, all at once: conflicts on versions
    // (same stream) and races for positions (different streams, different replicas).
    await Promise.all(
      [a, b].flatMap((store) =>
        streams.map(async (stream) => {
          for (let i = 0; i < 6; i++) await appendWithRetry(store, stream);
        }),
      ),
    );

    const total = streams.length * 12;
    assert.equal(await a.lastPosition(), total);
    const all = await b.readAll(0, 10_000);
    assert.deepEqual(all.map((r) => r.position), Array.from({ length: total }, (_, i) => i + 1));
    for (const stream of streams) {
      const records = await a.readStream(stream);
      assert.deepEqual(records.map((r) => r.event.streamversion), Array.from({ length: 12 }, (_, i) => i + 1));
      for (let i = 1; i < records.length; i++) assert.ok(records[i]!.position > records[i - 1]!.position, `${stream} out of order`);
    }
    await Promise.all([a.close(), b.close()]);
  });

  it('finds the end of a long log at open with bounded index ranges only, never a sort over the whole log', async () => {
    const { db, commands } = await server.recordedDb('es_end');
    const store = await openMongoEventStore(db);
    const streams = Array.from({ length: 32 }, (_, i) => `end-${i}`);
    // 32 streams × 40 appends of 1–3 events: about 2,600 positions, past two probe windows.
    let total = 0;
    await Promise.all(streams.map(async (stream, s) => {
      let version = 0;
      for (let i = 0; i < 40; i++) {
        const count = 1 + ((s + i) % 3);
        await store.append(stream, version, testEvents(stream, version + 1, count));
        version += count;
        total += count;
      }
    }));
    await store.close();
    commands.length = 0;
    const reopened = await openMongoEventStore(db);
    assert.equal(await reopened.lastPosition(), total);
    const version = (await reopened.readStream('end-0')).length;
    await reopened.append('end-0', version, testEvents('end-0', version + 1, 1));
    assert.equal(await reopened.lastPosition(), total + 1, 'the next append lands right after the end found at open');
    const reads = commands.filter((c) => ['find', 'aggregate', 'count'].includes(c.commandName) && (c.command[c.commandName] === 'events'));
    assert.ok(reads.length > 0);
    for (const read of reads) {
      const filter = (read.command['filter'] ?? {}) as Record<string, unknown>;
      const position = filter['position'] as Record<string, unknown> | undefined;
      const bounded = '_id' in filter || (position !== undefined && '$lt' in position && '$gte' in position);
      assert.ok(bounded, `an unbounded read of the log at open: ${JSON.stringify(read.command['filter'])} sort ${JSON.stringify(read.command['sort'])}`);
    }
    await reopened.close();
  });

  it('stores a multi-event append whole or not at all, also when racing a single-event append', async () => {
    const db = server.freshDb('es_multi');
    const [a, b] = [await openMongoEventStore(db), await openMongoEventStore(db)];
    for (let round = 0; round < 20; round++) {
      const stream = `multi-${round}`;
      await a.append(stream, 0, [testEvent(stream, 1)]);
      const results = await Promise.allSettled([a.append(stream, 1, testEvents(stream, 2, 3)), b.append(stream, 1, testEvents(stream, 2, 1))]);
      const won = results.findIndex((r) => r.status === 'fulfilled');
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
      assert.equal((await a.readStream(stream)).length, won === 0 ? 4 : 2);
      const loser = results[1 - won] as PromiseRejectedResult;
      assert.ok(loser.reason instanceof VersionConflict);
    }
    await Promise.all([a.close(), b.close()]);
  });

  it('never hands out an id twice across replicas and reopens; fresh kinds start at 1', async () => {
    const db = server.freshDb('es_ids');
    const seen = new Set<number>();
    for (let round = 0; round < 3; round++) {
      const stores = [await openMongoEventStore(db, { idBlockSize: 7 }), await openMongoEventStore(db, { idBlockSize: 3 })];
      const ids = (await Promise.all(stores.flatMap((store) => Array.from({ length: 25 }, () => store.nextId('files'))))).flat();
      for (const id of ids) {
        assert.ok(Number.isSafeInteger(id) && id > 0);
        assert.ok(!seen.has(id), `id ${id} handed out twice`);
        seen.add(id);
      }
      await Promise.all(stores.map((store) => store.close()));
    }
    assert.equal(seen.size, 150);
    const store = await openMongoEventStore(db);
    assert.equal(await store.nextId('users'), 1);
    await store.close();
  });

  it('tells onAppend listeners the new last position', async () => {
    const store = await openMongoEventStore(server.freshDb('es_listen'));
    const calls: number[] = [];
    const unsubscribe = store.onAppend((position) => calls.push(position));
    await store.append('l', 0, testEvents('l', 1, 2));
    assert.deepEqual(calls, [2]);
    unsubscribe();
    await store.append('l', 2, testEvents('l', 3, 1));
    assert.deepEqual(calls, [2]);
    await store.close();
  });

  it('serves the outbox: whole appends after a checkpoint, in order', async () => {
    const db = server.freshDb('es_outbox');
    const store = await openMongoEventStore(db);
    const outbox = mongoOutbox(db);
    assert.deepEqual(await outbox.readAfter(0, 10), []);
    assert.equal(await outbox.lastPosition(), 0);
    await store.append('o1', 0, testEvents('o1', 1, 3));
    await store.append('o2', 0, testEvents('o2', 1, 1));
    await store.append('o1', 3, testEvents('o1', 4, 2));
    assert.equal(await outbox.lastPosition(), 6);

    // A limit inside an append still returns that whole append; the next one waits.
    assert.deepEqual((await outbox.readAfter(0, 2)).map((r) => r.position), [1, 2, 3]);
    const page = await outbox.readAfter(0, 5);
    assert.deepEqual(page.map((r) => r.position), [1, 2, 3, 4]);
    assert.deepEqual(page, await store.readAll(0, 4));
    const rest = await outbox.readAfter(4, 100);
    assert.deepEqual(rest.map((r) => `${r.event.subject}@${r.event.streamversion}`), ['o1@4', 'o1@5']);
    assert.deepEqual(await outbox.readAfter(6, 100), []);
    await store.close();
  });

  it('readAll starts inside a multi-event append and stops at the end of the log', async () => {
    const store = await openMongoEventStore(server.freshDb('es_readall'));
    await store.append('a', 0, testEvents('a', 1, 4));
    await store.append('b', 0, testEvents('b', 1, 1));
    assert.deepEqual((await store.readAll(2, 10)).map((r) => r.position), [3, 4, 5]);
    assert.deepEqual((await store.readAll(1, 2)).map((r) => r.position), [2, 3]);
    assert.deepEqual(await store.readAll(5, 10), []);
    assert.deepEqual(await store.readAll(99, 10), []);
    assert.deepEqual(await store.readAll(0, 0), []);
    await store.close();
  });

  it('close waits for appends in flight and refuses later ones', async () => {
    const store = await openMongoEventStore(server.freshDb('es_close'));
    const inFlight = store.append('c', 0, testEvents('c', 1, 1));
    await store.close();
    assert.deepEqual(await inFlight, { version: 1, position: 1 });
    await assert.rejects(store.append('c', 1, testEvents('c', 2, 1)), /closed/);
    await assert.rejects(store.nextId('files'), /closed/);
  });

  it('measures append throughput (reported, not asserted)', async (t) => {
    const store = await openMongoEventStore(server.freshDb('es_speed'));
    const sequential = 300;
    let started = performance.now();
    for (let v = 0; v < sequential; v++) await store.append('seq', v, [testEvent('seq', v + 1)]);
    const sequentialMs = performance.now() - started;

    // 64 streams appended to at once, each stream one command after another (as the command handler does).
    const streams = 64;
    const perStream = 30;
    started = performance.now();
    await Promise.all(
      Array.from({ length: streams }, async (_, s) => {
        for (let v = 0; v < perStream; v++) await store.append(`par-${s}`, v, [testEvent(`par-${s}`, v + 1)]);
      }),
    );
    const concurrentMs = performance.now() - started;

    // As the command handler does it: read what is new in the stream (usually nothing), then append.
    const commands = 8;
    started = performance.now();
    await Promise.all(
      Array.from({ length: streams }, async (_, s) => {
        for (let v = perStream; v < perStream + commands; v++) {
          assert.deepEqual(await store.readStream(`par-${s}`, v), []);
          await store.append(`par-${s}`, v, [testEvent(`par-${s}`, v + 1)]);
        }
      }),
    );
    const commandMs = performance.now() - started;
    const total = streams * perStream;
    assert.equal(await store.lastPosition(), sequential + total + streams * commands);
    const rate = (count: number, ms: number): string => (count / (ms / 1000)).toFixed(0);
    t.diagnostic(`${server.server}, log of ${sequential + total + streams * commands} events: one stream, one append at a time ` +
      `${rate(sequential, sequentialMs)} appends/s (${(sequentialMs / sequential).toFixed(2)} ms each); ` +
      `${streams} streams at once ${rate(total, concurrentMs)} appends/s; ` +
      `${streams} streams at once, each append after a readStream ${rate(streams * commands, commandMs)} read+appends/s`);
    await store.close();
  });

  it('stores an unversioned append as one document with stream \'\' and firstVersion = version = -position, no stream-index entries', async () => {
    const db = server.freshDb('es_unversioned_shape');
    const store = await openMongoEventStore(db);
    await store.append('file-12', 0, testEvents('file-12', 1, 1));
    const views = [testEvent('file-12', 0, { view: 1 }), testEvent('file-12', 0, { view: 2 })];
    assert.deepEqual(await store.appendUnversioned(views), { position: 3 });
    assert.deepEqual(await store.appendUnversioned([testEvent('file-12', 0)]), { position: 4 });
    assert.deepEqual(await store.append('file-12', 1, testEvents('file-12', 2, 1)), { version: 2, position: 5 });

    const docs = await db.collection<AppendDoc>('events').find({}).sort({ position: 1 }).toArray();
    assert.deepEqual(docs.map((d) => [d._id, d.stream, d.firstVersion, d.version, d.count]), [
      ['1', 'file-12', 1, 1, 1], ['2', '', -2, -2, 2], ['4', '', -4, -4, 1], ['5', 'file-12', 2, 2, 1],
    ]);
    assert.deepEqual(docs[1]!.events, views);
    const entries = await db.collection<StreamIndexDoc>('stream_index').find({}).sort({ position: 1 }).toArray();
    assert.deepEqual(entries.map((e) => e._id), ['file-12:1', 'file-12:2']);
    await store.close();

    // A reopened store (another replica) sees them in readAll only, and the outbox publishes them
    // without writing stream-index entries for them.
    const reopened = await openMongoEventStore(db);
    assert.equal(await reopened.lastPosition(), 5);
    assert.deepEqual((await reopened.readAll(0, 10)).map((r) => [r.position, r.event.streamversion]), [[1, 1], [2, 0], [3, 0], [4, 0], [5, 2]]);
    assert.deepEqual((await reopened.readStream('file-12')).map((r) => r.event.streamversion), [1, 2]);
    assert.deepEqual(await reopened.appendUnversioned([testEvent('file-12', 0)]), { position: 6 });
    const outbox = mongoOutbox(db);
    assert.deepEqual((await outbox.readAfter(1, 3)).map((r) => r.position), [2, 3, 4]);
    assert.deepEqual((await outbox.readAfter(4, 10)).map((r) => r.position), [5, 6]);
    assert.equal(await outbox.lastPosition(), 6);
    assert.equal(await db.collection('stream_index').countDocuments({}), 2);
    await reopened.close();
  });

  it('group-commits 1,000 concurrent unversioned appends of two replicas into a few inserts, positions gap-free', async () => {
    const { db, commands } = await server.recordedDb('es_unversioned_batch');
    const [a, b] = [await openMongoEventStore(db), await openMongoEventStore(db)];
    await a.append('file-1', 0, testEvents('file-1', 1, 1));
    commands.length = 0;
    const results = await Promise.all([
      ...[a, b].flatMap((store) => Array.from({ length: 500 }, () => store.appendUnversioned([testEvent('file-1', 0)]))),
      appendWithRetry(a, 'file-1').then(() => ({ position: 0 })),
    ]);
    const inserts = commands.filter((c) => c.commandName === 'insert' && c.command['insert'] === 'events').length;
    assert.ok(inserts <= 40, `${inserts} inserts for 1,000 unversioned appends`);
    assert.equal(new Set(results.slice(0, 1_000).map((r) => r.position)).size, 1_000);
    assert.equal(await a.lastPosition(), 1_002);
    assert.deepEqual((await b.readAll(0, 2_000)).map((r) => r.position), Array.from({ length: 1_002 }, (_, i) => i + 1));
    assert.deepEqual((await b.readStream('file-1')).map((r) => r.event.streamversion), [1, 2]);
    await Promise.all([a.close(), b.close()]);
  });
});
