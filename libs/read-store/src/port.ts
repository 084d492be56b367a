/**
 * Which event an update comes from: a document applies it only if it has not yet seen `stream` at
 * `version` or later. A `stream` that is empty, holds '.' or starts with '$', or a non-finite
 * `version`, is refused.
 */
export interface Guard { stream: string; version: number }

export type Scalar = string | number | boolean | null;

/**
 * A MongoDB-shaped update of top-level fields. Refused (nothing written, the guard not recorded)
 * as Mongo would refuse it: a field name that is empty, holds '.' or starts with '$'; `_id` or
 * `_seen`; one field in two operators; an `inc` by a non-finite number or of a non-numeric field
 * (null included; a missing field counts from 0). A top-level `undefined` is stored as null.
 */
export interface Update {
  set?: Record<string, unknown>;
  inc?: Record<string, number>;
  setOnInsert?: Record<string, unknown>;
}

/** Equality on top-level fields, or `{ in: [...] }`: a missing field equals null, an array matches by any element. */
export type Filter = Record<string, Scalar | { in: Scalar[] }>;

export interface FindOptions {
  /** Fields to sort by, in order; 1 ascending, -1 descending. */
  sort?: [field: string, direction: 1 | -1][];
  skip?: number;
  limit?: number;
}

/** A stored document: its fields plus `_id`. */
export type Doc = Record<string, unknown> & { _id: string };

/**
 * Documents of read models, updated idempotently: every update names the event it comes from,
 * and a document ignores an update from an event it already reflects. Implementable with plain
 * MongoDB (or FerretDB 1.x) upserts: no transactions, no aggregation.
 */
export interface ReadStore {
  /** Upserts (collection, id) with `update` unless the document already reflects `guard`; true when applied. */
  apply(collection: string, id: string, update: Update, guard: Guard): Promise<boolean>;
  get(collection: string, id: string): Promise<Doc | null>;
  find(collection: string, filter: Filter, options?: FindOptions): Promise<Doc[]>;
  count(collection: string, filter: Filter): Promise<number>;
  /** Removes every document of every collection (used before a rebuild). */
  clear(): Promise<void>;
  close(): Promise<void>;
}
