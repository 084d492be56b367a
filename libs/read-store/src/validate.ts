import type { GuardedUpdate, Scalar, Update } from './port.ts';

/**
 * Fields a read model may not write: the document id (writable by no update) and the position
 * guard `_pos`, which it may not filter or sort on either (reads hide it).
 */
const RESERVED = new Set(['_id', '_pos']);
const BOOKKEEPING = new Set(['_pos']);

/** Rejects names Mongo would read as paths or operators, so embedded mode cannot accept what production refuses. */
export function checkName(kind: string, name: string): void {
  if (typeof name !== 'string' || name === '' || name.includes('.') || name.startsWith('$')) {
    throw new Error(`invalid ${kind} name ${JSON.stringify(name)}: must be non-empty, without '.' and not start with '$'`);
  }
}

/** The order `distinct` answers in: numbers, then strings by code unit, then booleans (Mongo's, for these types). */
export function compareScalars(a: Scalar, b: Scalar): number {
  const rank = (v: Scalar): number => (v === null ? 0 : typeof v === 'number' ? 1 : typeof v === 'string' ? 2 : 3);
  if (rank(a) !== rank(b)) return rank(a) - rank(b);
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  return 0;
}

/** Refuses a filter or sort on the guard bookkeeping, which reads never show. */
export function checkQueryField(kind: string, name: string): void {
  if (BOOKKEEPING.has(name)) throw new Error(`cannot ${kind} on ${name}: it is reserved`);
}

/** The fields a find keeps (FindOptions.fields), checked; undefined keeps every field. */
export function fieldsOf(fields: readonly string[] | undefined): ReadonlySet<string> | undefined {
  if (fields === undefined) return undefined;
  for (const field of fields) {
    checkName('field', field);
    checkQueryField('select', field);
  }
  return new Set(fields);
}

/** `value` (skip or limit) when absent or a non-negative integer; throws otherwise. */
export function checkCount(kind: string, value: number | undefined): number | undefined {
  if (value !== undefined && !(Number.isInteger(value) && value >= 0)) {
    throw new Error(`${kind} must be a non-negative integer, got ${value}`);
  }
  return value;
}

/**
 * Refuses what Mongo would refuse of an update, before anything is written: an invalid or
 * reserved field name, one field in two operators, an `inc` by anything but a finite number.
 */
function checkUpdate(update: Update): void {
  if (update === null || typeof update !== 'object') throw new Error('update must be an object');
  const touched = new Set<string>();
  for (const fields of [update.setOnInsert ?? {}, update.set ?? {}, update.inc ?? {}]) {
    for (const name of Object.keys(fields)) {
      checkName('field', name);
      if (RESERVED.has(name)) throw new Error(`field ${name} is reserved`);
      // Mongo refuses one path in two operators; refusing it up front names the field (and keeps embedded mode honest).
      if (touched.has(name)) throw new Error(`field ${name} appears in more than one operator`);
      touched.add(name);
    }
  }
  for (const [name, by] of Object.entries(update.inc ?? {})) {
    if (typeof by !== 'number' || !Number.isFinite(by)) throw new Error(`inc of ${name} must be a finite number`);
  }
}

/** Refuses the `set` of an `updateWhere` as applyBatch would refuse it in an update. */
export function checkSet(set: Record<string, unknown>): void {
  if (set === null || typeof set !== 'object' || Array.isArray(set)) throw new Error('set must be an object');
  checkUpdate({ set });
}

/** The field `after` pages on (FindOptions.after): the first sort field, which the filter may not hold; undefined without `after`. */
export function afterField(filter: Record<string, unknown>, sort: readonly (readonly [string, 1 | -1])[] | undefined, after: unknown): { field: string; direction: 1 | -1; value: number | string } | undefined {
  if (after === undefined) return undefined;
  if (!(typeof after === 'string' || (typeof after === 'number' && Number.isFinite(after)))) {
    throw new Error(`after must be a finite number or a string, got ${String(after)}`);
  }
  const first = sort?.[0];
  if (first === undefined) throw new Error('after needs a sort: it pages on the first sort field');
  const [field, direction] = first;
  if (Object.hasOwn(filter, field)) throw new Error(`after pages on ${field}, which the filter may not hold too`);
  return { field, direction, value: after };
}

/** Refuses an invalid member of an `applyBatch`: see checkUpdate, plus the id and the position. */
export function checkGuardedUpdate(guarded: GuardedUpdate): void {
  if (guarded === null || typeof guarded !== 'object') throw new Error('guarded update must be an object');
  const { collection, id, update, position } = guarded;
  if (typeof collection !== 'string' || collection === '') throw new Error(`invalid collection name ${JSON.stringify(collection)}`);
  if (typeof id !== 'string') throw new Error('document id must be a string');
  if (!Number.isSafeInteger(position) || position <= 0) {
    throw new Error(`position must be a positive safe integer, got ${String(position)}`);
  }
  checkUpdate(update);
}
