/**
 * The one id allocator of both event stores: `nextId(kind)` hands out ids of a block reserved
 * durably by `reserve` (a log record, a unique MongoDB document), one reservation in flight per
 * kind however many callers wait. Ids of a block not handed out before a crash or close are lost:
 * gaps are allowed, a repeat never.
 */
export interface IdRange {
  /** First id of the reserved block. */
  from: number;
  /** Last id of the reserved block. */
  upTo: number;
}

interface IdBlock {
  next: number;
  /** Highest id reserved durably. */
  limit: number;
  reserving: Promise<void> | null;
}

export interface IdAllocator {
  nextId(kind: string): Promise<number>;
  /** Blocks already reserved before this process (a log's records): ids go on after `upTo`. */
  resume(kind: string, upTo: number): void;
}

/** `reserve(kind, lastUpTo)` makes the next block of `kind` durable; `assertOpen` throws once the store cannot. */
export function idAllocator(
  reserve: (kind: string, lastUpTo: number) => Promise<IdRange>, assertOpen: () => void,
): IdAllocator {
  const blocks = new Map<string, IdBlock>();
  const blockOf = (kind: string): IdBlock => {
    let block = blocks.get(kind);
    if (!block) blocks.set(kind, (block = { next: 1, limit: 0, reserving: null }));
    return block;
  };
  return {
    resume(kind, upTo) {
      const block = blockOf(kind);
      if (upTo > block.limit) Object.assign(block, { next: upTo + 1, limit: upTo });
    },
    async nextId(kind) {
      if (typeof kind !== 'string' || kind === '') throw new Error('nextId needs a non-empty kind');
      assertOpen();
      const block = blockOf(kind);
      while (block.next > block.limit) {
        assertOpen();
        block.reserving ??= reserve(kind, block.limit).then((range) => {
          block.next = range.from;
          block.limit = range.upTo;
        }).finally(() => {
          block.reserving = null;
        });
        await block.reserving;
      }
      return block.next++;
    },
  };
}
