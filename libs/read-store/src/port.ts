/**
 * One change to one document, from the event at `position` (the event's 1-based place in the
 * global event log).
 */
export interface GuardedUpdate { collection: string; id: string; update: Update; position: number }

export type Scalar = string | number | boolean | null;

/**
 * A MongoDB-shaped update of top-level fields. Refused (nothing written, no position recorded)
 * as Mongo would refuse it: a field name that is empty, holds '.' or starts with '$'; `_id` or
 * `_pos`; one field in two operators; an `inc` by a non-finite number or of a non-numeric field (null included; a missing
 * field counts from 0). A top-level `undefined` is stored as null.
 */
export interface Update {
  set?: Record<string, unknown>;
  inc?: Record<string, number>;
  setOnInsert?: Record<string, unknown>;
}

/**
 * Equality on top-level fields, or `{ in: [...] }`: a missing field equals null, an array matches
 * by any element. `_pos` is refused (in sorts too).
 */
export type Filter = Record<string, Scalar | { in: Scalar[] }>;

export interface FindOptions {
  /** Fields to sort by, in order; 1 ascending, -1 descending. */
  sort?: [field: string, direction: 1 | -1][];
  skip?: number;
  limit?: number;
  /**
   * Only these top-level fields of each document (and `_id`), when given: what a query that does
   * not need a document's large fields (a sketch) leaves in the store. A field a document lacks is
   * absent from it. `_pos` is refused.
   */
  fields?: readonly string[];
  /**
   * Keyset paging: only documents whose FIRST sort field holds a value of the same type as `after`
   * and past it in that field's direction (greater ascending, smaller descending): the page after
   * the last one seen, at the cost of the page on an index ending with that field, where `skip`
   * would cost every page before it too and would shift when earlier documents leave the filter.
   * Needs a sort; the field may not be in the filter. A document without the field, or holding
   * another type there, is never past it (an array there: unspecified; page on scalar fields).
   */
  after?: number | string;
}

/** A stored document: its fields plus `_id`. */
export type Doc = Record<string, unknown> & { _id: string };

/**
 * Documents of read models, updated idempotently: every update carries the position of the event
 * it comes from, and a document ignores an update from an event it already reflects. Implementable
 * with plain MongoDB single-document upserts: no transactions, no aggregation.
 *
 * What callers guarantee: all updates of one document come from ONE writer at a time (the
 * projector that owns the Kafka partition the document's events are on), in increasing position
 * order, and one event makes at most one update per document (a second update of the same
 * document at the same position is skipped as already applied). Concurrent `applyBatch` calls
 * must not touch the same document.
 */
export interface ReadStore {
  /**
   * Applies `updates` as if one at a time, in array order: each applies only when its document has
   * not yet applied an update at `position` or later, and an applied one records `position` on the
   * document (field `_pos`, never returned by get/find, refused as a field name in updates, filters
   * and sorts). A missing document has applied nothing (an applied update upserts it). So a
   * redelivered or replayed update changes nothing, and a batch that was half applied before a
   * crash can be applied again whole. Resolves to the number of updates applied.
   *
   * Every update is validated first: one invalid update (see Update; a position that is not a
   * positive safe integer; an id that is not a string) rejects the batch and nothing is written.
   * An update refused only by what its document holds (an `inc` of a non-numeric field) rejects
   * the batch too, and is not applied: the memory store then has written nothing of the batch, the
   * MongoDB store may have written other updates of it (which a redelivery does not apply twice).
   */
  applyBatch(updates: readonly GuardedUpdate[]): Promise<number>;
  get(collection: string, id: string): Promise<Doc | null>;
  find(collection: string, filter: Filter, options?: FindOptions): Promise<Doc[]>;
  count(collection: string, filter: Filter): Promise<number>;
  /**
   * Sets `set`'s fields on every document of `collection` matching `filter`, whatever position each
   * one applied, and leaves that position as it was: an UNGUARDED change, for what one event says
   * of documents that other partitions write (a user's erasure redacts every comment they wrote,
   * each written from its file's partition), which a newer position there must not stop. Creates
   * no document; idempotent when `set` holds constants. A guarded update still applies over it
   * later, so the caller sends it after every guarded update it must cover. Refuses what
   * applyBatch refuses of a `set` (names, `_id`, `_pos`) and what find refuses of a filter, writing
   * nothing. Resolves to the number of documents matched. One multi-document update on MongoDB:
   * each document is changed atomically, not the set of them (a retry after a crash finishes it).
   */
  updateWhere(collection: string, filter: Filter, set: Record<string, unknown>): Promise<number>;
  /**
   * The distinct scalar values of `field` over the documents matching `filter`, ascending (numbers,
   * then strings by code unit, then booleans); an array field gives its elements. Documents
   * without the field, or holding null or an object there, give nothing. Costs the matching
   * documents on a scan, the distinct values on an index whose prefix is the filter's fields and
   * then `field` (MongoDB's DISTINCT_SCAN).
   */
  distinct(collection: string, field: string, filter: Filter): Promise<Scalar[]>;
  /** Removes every document of every collection (used before a rebuild). */
  clear(): Promise<void>;
  close(): Promise<void>;
}
