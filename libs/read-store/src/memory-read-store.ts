import type { Doc, Filter, FindOptions, GuardedUpdate, ReadStore, Scalar } from './port.ts';
import { afterField, checkCount, checkGuardedUpdate, checkName, checkQueryField, checkSet, compareScalars, fieldsOf } from './validate.ts';

interface Stored {
  id: string;
  /** Top-level fields without `_id`; a Map so names like `__proto__` stay plain data. */
  fields: Map<string, unknown>;
  /** Position of the last update applied: the in-memory twin of Mongo's `_pos`. */
  pos: number;
  /** Insertion order, the final tie-breaker, so index lookups and scans return the same order. */
  seq: number;
}

interface Keyed { stored: Stored; keys: unknown[] }

/** A document as a batch leaves it, before the batch commits. */
interface Staged {
  collection: string;
  id: string;
  existing: Stored | undefined;
  /** A copy of the fields (values are never changed in place, so a shallow one). */
  fields: Map<string, unknown>;
  pos: number;
  touched: Set<string>;
}

/** Equality index of one field: value (null also for missing) -> ids of the documents holding it. */
type FieldIndex = Map<Scalar, Set<string>>;

interface Collection {
  docs: Map<string, Stored>;
  /** Built lazily for every field a filter uses, then maintained on each write. */
  indexes: Map<string, FieldIndex>;
}

/** Above 1/SCAN_RATIO of a collection, scanning it beats gathering and re-ordering index candidates. */
const SCAN_RATIO = 4;

/** Above this many wanted documents (skip + limit), a full sort beats keeping a sorted top list. */
const TOP_LIMIT = 1000;

function copy<T>(value: T): T {
  return value !== null && typeof value === 'object' ? structuredClone(value) : value;
}

/** A value as it will be kept: a copy, with a top-level undefined stored as null like the Mongo driver does. */
function storable(value: unknown): unknown {
  return value === undefined ? null : copy(value);
}

function isScalar(value: unknown): value is Scalar {
  return value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/**
 * The scalar values an equality filter can match in `value`, as Mongo sees them: a missing field
 * equals null, and an array matches any of its elements.
 */
function matchKeys(value: unknown): Scalar[] {
  if (value === undefined) return [null];
  if (isScalar(value)) return [value];
  if (Array.isArray(value)) return value.filter(isScalar);
  return [];
}

/** Whether an equality filter wanting any of `wanted` matches `value`; matchKeys without allocating, as scans call it per document. */
function holds(value: unknown, wanted: Scalar[]): boolean {
  if (Array.isArray(value)) return value.some((element) => isScalar(element) && holds(element, wanted));
  const key = value === undefined ? null : value;
  // An object is never the same as a scalar, so it needs no case of its own.
  for (const w of wanted) if (sameScalar(key, w)) return true;
  return false;
}

function sameScalar(a: unknown, b: Scalar): boolean {
  // SameValueZero, like the Map keys of the index: NaN equals NaN, 0 equals -0.
  return a === b || (a !== a && b !== b);
}

function conditionValues(condition: Filter[string]): Scalar[] {
  return condition !== null && typeof condition === 'object' ? condition.in : [condition];
}

/** Mongo's cross-type order, reduced to the types read models hold: null < numbers < strings < objects < arrays < booleans. */
function typeRank(value: unknown): number {
  if (value === undefined || value === null) return 0;
  if (typeof value === 'number') return 1;
  if (typeof value === 'string') return 2;
  if (Array.isArray(value)) return 4;
  if (typeof value === 'boolean') return 5;
  return 3;
}

function compareValues(a: unknown, b: unknown): number {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 1 || ra === 5) return Number(a) - Number(b);
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  return 0;
}

/** The first `k` of `items` in stable `compare` order, in O(n·log k) for items in random order. */
function firstSorted<T>(items: T[], compare: (a: T, b: T) => number, k: number): T[] {
  const top: T[] = [];
  for (const item of items) {
    const last = top[top.length - 1];
    if (top.length === k && last !== undefined && compare(item, last) >= 0) continue;
    const first = top[0];
    if (first !== undefined && compare(item, first) < 0) {
      // The common case of a listing by date in the order documents arrived.
      top.unshift(item);
      if (top.length > k) top.pop();
      continue;
    }
    // Insert after every equal item: items arrive in insertion order, so ties keep it.
    let lo = 0;
    let hi = top.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const pivot = top[mid];
      if (pivot !== undefined && compare(item, pivot) < 0) hi = mid;
      else lo = mid + 1;
    }
    top.splice(lo, 0, item);
    if (top.length > k) top.pop();
  }
  return top;
}

function fieldOf(stored: Stored, field: string): unknown {
  return field === '_id' ? stored.id : stored.fields.get(field);
}

function toDoc(stored: Stored, only?: ReadonlySet<string>): Doc {
  const fields: [string, unknown][] = [];
  for (const [name, value] of stored.fields) if (!only || only.has(name)) fields.push([name, copy(value)]);
  // `_id` first, then the fields, each an own property (a field named __proto__ included).
  return { _id: stored.id, ...Object.fromEntries(fields) };
}

/** The in-memory read-model store of embedded mode: same semantics as the Mongo adapter, rebuilt from the log at start. */
export function makeMemoryReadStore(): ReadStore {
  const collections = new Map<string, Collection>();
  let nextSeq = 0;

  function collectionOf(name: string, create: true): Collection;
  function collectionOf(name: string, create: boolean): Collection | undefined;
  function collectionOf(name: string, create: boolean): Collection | undefined {
    let collection = collections.get(name);
    if (!collection && create) {
      collection = { docs: new Map(), indexes: new Map() };
      collections.set(name, collection);
    }
    return collection;
  }

  function indexAdd(index: FieldIndex, key: Scalar, id: string): void {
    let ids = index.get(key);
    if (!ids) index.set(key, (ids = new Set()));
    ids.add(id);
  }

  function indexRemove(index: FieldIndex, key: Scalar, id: string): void {
    const ids = index.get(key);
    if (!ids) return;
    ids.delete(id);
    if (ids.size === 0) index.delete(key);
  }

  function indexOf(collection: Collection, field: string): FieldIndex {
    let index = collection.indexes.get(field);
    if (!index) {
      index = new Map();
      for (const stored of collection.docs.values()) {
        for (const key of matchKeys(stored.fields.get(field))) indexAdd(index, key, stored.id);
      }
      collection.indexes.set(field, index);
    }
    return index;
  }

  /**
   * Documents matching `filter`, in insertion order (a scan may stop after `enough`). Starts from the
   * smallest index bucket when it is small enough to beat a scan; a scan already yields insertion
   * order, index buckets do not.
   */
  function select(collection: Collection, filter: Filter, enough = Infinity): Stored[] {
    const conditions = Object.entries(filter).map(([field, condition]) => ({ field, wanted: conditionValues(condition) }));
    const test = (stored: Stored): boolean => {
      for (const { field, wanted } of conditions) {
        if (!holds(field === '_id' ? stored.id : stored.fields.get(field), wanted)) return false;
      }
      return true;
    };

    let narrowest: { field: string; wanted: Scalar[]; size: number } | undefined;
    for (const { field, wanted } of conditions) {
      const size = field === '_id'
        ? wanted.length
        : wanted.reduce<number>((sum, w) => sum + (indexOf(collection, field).get(w)?.size ?? 0), 0);
      if (!narrowest || size < narrowest.size) narrowest = { field, wanted, size };
    }
    const selected: Stored[] = [];
    if (!narrowest || narrowest.size * SCAN_RATIO > collection.docs.size) {
      for (const stored of collection.docs.values()) {
        if (test(stored) && selected.push(stored) >= enough) break;
      }
      return selected;
    }
    const ids = new Set<string>();
    for (const w of narrowest.wanted) {
      if (narrowest.field === '_id') {
        if (typeof w === 'string') ids.add(w);
      } else {
        for (const id of indexOf(collection, narrowest.field).get(w) ?? []) ids.add(id);
      }
    }
    for (const id of ids) {
      const stored = collection.docs.get(id);
      if (stored && test(stored)) selected.push(stored);
    }
    return selected.sort((a, b) => a.seq - b.seq);
  }

  return {
    async applyBatch(updates: readonly GuardedUpdate[]): Promise<number> {
      for (const guarded of updates) checkGuardedUpdate(guarded);

      // Stage every document the batch changes, one update at a time, before changing anything:
      // an update refused by what a document holds then leaves no trace of the batch.
      const staged = new Map<string, Staged>();
      let applied = 0;
      for (const { collection, id, update, position } of updates) {
        const key = `${collection}\u0000${id}`;
        let doc = staged.get(key);
        if (!doc) {
          const existing = collections.get(collection)?.docs.get(id);
          doc = { collection, id, existing, fields: new Map(existing?.fields), pos: existing?.pos ?? 0, touched: new Set() };
          staged.set(key, doc);
        }
        if (position <= doc.pos) continue;
        // A stored document has applied something (pos > 0): pos 0 means it does not exist yet.
        if (doc.pos === 0) {
          for (const [name, value] of Object.entries(update.setOnInsert ?? {})) doc.fields.set(name, storable(value));
        }
        for (const [name, value] of Object.entries(update.set ?? {})) doc.fields.set(name, storable(value));
        for (const [name, by] of Object.entries(update.inc ?? {})) {
          const held = doc.fields.get(name);
          // A missing field counts from 0; null does not (Mongo refuses $inc on null).
          const current = held === undefined ? 0 : held;
          if (typeof current !== 'number') {
            throw new Error(`cannot inc field ${name} of non-numeric value ${JSON.stringify(current)}`);
          }
          doc.fields.set(name, current + by);
        }
        for (const fields of [update.setOnInsert ?? {}, update.set ?? {}, update.inc ?? {}]) {
          for (const name of Object.keys(fields)) doc.touched.add(name);
        }
        doc.pos = position;
        applied++;
      }

      for (const doc of staged.values()) {
        const { existing, id } = doc;
        if (existing && doc.pos === existing.pos) continue;
        const collection = collectionOf(doc.collection, true);
        for (const [field, index] of collection.indexes) {
          if (existing && !doc.touched.has(field)) continue;
          if (existing) for (const key of matchKeys(existing.fields.get(field))) indexRemove(index, key, id);
          for (const key of matchKeys(doc.fields.get(field))) indexAdd(index, key, id);
        }
        if (existing) {
          existing.fields = doc.fields;
          existing.pos = doc.pos;
        } else {
          collection.docs.set(id, { id, fields: doc.fields, pos: doc.pos, seq: nextSeq++ });
        }
      }
      return applied;
    },

    async get(collectionName: string, id: string): Promise<Doc | null> {
      const stored = collectionOf(collectionName, false)?.docs.get(id);
      return stored ? toDoc(stored) : null;
    },

    async find(collectionName: string, filter: Filter, options: FindOptions = {}): Promise<Doc[]> {
      for (const field of Object.keys(filter)) checkQueryField('filter', field);
      for (const [field] of options.sort ?? []) checkQueryField('sort', field);
      const only = fieldsOf(options.fields);
      const pick = (stored: Stored): Doc => toDoc(stored, only);
      const skip = checkCount('skip', options.skip) ?? 0;
      const limit = checkCount('limit', options.limit);
      const collection = collectionOf(collectionName, false);
      if (!collection || limit === 0) return [];
      const sort = options.sort ?? [];
      const end = limit === undefined ? undefined : skip + limit;
      const after = afterField(filter, sort, options.after);
      // Unsorted, insertion order is final: the scan may stop once it has the page.
      let selected = select(collection, filter, sort.length === 0 ? end : undefined);
      if (after) {
        // Past `after` in the sort's direction, same type only (as Mongo's $gt/$lt compare).
        selected = selected.filter((stored) => {
          const value = fieldOf(stored, after.field);
          return typeof value === typeof after.value && compareValues(value, after.value) * after.direction > 0;
        });
      }
      if (sort.length === 0) return selected.slice(skip, end).map(pick);
      // Read each sort key once per document rather than once per comparison.
      const keyed = selected.map((stored) => ({ stored, keys: sort.map(([field]) => fieldOf(stored, field)) }));
      const compare = (a: Keyed, b: Keyed): number => {
        let i = 0;
        for (const [, direction] of sort) {
          const order = compareValues(a.keys[i], b.keys[i]);
          if (order !== 0) return order * direction;
          i++;
        }
        return 0;
      };
      const sorted = end !== undefined && end <= TOP_LIMIT && end * 8 < keyed.length
        ? firstSorted(keyed, compare, end)
        // Array.prototype.sort is stable: equal keys keep insertion order.
        : keyed.sort(compare);
      return sorted.slice(skip, end).map(({ stored }) => pick(stored));
    },

    async count(collectionName: string, filter: Filter): Promise<number> {
      for (const field of Object.keys(filter)) checkQueryField('filter', field);
      const collection = collectionOf(collectionName, false);
      if (!collection) return 0;
      const [only, ...more] = Object.entries(filter);
      if (only && more.length === 0 && only[0] !== '_id') {
        const wanted = conditionValues(only[1]);
        // One field, one value: the index bucket is the answer (a document sits in a bucket once).
        const [one] = wanted;
        if (wanted.length === 1 && one !== undefined) return indexOf(collection, only[0]).get(one)?.size ?? 0;
      }
      return select(collection, filter).length;
    },

    async updateWhere(collectionName: string, filter: Filter, set: Record<string, unknown>): Promise<number> {
      for (const field of Object.keys(filter)) {
        checkName('filter field', field);
        checkQueryField('filter', field);
      }
      checkSet(set);
      const collection = collectionOf(collectionName, false);
      if (!collection) return 0;
      const matched = select(collection, filter);
      const fields = Object.entries(set);
      for (const stored of matched) {
        for (const [name, value] of fields) {
          const index = collection.indexes.get(name);
          if (index) {
            for (const key of matchKeys(stored.fields.get(name))) indexRemove(index, key, stored.id);
          }
          // In place: applyBatch stages copies and never awaits, so no batch is half-way through this document.
          stored.fields.set(name, storable(value));
          if (index) for (const key of matchKeys(stored.fields.get(name))) indexAdd(index, key, stored.id);
        }
      }
      return matched.length;
    },

    async distinct(collectionName: string, field: string, filter: Filter): Promise<Scalar[]> {
      checkName('distinct field', field);
      checkQueryField('distinct', field);
      for (const name of Object.keys(filter)) checkQueryField('filter', name);
      const collection = collectionOf(collectionName, false);
      if (!collection) return [];
      // The matching documents as stored, read in place (find copies each one it returns).
      const values = new Set<Scalar>();
      for (const stored of select(collection, filter)) {
        for (const key of matchKeys(fieldOf(stored, field))) if (key !== null) values.add(key);
      }
      return [...values].sort(compareScalars);
    },

    async clear(): Promise<void> {
      collections.clear();
    },

    async close(): Promise<void> {},
  };
}
