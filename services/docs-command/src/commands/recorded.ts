import { partitionKeyOf } from '@docshare/contracts';
import type { Handled } from './command-handler.ts';

/*
 * What the use cases give back about what they recorded (the route turns it into the consistency
 * headers once), and what they tell the process beside their answer (afterCommit, onStored).
 */

/**
 * What a use case recorded, returned with its answer: the position of its newest event (the
 * consistency token the answer carries) and the users whose read models its events change (for
 * the gateway); null when it recorded nothing.
 */
export interface Recorded { position: number; users: number[] }

/** What several appends recorded, as one (the newest position, every user). */
export const recordedBy = (...results: (Handled<unknown> | null | undefined)[]): Recorded | null => {
  let position = 0;
  const users = new Set<number>();
  for (const result of results) {
    if (!result || result.position === null) continue;
    position = Math.max(position, result.position);
    for (const key of result.events.map(partitionKeyOf)) if (key.startsWith('user-')) users.add(Number(key.slice(5)));
  }
  return position > 0 ? { position, users: [...users] } : null;
};

/** The last event an append recorded: where it is in the store and in its stream (afterCommit). */
export interface Committed { position: number; subject: string; version: number }

/** Bytes a recorded command added to the blob store (an upload) or gave back (a deletion). */
export interface StoredChange { kind: 'upload' | 'delete'; bytes: number }
