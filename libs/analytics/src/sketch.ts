/**
 * Unique counts (unique viewers, unique downloaders) that fit in a document and merge.
 *
 * A `UniqueCounter` holds the 64-bit hashes of the keys it was given, sorted, as long as there
 * are at most 2^p/16 of them (1,024 at precision 14): the count is then exact, which is what a
 * file with a few dozen readers a day deserves. Past that it turns into a dense HyperLogLog of
 * 2^p one-byte registers (16 KiB at precision 14, standard error 1.04/√2^p = 0.81 %), whose size
 * no longer grows with the keys. The estimate is Ertl's improved raw estimator ("New cardinality
 * estimation algorithms for HyperLogLog sketches", 2017, algorithm 6: the σ and τ corrections),
 * unbiased over the whole range without the empirical bias tables of HyperLogLog++ nor its switch
 * to linear counting, so 10,000 keys are as accurate as 100,000.
 *
 * Counters merge (the union of their keys: a day from its hours, an owner from their files), and
 * adding a key again changes nothing, so a batch replayed after a crash leaves the same counter.
 * `encode` is compact text for a read-model document: `S<p>.` + base64 of the sorted big-endian
 * hashes, or `D<p>.` + base64 of the raw-deflated registers. Equal sets encode equally (with one
 * zlib build: deflate's output is deterministic for a given zlib, not across zlib versions,
 * while `decode` reads any of them). The hash (the first 64 bits of MD5 of the key's UTF-8)
 * is fixed for good: stored counters are merged with counters built later.
 */
import { hash } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';

export type Precision = 12 | 14;
/** The precision of daily counters (per file, per owner): 0.81 % standard error, 16 KiB dense. */
export const DAILY_PRECISION = 14;
/** The precision of hourly counters (trending): 1.6 % standard error, 4 KiB dense. */
export const HOURLY_PRECISION = 12;

const INITIAL_SPARSE = 16;
/** Ertl's α∞ = 1 / (2 ln 2). */
const ALPHA_INF = 1 / (2 * Math.LN2);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

const keyHash = (key: string): Buffer => hash('md5', key, 'buffer');

/** σ(x) of Ertl's paper: the correction for registers still at 0. */
const sigma = (x: number): number => {
  if (x === 1) return Number.POSITIVE_INFINITY;
  let y = 1;
  let z = x;
  for (;;) {
    x *= x;
    const previous = z;
    z += x * y;
    y += y;
    if (z === previous) return z;
  }
};

/** τ(x) of Ertl's paper: the correction for registers at their maximum. */
const tau = (x: number): number => {
  if (x === 0 || x === 1) return 0;
  let y = 1;
  let z = 1 - x;
  for (;;) {
    x = Math.sqrt(x);
    const previous = z;
    y *= 0.5;
    z -= (1 - x) ** 2 * y;
    if (z === previous) return z / 3;
  }
};

/** A set of keys' count: exact while small, HyperLogLog past 2^p/16 keys (see the module's comment). */
export class UniqueCounter {
  readonly precision: Precision;
  /** Sorted distinct hashes (the first `size` entries) while sparse; null once dense. */
  #hashes: BigUint64Array | null;
  #size = 0;
  /** The 2^p registers once dense (each the highest rank seen in its bucket); null while sparse. */
  #registers: Uint8Array | null = null;

  private constructor(precision: Precision, hashes: BigUint64Array | null, size: number, registers: Uint8Array | null) {
    this.precision = precision;
    this.#hashes = hashes;
    this.#size = size;
    this.#registers = registers;
  }

  static empty(precision: Precision): UniqueCounter {
    return new UniqueCounter(checked(precision), new BigUint64Array(INITIAL_SPARSE), 0, null);
  }

  /** From `encode()`'s text; anything else (absent, corrupt, other precision) gives an empty counter, never throws. */
  static decode(encoded: unknown, precision: Precision): UniqueCounter {
    try {
      return UniqueCounter.#decoded(encoded, checked(precision)) ?? UniqueCounter.empty(precision);
    } catch {
      return UniqueCounter.empty(precision);
    }
  }

  /** The most distinct keys counted exactly. */
  get exactUpTo(): number {
    return 2 ** this.precision / 16;
  }

  /** Adds a key; true when the counter changed (false for a key it already holds, or one HyperLogLog cannot tell apart). */
  add(key: string): boolean {
    const digest = keyHash(key);
    if (this.#registers) return this.#addToRegisters(digest.readUInt32BE(0), digest.readUInt32BE(4));
    return this.#addHash(digest.readBigUInt64BE(0));
  }

  /** Adds the other counter's keys (the union); the precisions must be equal. */
  merge(other: UniqueCounter): void {
    if (other.precision !== this.precision) throw new Error(`cannot merge a precision ${other.precision} counter into a precision ${this.precision} one`);
    if (other === this) return;
    const otherRegisters = other.#registers;
    if (otherRegisters) {
      const registers = this.#densify();
      for (let i = 0; i < registers.length; i++) if (otherRegisters[i]! > registers[i]!) registers[i] = otherRegisters[i]!;
      return;
    }
    const otherHashes = other.#hashes!;
    for (let i = 0; i < other.#size; i++) {
      const h = otherHashes[i]!;
      if (this.#registers) this.#addToRegisters(Number(h >> 32n), Number(h & 0xffffffffn));
      else this.#addHash(h);
    }
  }

  /** How many distinct keys: exact while at most `exactUpTo`, else the HyperLogLog estimate (an integer). */
  count(): number {
    const registers = this.#registers;
    if (!registers) return this.#size;
    const q = 64 - this.precision;
    const m = registers.length;
    const histogram = new Array<number>(q + 2).fill(0);
    for (let i = 0; i < m; i++) histogram[registers[i]!]!++;
    let z = m * tau(1 - histogram[q + 1]! / m);
    for (let k = q; k >= 1; k--) z = 0.5 * (z + histogram[k]!);
    z += m * sigma(histogram[0]! / m);
    // z is 0 only when every register is at its maximum (some 2^64 keys): the largest safe count.
    return Math.min(Math.round((ALPHA_INF * m * m) / z), Number.MAX_SAFE_INTEGER);
  }

  /** Compact, stable text (see the module's comment) that `decode` reads back. */
  encode(): string {
    if (this.#registers) return `D${this.precision}.${deflateRawSync(this.#registers, { level: 6 }).toString('base64')}`;
    const bytes = Buffer.allocUnsafe(this.#size * 8);
    for (let i = 0; i < this.#size; i++) bytes.writeBigUInt64BE(this.#hashes![i]!, i * 8);
    return `S${this.precision}.${bytes.toString('base64')}`;
  }

  #addHash(h: bigint): boolean {
    let hashes = this.#hashes!;
    let low = 0;
    let high = this.#size;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (hashes[middle]! < h) low = middle + 1;
      else high = middle;
    }
    if (low < this.#size && hashes[low] === h) return false;
    if (this.#size === this.exactUpTo) {
      this.#densify();
      this.#addToRegisters(Number(h >> 32n), Number(h & 0xffffffffn));
      return true;
    }
    if (this.#size === hashes.length) {
      const grown = new BigUint64Array(Math.min(hashes.length * 2, this.exactUpTo));
      grown.set(hashes);
      this.#hashes = hashes = grown;
    }
    hashes.copyWithin(low + 1, low, this.#size);
    hashes[low] = h;
    this.#size++;
    return true;
  }

  /** Bucket: the hash's first p bits; rank: 1 + the leading zeros of the other 64 - p bits. */
  #addToRegisters(hi: number, lo: number): boolean {
    const p = this.precision;
    const index = hi >>> (32 - p);
    const rest = (hi << p) >>> 0;
    const rank = rest !== 0 ? Math.clz32(rest) + 1 : 32 - p + Math.clz32(lo) + 1;
    const registers = this.#registers!;
    if (rank <= registers[index]!) return false;
    registers[index] = rank;
    return true;
  }

  #densify(): Uint8Array {
    if (this.#registers) return this.#registers;
    const hashes = this.#hashes!;
    this.#registers = new Uint8Array(2 ** this.precision);
    for (let i = 0; i < this.#size; i++) this.#addToRegisters(Number(hashes[i]! >> 32n), Number(hashes[i]! & 0xffffffffn));
    this.#hashes = null;
    this.#size = 0;
    return this.#registers;
  }

  /** The counter `encoded` describes, or null when it is not a valid encoding at `precision`. */
  static #decoded(encoded: unknown, precision: Precision): UniqueCounter | null {
    if (typeof encoded !== 'string') return null;
    const prefix = `${precision}.`;
    const kind = encoded[0];
    if ((kind !== 'S' && kind !== 'D') || !encoded.startsWith(prefix, 1)) return null;
    const text = encoded.slice(1 + prefix.length);
    if (text.length % 4 !== 0 || !BASE64.test(text)) return null;
    const bytes = Buffer.from(text, 'base64');
    if (bytes.toString('base64') !== text) return null;
    const m = 2 ** precision;
    if (kind === 'D') {
      const registers = new Uint8Array(inflateRawSync(bytes, { maxOutputLength: m }));
      if (registers.length !== m || registers.some((rank) => rank > 64 - precision + 1)) return null;
      return new UniqueCounter(precision, null, 0, registers);
    }
    const size = bytes.length / 8;
    if (size > m / 16) return null;
    const hashes = new BigUint64Array(Math.max(size, INITIAL_SPARSE));
    for (let i = 0; i < size; i++) {
      hashes[i] = bytes.readBigUInt64BE(i * 8);
      if (i > 0 && hashes[i]! <= hashes[i - 1]!) return null;
    }
    return new UniqueCounter(precision, hashes, size, null);
  }
}

function checked(precision: Precision): Precision {
  if (precision !== 12 && precision !== 14) throw new Error(`unsupported precision ${String(precision)}`);
  return precision;
}
