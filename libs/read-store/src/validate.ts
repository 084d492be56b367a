import type { Guard, Update } from './port.ts';

/** Fields a read model may not write: the document id and the guard bookkeeping. */
const RESERVED = new Set(['_id', '_seen']);

/** Rejects names Mongo would read as paths or operators, so embedded mode cannot accept what production refuses. */
export function checkName(kind: string, name: string): void {
  if (typeof name !== 'string' || name === '' || name.includes('.') || name.startsWith('$')) {
    throw new Error(`invalid ${kind} name ${JSON.stringify(name)}: must be non-empty, without '.' and not start with '$'`);
  }
}

/** `value` (skip or limit) when absent or a non-negative integer; throws otherwise. */
export function checkCount(kind: string, value: number | undefined): number | undefined {
  if (value !== undefined && !(Number.isInteger(value) && value >= 0)) {
    throw new Error(`${kind} must be a non-negative integer, got ${value}`);
  }
  return value;
}

/**
 * Refuses what Mongo would refuse of an `apply`, before anything is written: a guard with an
 * invalid stream or a non-finite version, an invalid or reserved field name, one field in two
 * operators, an `inc` by anything but a finite number.
 */
export function checkUpdate(update: Update, guard: Guard): void {
  checkName('stream', guard.stream);
  if (typeof guard.version !== 'number' || !Number.isFinite(guard.version)) {
    throw new Error(`guard version must be a finite number, got ${guard.version}`);
  }
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
