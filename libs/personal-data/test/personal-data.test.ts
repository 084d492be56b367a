import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { EVENT_SOURCE, type CloudEvent, type EventType, type StoredEvent } from '@docshare/contracts';
import fc from 'fast-check';
import { PERSONAL_FIELDS, REDACTED, redactedValue, type PersonalField } from '../src/fields.ts';
import { parseKek, unwrapKey, wrapKey, type Kek } from '../src/kek.ts';
import { makeMemoryKeyStore } from '../src/memory-key-store.ts';
import { makePersonalData, type PersonalData } from '../src/personal-data.ts';
import { EMAIL_INDEX_KEY_ID, userKeyId, type DataKeyStore } from '../src/port.ts';

/*
 * The cipher of issue 24 (design §1): every personal field sealed under its person's key, opened
 * back, redacted once the key is destroyed, bound to its event and field, across KEK rotation.
 */

const kekText = (kid: string): string => `${kid}:${randomBytes(32).toString('base64url')}`;
const OWNER = 7;
const AUTHOR = 8;

const event = (type: string, data: unknown, id: string = randomUUID()): CloudEvent => ({
  specversion: '1.0', id, source: EVENT_SOURCE, type, time: '2026-01-01T00:00:00.000Z', subject: `s-${id}`,
  datacontenttype: 'application/json', data, correlationid: 'corr', causationid: 'cause', streamversion: 1,
});
const stored = <E extends CloudEvent>(e: E, position = 1): StoredEvent<E> => ({ event: e, position });

/** One event of every type with personal fields, each personal value holding `mark` (ids, sizes, times in clear). */
const samples = (mark: string): CloudEvent[] => [
  event('docs.user.registered.v1', { userId: OWNER, name: `Ann ${mark}`, email: `ann-${mark}@example.com`, registeredAt: 't' }),
  event('docs.file.uploaded.v1', {
    fileId: 1, ownerId: OWNER, ownerName: `Ann ${mark}`, title: `title ${mark}`, description: `desc ${mark}`, tags: [`tag-${mark}`, 'x'],
    categoryId: 3, categoryName: 'Science', license: 'cc-by', videoUrl: `https://v.example/${mark}`,
    originalFileName: `${mark}.pdf`, contentType: 'application/pdf', size: 1234, blobKey: 'f1', uploadedAt: 't',
  }),
  event('docs.file.updated.v1', {
    fileId: 1, ownerId: OWNER, changes: { title: `new ${mark}`, description: `new desc ${mark}`, tags: [`t-${mark}`], price: 5 }, updatedAt: 't',
  }),
  event('docs.comment.posted.v1', {
    commentId: 4, fileId: 1, fileOwnerId: OWNER, fileTitle: `title ${mark}`, authorId: AUTHOR, comment: `nice ${mark}`, postedAt: 't',
  }),
  event('docs.file.content-extracted.v1', {
    fileId: 1, ownerId: OWNER, blobKey: 'f1', format: 'pdf', extractor: 'x', truncated: false, language: null,
    text: `the body ${mark}`, durationMs: 3, extractedAt: 't',
  }),
  event('docs.file.content-extraction-failed.v1', {
    fileId: 2, ownerId: OWNER, blobKey: 'f2', format: 'pdf', reason: 'corrupt', detail: `bad xref near ${mark}`, durationMs: 3, failedAt: 't',
  }),
  event('docs.upload.started.v1', {
    uploadId: 'u1', ownerId: OWNER, fileId: 2, blobKey: 'f2-u1', storeUploadId: 's', fileName: `${mark}.docx`, contentType: 'x',
    size: 9, partSize: 5, partCount: 2, title: `up ${mark}`, description: `up desc ${mark}`, tags: [`up-${mark}`], license: 'cc-by',
    category: { kind: 'existing', categoryId: 3 }, videoUrl: `https://v.example/up-${mark}`, startedAt: 't', expiresAt: 't',
  }),
  event('docs.webhook.registered.v1', {
    webhookId: 5, ownerId: OWNER, url: `https://hook.example/${mark}`, events: ['file.uploaded'], description: `hook ${mark}`,
    secret: { kid: 'k', iv: 'i', ct: 'c', tag: 't' }, createdAt: 't',
  }),
  event('docs.webhook.updated.v1', {
    webhookId: 5, ownerId: OWNER, changes: { url: `https://hook.example/new-${mark}`, description: `hook2 ${mark}`, enabled: true }, updatedAt: 't',
  }),
];

const getAt = (data: unknown, path: readonly string[]): unknown =>
  path.reduce<unknown>((at, part) => (at !== null && typeof at === 'object' ? (at as Record<string, unknown>)[part] : undefined), data);
const fieldsOf = (e: CloudEvent): readonly PersonalField[] => PERSONAL_FIELDS[e.type as EventType] ?? [];

const setup = (options: { store?: DataKeyStore; kek?: Kek; now?: () => number; cacheMs?: number } = {}): { pd: PersonalData; store: DataKeyStore; kek: Kek } => {
  const store = options.store ?? makeMemoryKeyStore();
  const kek = options.kek ?? parseKek(kekText('k1'));
  return { pd: makePersonalData({ store, kek, now: options.now, cacheMs: options.cacheMs }), store, kek };
};
const openAll = async (pd: PersonalData, events: readonly CloudEvent[]): Promise<CloudEvent[]> =>
  (await pd.open(events.map((e, i) => stored(e, i + 1)))).map((r) => r.event);

describe('personal data: sealing and opening events', () => {
  it('the samples cover every event type and every personal field', () => {
    const events = samples('m');
    assert.deepEqual(new Set(events.map((e) => e.type)), new Set(Object.keys(PERSONAL_FIELDS)));
    for (const e of events) for (const field of fieldsOf(e)) assert.notEqual(getAt(e.data, field.path), undefined, `${e.type} ${field.path.join('.')}`);
  });

  it('seals every personal field (the plain value nowhere in the sealed event) and opens it back equal', async () => {
    const { pd } = setup();
    const mark = `MARK${randomUUID().slice(0, 8)}`;
    const events = samples(mark);
    const sealed = await pd.seal(events);
    assert.equal(sealed.length, events.length);
    for (const [i, e] of sealed.entries()) {
      assert.equal(e.personaldata, 'v1');
      assert.equal(JSON.stringify(e).includes(mark), false, `${e.type}: ${JSON.stringify(e)}`);
      for (const field of fieldsOf(e)) assert.match(String(getAt(e.data, field.path)), /^pd1\.([\w-]+|=)$/, `${e.type} ${field.path.join('.')}`);
      // Everything else is left as it was.
      assert.equal(e.id, events[i]!.id);
      assert.equal(getAt(e.data, [fieldsOf(e)[0]!.owner]), getAt(events[i]!.data, [fieldsOf(e)[0]!.owner]));
    }
    assert.equal((sealed[1]!.data as { size: number }).size, 1234);
    assert.equal((sealed[1]!.data as { categoryName: string }).categoryName, 'Science');
    assert.equal((sealed[2]!.data as { changes: { price: number } }).changes.price, 5);
    // The inputs are not changed.
    assert.deepEqual(events, samples(mark).map((e, i) => ({ ...e, id: events[i]!.id, subject: events[i]!.subject })));
    assert.deepEqual(await openAll(pd, sealed), events);
  });

  it('opens in another process (another PersonalData on the same store and KEK)', async () => {
    const { pd, store, kek } = setup();
    const events = samples('x');
    const other = makePersonalData({ store, kek });
    assert.deepEqual(await openAll(other, await pd.seal(events)), events);
  });

  it('a destroyed key reads redacted (string, list, nullable), never throws; another person\'s fields stay', async () => {
    const { pd } = setup();
    const events = samples('gone');
    const sealed = await pd.seal(events);
    await pd.destroy(OWNER);
    assert.equal(await pd.isDestroyed(OWNER), true);
    assert.equal(await pd.isDestroyed(AUTHOR), false);
    const opened = await openAll(pd, sealed);
    for (const [i, e] of opened.entries()) {
      assert.equal(e.personaldata, undefined);
      for (const field of fieldsOf(e)) {
        const owner = getAt(e.data, [field.owner]);
        const expected = owner === OWNER ? redactedValue(field.kind) : getAt(events[i]!.data, field.path);
        assert.deepEqual(getAt(e.data, field.path), expected, `${e.type} ${field.path.join('.')}`);
      }
    }
    const upload = opened[1]!.data as { title: string; tags: string[]; videoUrl: string | null; size: number };
    assert.deepEqual([upload.title, upload.tags, upload.videoUrl, upload.size], [REDACTED, [], null, 1234]);
    // The comment: its text is the author's (kept), the file title the destroyed owner's.
    assert.deepEqual(opened[3]!.data, { ...(events[3]!.data as object), fileTitle: REDACTED });
  });

  it('events sealed after the key is destroyed carry nothing and read redacted', async () => {
    const { pd } = setup();
    await pd.destroy(OWNER);
    const [sealed] = await pd.seal([samples('late')[0]!]);
    assert.equal((sealed!.data as { name: string }).name, 'pd1.-');
    assert.equal(JSON.stringify(sealed).includes('late'), false);
    const [opened] = await openAll(pd, [sealed!]);
    assert.deepEqual(opened!.data, { userId: OWNER, name: REDACTED, email: REDACTED, registeredAt: 't' });
  });

  it('a key never made (events sealed elsewhere) reads redacted and is not created by opening', async () => {
    const elsewhere = setup().pd;
    const { pd, store } = setup();
    const opened = await openAll(pd, await elsewhere.seal(samples('y')));
    assert.equal((opened[0]!.data as { name: string }).name, REDACTED);
    assert.deepEqual(await store.list(null, 10), []);
  });

  it('another process stops opening a destroyed key once its cache time has passed', async () => {
    let clock = 1_000_000;
    const now = (): number => clock;
    const { pd, store, kek } = setup({ now, cacheMs: 5_000 });
    const other = makePersonalData({ store, kek, now, cacheMs: 5_000 });
    const sealed = await pd.seal(samples('c'));
    const nameIn = async (reader: PersonalData): Promise<string> => ((await openAll(reader, sealed))[0]!.data as { name: string }).name;
    assert.equal(await nameIn(other), 'Ann c');
    await pd.destroy(OWNER);
    assert.equal(await nameIn(pd), REDACTED);
    // Within its cache time the other process may still open it (what the erasure waits out: cacheMs).
    clock += 4_000;
    assert.equal(await nameIn(other), 'Ann c');
    clock += 1_001;
    assert.equal(await nameIn(other), REDACTED);
  });

  it('events without personaldata pass unchanged, and events with no personal fields are not marked', async () => {
    const { pd } = setup();
    const plain = samples('legacy');
    const records = plain.map((e, i) => stored(e, i + 1));
    assert.deepEqual(await pd.open(records), records);
    const deleted = event('docs.file.deleted.v1', { fileId: 1, ownerId: OWNER, blobKey: 'f1', deletedAt: 't' });
    const [sealedDelete] = await pd.seal([deleted]);
    assert.deepEqual(sealedDelete, deleted);
    // Sealing twice does not seal again.
    const once = await pd.seal(plain);
    assert.deepEqual(await pd.seal(once), once);
  });

  it('an update without personal changes stays as it was, but marked', async () => {
    const { pd } = setup();
    const update = event('docs.file.updated.v1', { fileId: 1, ownerId: OWNER, changes: { price: 3, enabled: false }, updatedAt: 't' });
    const [sealed] = await pd.seal([update]);
    assert.deepEqual(sealed!.data, update.data);
    assert.deepEqual((await openAll(pd, [sealed!]))[0], update);
  });

  it("a person's sealed fields moved to another event or under another person do not open (redacted)", async () => {
    const { pd } = setup();
    const [a, b] = await pd.seal([samples('aad-a')[1]!, samples('aad-b')[1]!]);
    const dataA = a!.data as Record<string, unknown>;
    const dataB = b!.data as Record<string, unknown>;
    // One envelope per person and event, in the person's first field; the others refer to it.
    assert.match(String(dataA['ownerName']), /^pd1\.[A-Za-z0-9_-]{20,}$/);
    assert.equal(dataA['title'], 'pd1.=');
    const movedAcrossEvents = { ...b!, data: { ...dataB, ownerName: dataA['ownerName'] } };
    const [across] = await openAll(pd, [movedAcrossEvents]);
    const out = across!.data as Record<string, unknown>;
    assert.deepEqual([out['ownerName'], out['title'], out['description'], out['tags']], [REDACTED, REDACTED, REDACTED, []]);
    // A value of another person under this person's id does not open either.
    const other = { ...a!, data: { ...dataA, ownerId: AUTHOR } };
    assert.equal(((await openAll(pd, [other]))[0]!.data as { title: string }).title, REDACTED);
    // The event itself still opens.
    assert.equal(((await openAll(pd, [a!]))[0]!.data as { title: string }).title, 'title aad-a');
  });

  it('a tampered or garbage sealed value reads redacted, never throws', async () => {
    const { pd } = setup();
    const [sealed] = await pd.seal([samples('t')[1]!]);
    const data = sealed!.data as Record<string, string>;
    const flip = (s: string): string => s.slice(0, -2) + (s.at(-2) === 'A' ? 'B' : 'A') + s.at(-1);
    const variants = [flip(data['ownerName']!), 'pd1.', 'pd1.%%%', 'not sealed', 'pd1.='];
    for (const envelope of variants) {
      const [opened] = await openAll(pd, [{ ...sealed!, data: { ...data, ownerName: envelope } }]);
      const out = opened!.data as Record<string, unknown>;
      assert.deepEqual([out['ownerName'], out['title'], out['description'], out['tags'], out['originalFileName']],
        [REDACTED, REDACTED, REDACTED, [], REDACTED], envelope);
    }
  });

  it('round-trips any unicode text and any list of it (property)', async () => {
    const { pd } = setup();
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: 'binary' }), fc.array(fc.string({ unit: 'grapheme' })), fc.option(fc.string({ unit: 'binary' }), { nil: null }),
        async (title, tags, videoUrl) => {
          const upload = samples('p')[1]!;
          const original = { ...upload, data: { ...(upload.data as object), title, tags, videoUrl } };
          const [sealed] = await pd.seal([original]);
          const sealedData = sealed!.data as { title: string; tags: string };
          assert.match(sealedData.title, /^pd1\./);
          assert.equal(typeof sealedData.tags, 'string');
          assert.deepEqual((await openAll(pd, [sealed!]))[0], original);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('fetches the keys of many events in one store call', async () => {
    const inner = makeMemoryKeyStore();
    let gets = 0;
    const counting: DataKeyStore = { ...inner, get: (ids) => ((gets += 1), inner.get(ids)) };
    const { pd } = setup({ store: counting, cacheMs: 0 });
    const events = Array.from({ length: 50 }, (_, i) => event('docs.user.registered.v1', { userId: 100 + i, name: `n${i}`, email: `e${i}@x`, registeredAt: 't' }));
    const sealed = await pd.seal(events);
    gets = 0;
    assert.deepEqual(await openAll(pd, sealed), events);
    assert.equal(gets, 1);
  });
});

describe('personal data: values and the e-mail index', () => {
  it('sealValue/openValue round-trip, bound to their aad, redacted once destroyed', async () => {
    const { pd } = setup();
    const sealed = await pd.sealValue(OWNER, 'Ann Ünïcode', 'account/name');
    assert.match(sealed, /^pd1\./);
    assert.equal(await pd.openValue(OWNER, sealed, 'account/name'), 'Ann Ünïcode');
    assert.equal(await pd.openValue(OWNER, sealed, 'account/other'), REDACTED);
    assert.equal(await pd.openValue(AUTHOR, sealed, 'account/name'), REDACTED);
    await pd.destroy(OWNER);
    assert.equal(await pd.openValue(OWNER, sealed, 'account/name'), REDACTED);
    assert.equal(await pd.sealValue(OWNER, 'again', 'account/name'), 'pd1.-');
  });

  it('the e-mail index is stable, trimmed and case-insensitive, and keyed (not a plain hash)', async () => {
    const { pd, store, kek } = setup();
    const index = await pd.emailIndex('ann@example.com');
    assert.match(index, /^[\w-]{43}$/);
    assert.equal(await pd.emailIndex('  Ann@EXAMPLE.com '), index);
    assert.notEqual(await pd.emailIndex('bob@example.com'), index);
    assert.equal(await makePersonalData({ store, kek }).emailIndex('ANN@example.com'), index);
    assert.notEqual(await setup().pd.emailIndex('ann@example.com'), index);
    assert.notEqual(createHash('sha256').update('ann@example.com').digest('base64url'), index);
    assert.equal((await store.get([EMAIL_INDEX_KEY_ID])).get(EMAIL_INDEX_KEY_ID)?.state, 'live');
    // Destroying a person does not touch the index key.
    await pd.destroy(OWNER);
    assert.equal(await makePersonalData({ store, kek }).emailIndex('ann@example.com'), index);
  });
});

describe('personal data: the KEK', () => {
  it('parses kid:key lines and bare keys (kid from the key), the first one current', () => {
    const bare = randomBytes(32);
    const kek = parseKek(`new:${randomBytes(32).toString('base64url')}\n # a comment\n${bare.toString('base64url')}, old:${randomBytes(32).toString('base64url')}`);
    assert.equal(kek.current.kid, 'new');
    const bareKid = createHash('sha256').update(bare).digest('hex').slice(0, 8);
    assert.deepEqual([...kek.byKid.keys()], ['new', bareKid, 'old']);
    assert.throws(() => parseKek(''), /no key/);
    assert.throws(() => parseKek('a:c2hvcnQ'), /32 bytes/);
    const key = randomBytes(32).toString('base64url');
    assert.throws(() => parseKek(`a:${key}\na:${key}`), /twice/);
  });

  it('wraps under the current kid; keys wrapped under an older kid still open; a key moved to another id does not', () => {
    const oldText = kekText('old');
    const before = parseKek(oldText);
    const after = parseKek(`${kekText('new')}\n${oldText}`);
    const dataKey = randomBytes(32);
    const wrappedBefore = wrapKey(before, 'user-1', dataKey);
    assert.equal(wrappedBefore.kid, 'old');
    assert.deepEqual(unwrapKey(after, 'user-1', wrappedBefore), dataKey);
    const wrappedAfter = wrapKey(after, 'user-1', dataKey);
    assert.equal(wrappedAfter.kid, 'new');
    assert.deepEqual(unwrapKey(after, 'user-1', wrappedAfter), dataKey);
    assert.throws(() => unwrapKey(before, 'user-1', wrappedAfter), /new/);
    assert.throws(() => unwrapKey(after, 'user-2', wrappedBefore));
  });

  it('rotation: events sealed under the old KEK open under the new list, and after rewrapping under the new KEK alone', async () => {
    const oldText = kekText('old');
    const store = makeMemoryKeyStore();
    const { pd } = setup({ store, kek: parseKek(oldText) });
    const events = samples('rot');
    const sealed = await pd.seal(events);
    const index = await pd.emailIndex('ann@example.com');

    const newText = kekText('new');
    const rotated = parseKek(`${newText}\n${oldText}`);
    assert.deepEqual(await openAll(makePersonalData({ store, kek: rotated }), sealed), events);
    // Rewrap every key under the new KEK (what a rotation does), then drop the old one.
    let rewrapped = 0;
    for (const { id, key } of await store.list(null, 100)) {
      if (key.state !== 'live') continue;
      assert.equal(await store.rewrap(id, key.wrapped, wrapKey(rotated, id, unwrapKey(rotated, id, key.wrapped))), true);
      rewrapped += 1;
    }
    assert.equal(rewrapped, 3); // the owner, the comment's author, the e-mail index
    const onlyNew = makePersonalData({ store, kek: parseKek(newText) });
    assert.deepEqual(await openAll(onlyNew, sealed), events);
    assert.equal(await onlyNew.emailIndex('ann@example.com'), index);
    const ownerKey = (await store.get([userKeyId(OWNER)])).get(userKeyId(OWNER));
    assert.equal(ownerKey?.state === 'live' ? ownerKey.wrapped.kid : ownerKey?.state, 'new');
  });
});
