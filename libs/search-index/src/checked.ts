/**
 * `items[i]` where the code keeps `i` in range (a loop bound, parallel arrays of one length, a
 * binary search): the types cannot say so (noUncheckedIndexedAccess gives `T | undefined`), so the
 * read is checked, and an index out of range is a bug that throws instead of reading `undefined`.
 */
export const at = <T>(items: ArrayLike<T>, i: number): T => {
  const item = items[i];
  if (item === undefined) throw new RangeError(`index ${i} outside 0..${items.length - 1}`);
  return item;
};

/** A plain JSON object (not null, not an array): what a decoded payload must be before its fields are read. */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
