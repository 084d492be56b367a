import { createCipheriv, createDecipheriv, createHmac, randomFillSync } from 'node:crypto';
import type { CloudEvent, StoredEvent } from '@docshare/contracts';
import { PERSONAL_FIELDS, REDACTED, redactedValue, type PersonalField } from './fields.ts';
import { newDataKey, unwrapKey, wrapKey, type Kek } from './kek.ts';
import { EMAIL_INDEX_KEY_ID, userKeyId, type DataKeyStore, type StoredKey } from './port.ts';

/**
 * Crypto-shredding (issue 24): every personal field of an event is sealed (AES-256-GCM) under the
 * data key of the person it belongs to; data keys are wrapped by the KEK and kept in a
 * DataKeyStore. Destroying a person's key erases them from every copy of every event (the event
 * store, the Kafka topic, backups of both) without rewriting history: their fields read
 * REDACTED, and a rebuild reproduces the read models the erasure left.
 */
export interface PersonalData {
  /** The events with every personal field sealed and `personaldata: 'v1'` (keys made on first use). */
  seal(events: readonly CloudEvent[]): Promise<CloudEvent[]>;
  /** The records with their events' personal fields opened (one key fetch per call); a gone key's fields read redacted. */
  open<E extends CloudEvent>(records: readonly StoredEvent<E>[]): Promise<StoredEvent<E>[]>;
  /** One value sealed under a user's key, bound to `aad` (the account claim's name). */
  sealValue(userId: number, value: string, aad: string): Promise<string>;
  /** A value of sealValue opened; REDACTED when the key is gone or the value does not authenticate. */
  openValue(userId: number, sealed: string, aad: string): Promise<string>;
  /** The e-mail's blind index: HMAC-SHA256 under the `email-index` key of the trimmed, lower-cased address (base64url). */
  emailIndex(email: string): Promise<string>;
  /** Destroys the user's key: this process forgets it now, every other within `cacheMs`. */
  destroy(userId: number): Promise<void>;
  /** Whether the user's key is destroyed, asked of the store (never the cache). */
  isDestroyed(userId: number): Promise<boolean>;
  /** How long a process may still use a key after another destroyed it (its cache). */
  readonly cacheMs: number;
}

export interface PersonalDataOptions {
  store: DataKeyStore;
  kek: Kek;
  /** How long an opened key is used before the store is asked again (default 5 s); a destroyed key is remembered for good. */
  cacheMs?: number;
  /** Most keys cached (default 100,000; the least recently fetched leave first). */
  cacheSize?: number;
  now?: () => number;
}

const PREFIX = 'pd1.';
/** A value sealed for a person whose key was already destroyed: nothing to open. */
const SEALED_REDACTED = 'pd1.-';

type Key = Buffer | 'gone';

const getAt = (data: unknown, path: readonly string[]): unknown => {
  let at: unknown = data;
  for (const part of path) {
    if (at === null || typeof at !== 'object') return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
};

/**
 * A copy of `data` (and of each nested object a field's path goes through) that the fields can be
 * written into: stored events may be frozen and are shared by every reader. One copy per event,
 * not one per field.
 */
const writableCopy = (data: Record<string, unknown>, fields: readonly PersonalField[]): Record<string, unknown> => {
  const copy = { ...data };
  for (const field of fields) {
    if (field.path.length !== 2) continue;
    const head = field.path[0]!;
    const nested = data[head];
    if (nested !== null && typeof nested === 'object' && copy[head] === nested) copy[head] = { ...(nested as Record<string, unknown>) };
  }
  return copy;
};

const setIn = (data: Record<string, unknown>, path: readonly string[], value: unknown): void => {
  if (path.length === 1) data[path[0]!] = value;
  else (data[path[0]!] as Record<string, unknown>)[path[1]!] = value;
};

/** 12-byte IVs from a pool refilled 48 KiB at a time: one RNG call per 4,096 fields instead of one each. */
const makeIvs = (): (() => Buffer) => {
  const pool = Buffer.alloc(12 * 4_096);
  let at = pool.length;
  return () => {
    if (at === pool.length) {
      randomFillSync(pool);
      at = 0;
    }
    const iv = Buffer.from(pool.subarray(at, at + 12));
    at += 12;
    return iv;
  };
};
const nextIv = makeIvs();

const ownerOf = (data: unknown, field: PersonalField): number | null => {
  const owner = getAt(data, [field.owner]);
  return typeof owner === 'number' && Number.isSafeInteger(owner) ? owner : null;
};

const encrypt = (key: Buffer, plain: string, aad: string): string => {
  const iv = nextIv();
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad));
  const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return PREFIX + Buffer.concat([iv, ct, cipher.getAuthTag()]).toString('base64url');
};

/** The plain text, or null when it is not a sealed value, was sealed redacted, or does not authenticate under `key`. */
const decrypt = (key: Buffer, sealed: string, aad: string): string | null => {
  if (!sealed.startsWith(PREFIX) || sealed === SEALED_REDACTED || sealed === REF) return null;
  const bytes = Buffer.from(sealed.slice(PREFIX.length), 'base64url');
  if (bytes.length < 28) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, 12));
    decipher.setAAD(Buffer.from(aad));
    decipher.setAuthTag(bytes.subarray(bytes.length - 16));
    return Buffer.concat([decipher.update(bytes.subarray(12, bytes.length - 16)), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
};

/** In a sealed event, a field whose value is in its person's envelope (another field of the same person). */
const REF = 'pd1.=';

interface OwnerGroup { owner: string; fields: readonly PersonalField[] }
const GROUPS = new Map<string, readonly OwnerGroup[]>();
/** An event type's personal fields by the person they belong to (its data field naming them), in PERSONAL_FIELDS' order. */
const groupsOf = (type: string): readonly OwnerGroup[] => {
  let groups = GROUPS.get(type);
  if (groups === undefined) {
    const byOwner = new Map<string, PersonalField[]>();
    for (const field of PERSONAL_FIELDS[type as keyof typeof PERSONAL_FIELDS] ?? []) {
      const list = byOwner.get(field.owner) ?? [];
      list.push(field);
      byOwner.set(field.owner, list);
    }
    groups = [...byOwner].map(([owner, fields]) => ({ owner, fields }));
    GROUPS.set(type, groups);
  }
  return groups;
};

export const makePersonalData = (options: PersonalDataOptions): PersonalData => {
  const { store, kek } = options;
  const cacheMs = options.cacheMs ?? 5_000;
  const cacheSize = options.cacheSize ?? 100_000;
  const now = options.now ?? Date.now;
  const cache = new Map<string, { key: Key; at: number }>();
  /** Stored events opened lately, by the stored object (held only while a reader holds it). */
  let opened = new WeakMap<CloudEvent, { event: CloudEvent; at: number }>();

  const remember = (id: string, key: Key): Key => {
    cache.delete(id);
    cache.set(id, { key, at: now() });
    if (cache.size > cacheSize) cache.delete(cache.keys().next().value as string);
    return key;
  };
  const fresh = (id: string): Key | undefined => {
    const hit = cache.get(id);
    if (hit === undefined) return undefined;
    return hit.key === 'gone' || now() - hit.at < cacheMs ? hit.key : undefined;
  };
  const keyOf = (id: string, stored: StoredKey | undefined): Key =>
    stored === undefined || stored.state === 'destroyed' ? 'gone' : unwrapKey(kek, id, stored.wrapped);

  /** The keys of `ids` when every one is cached (the common case: no promise, no store), else null. */
  const cachedKeys = (ids: Iterable<string>): Map<string, Key> | null => {
    const keys = new Map<string, Key>();
    for (const id of ids) {
      const key = fresh(id);
      if (key === undefined) return null;
      keys.set(id, key);
    }
    return keys;
  };

  /** The keys of `ids` (one store round trip for those not cached); `create` makes the missing ones. */
  const keysOf = async (ids: Iterable<string>, create: boolean): Promise<Map<string, Key>> => {
    const keys = new Map<string, Key>();
    const missing: string[] = [];
    for (const id of ids) {
      const key = fresh(id);
      if (key === undefined) missing.push(id);
      else keys.set(id, key);
    }
    if (missing.length === 0) return keys;
    const stored = await store.get(missing);
    await Promise.all(missing.map(async (id) => {
      let found = stored.get(id);
      if (found === undefined && create) found = await store.create(id, wrapKey(kek, id, newDataKey()));
      // A key never made (create false) is not remembered: it may be made in a moment.
      const key = keyOf(id, found);
      keys.set(id, found === undefined ? key : remember(id, key));
    }));
    return keys;
  };

  const ownersOf = (events: readonly CloudEvent[]): Set<string> => {
    const ids = new Set<string>();
    for (const event of events) {
      for (const field of PERSONAL_FIELDS[event.type as keyof typeof PERSONAL_FIELDS] ?? []) {
        const owner = ownerOf(event.data, field);
        if (owner !== null && getAt(event.data, field.path) !== undefined) ids.add(userKeyId(owner));
      }
    }
    return ids;
  };

  /**
   * Sealed per person, not per field: all of one person's fields in an event are one JSON object
   * sealed once (one cipher per person and event: an upload's six fields cost one), bound to the
   * event and to the data field naming the person (`<event id>/<owner field>`). The envelope goes
   * in the person's first present field; their other present fields hold REF.
   */
  const sealOne = (event: CloudEvent, keys: ReadonlyMap<string, Key>): CloudEvent => {
    const fields = PERSONAL_FIELDS[event.type as keyof typeof PERSONAL_FIELDS];
    if (fields === undefined || event.personaldata !== undefined) return event;
    const data = writableCopy(event.data as Record<string, unknown>, fields);
    for (const group of groupsOf(event.type)) {
      const present = group.fields.filter((field) => { const v = getAt(data, field.path); return v !== undefined && v !== null; });
      if (present.length === 0) continue;
      const owner = ownerOf(data, group.fields[0]!);
      const key = owner === null ? 'gone' : keys.get(userKeyId(owner)) ?? 'gone';
      const values: Record<string, unknown> = {};
      for (const field of present) values[field.path.join('.')] = getAt(data, field.path);
      const envelope = key === 'gone' ? SEALED_REDACTED : encrypt(key, JSON.stringify(values), `${event.id}/${group.owner}`);
      present.forEach((field, i) => setIn(data, field.path, i === 0 ? envelope : REF));
    }
    return { ...event, data, personaldata: 'v1' };
  };

  const openOne = <E extends CloudEvent>(event: E, keys: ReadonlyMap<string, Key>): E => {
    const fields = PERSONAL_FIELDS[event.type as keyof typeof PERSONAL_FIELDS];
    if (fields === undefined || event.personaldata !== 'v1') return event;
    const data = writableCopy(event.data as Record<string, unknown>, fields);
    for (const group of groupsOf(event.type)) {
      const present = group.fields.filter((field) => typeof getAt(data, field.path) === 'string');
      if (present.length === 0) continue;
      const envelope = present.map((field) => getAt(data, field.path) as string).find((value) => value !== REF);
      const owner = ownerOf(data, group.fields[0]!);
      const key = owner === null ? 'gone' : keys.get(userKeyId(owner)) ?? 'gone';
      const plain = key === 'gone' || envelope === undefined ? null : decrypt(key, envelope, `${event.id}/${group.owner}`);
      let values: Record<string, unknown> | null = null;
      if (plain !== null) {
        try {
          const parsed = JSON.parse(plain) as unknown;
          if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) values = parsed as Record<string, unknown>;
        } catch {
          values = null;
        }
      }
      for (const field of present) {
        const value = values?.[field.path.join('.')];
        const fits = field.kind === 'list' ? Array.isArray(value) : typeof value === 'string';
        setIn(data, field.path, fits ? value : redactedValue(field.kind));
      }
    }
    const { personaldata: _sealed, ...rest } = event;
    return { ...rest, data } as E;
  };

  const emailIndexKey = async (): Promise<Buffer> => {
    const key = (await keysOf([EMAIL_INDEX_KEY_ID], true)).get(EMAIL_INDEX_KEY_ID);
    if (key === undefined || key === 'gone') throw new Error('the e-mail index key is destroyed');
    return key;
  };

  return {
    cacheMs,
    async seal(events) {
      const pending = events.filter((event) => event.personaldata === undefined && PERSONAL_FIELDS[event.type as keyof typeof PERSONAL_FIELDS] !== undefined);
      if (pending.length === 0) return [...events];
      const owners = ownersOf(pending);
      const keys = cachedKeys(owners) ?? await keysOf(owners, true);
      return events.map((event) => sealOne(event, keys));
    },
    async open(records) {
      const at = now();
      // A stored event read by several consumers (embedded mode's groups share the log's decoded
      // records) is opened once, and that opening serves for as long as a cached key may.
      const reuse = (event: CloudEvent): CloudEvent | undefined => {
        const hit = opened.get(event);
        return hit !== undefined && at - hit.at < cacheMs ? hit.event : undefined;
      };
      const sealed = records.filter((record) => record.event.personaldata === 'v1' && reuse(record.event) === undefined).map((record) => record.event);
      const owners = ownersOf(sealed);
      const keys = sealed.length === 0 ? new Map<string, Key>() : cachedKeys(owners) ?? await keysOf(owners, false);
      return records.map((record) => {
        if (record.event.personaldata !== 'v1') return record;
        let event = reuse(record.event);
        if (event === undefined) {
          event = openOne(record.event, keys);
          opened.set(record.event, { event, at });
        }
        return { ...record, event: event as typeof record.event };
      });
    },
    async sealValue(userId, value, aad) {
      const key = (await keysOf([userKeyId(userId)], true)).get(userKeyId(userId));
      return key === undefined || key === 'gone' ? SEALED_REDACTED : encrypt(key, value, `value/${aad}`);
    },
    async openValue(userId, sealed, aad) {
      const key = (await keysOf([userKeyId(userId)], false)).get(userKeyId(userId));
      return (key === undefined || key === 'gone' ? null : decrypt(key, sealed, `value/${aad}`)) ?? REDACTED;
    },
    async emailIndex(email) {
      return createHmac('sha256', await emailIndexKey()).update(email.trim().toLowerCase()).digest('base64url');
    },
    async destroy(userId) {
      const id = userKeyId(userId);
      await store.destroy(id, new Date(now()).toISOString());
      remember(id, 'gone');
      // Openings made with the key in this process are not reused (others' last at most cacheMs).
      opened = new WeakMap();
    },
    async isDestroyed(userId) {
      return (await store.get([userKeyId(userId)])).get(userKeyId(userId))?.state === 'destroyed';
    },
  };
};
