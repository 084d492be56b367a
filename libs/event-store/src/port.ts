import type { CloudEvent, StoredEvent } from '@docshare/contracts';

/** Thrown by `append` when the stream's current version is not the expected one. */
export class VersionConflict extends Error {
  readonly streamId: string;
  readonly expected: number;
  readonly actual: number;
  constructor(streamId: string, expected: number, actual: number) {
    super(`stream ${streamId} is at version ${actual}, expected ${expected}`);
    this.name = 'VersionConflict';
    this.streamId = streamId;
    this.expected = expected;
    this.actual = actual;
  }
}

export interface AppendResult {
  /** The stream's version after the append. */
  version: number;
  /** Global position of the last appended event. */
  position: number;
}

/**
 * The write side's source of truth: streams of events, appended with an expected version.
 * An append that resolves is durable (it survives a crash of the process the next instant).
 */
export interface EventStore {
  /** Events of one stream with `streamversion > afterVersion`, in stream order; [] for an unknown stream. */
  readStream(streamId: string, afterVersion?: number): Promise<StoredEvent<CloudEvent>[]>;
  /**
   * Appends `events` (whose `subject` is `streamId` and whose `streamversion`s run on from
   * `expectedVersion + 1`) if the stream is exactly at `expectedVersion` (0 = no stream yet).
   * Throws VersionConflict otherwise, appending nothing.
   */
  append(streamId: string, expectedVersion: number, events: readonly CloudEvent[]): Promise<AppendResult>;
  /**
   * Appends events that belong to no stream (each `streamversion` 0; `subject` says what they are
   * about): never a VersionConflict, never read by readStream (not even the stream named by their
   * subject), in readAll at their positions like every event. Durable when it resolves; concurrent
   * calls are group-committed like appends. Resolves to the position of the last event.
   */
  appendUnversioned(events: readonly CloudEvent[]): Promise<{ position: number }>;
  /** Up to `limit` events with `position > afterPosition` (of every stream, and unversioned ones), in global order. */
  readAll(afterPosition: number, limit: number): Promise<StoredEvent<CloudEvent>[]>;
  /** Position of the newest event (0 when empty). */
  lastPosition(): Promise<number>;
  /** A fresh integer id for `kind` (users, files, ...): never handed out twice, even across restarts. */
  nextId(kind: string): Promise<number>;
  close(): Promise<void>;
}
