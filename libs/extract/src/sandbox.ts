/**
 * The containment around text extraction. The format libraries parse untrusted bytes: a file can
 * make one loop forever, allocate without bound or crash. So extraction runs in child processes
 * (a small pool, reused across files), each with a V8 heap limit, watched by this parent: killed
 * after the time budget, or when its resident memory passes the memory budget. Whatever a child
 * does, the parent carries on and every job settles exactly once with an outcome.
 */
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { availableParallelism, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { ExtractFormat, ExtractionFailure } from '@docshare/contracts';
import { EXTRACTION_FAILURES } from '@docshare/contracts';
import { shortMessage } from './extract.ts';
import { detectFormat } from './formats.ts';
import type { FormatHint } from './formats.ts';
import type { JobReply, JobRequest } from './protocol.ts';

/** The most characters of text kept per file: the text travels in a Kafka event (1 MB limit). */
export const MAX_EXTRACT_CHARS = 200_000;

export interface ExtractorOptions {
  /** Wall-clock budget per file, from the moment a child takes it: then the child is killed (`timeout`). */
  timeoutMs: number;
  /** Memory budget per child: its V8 heap limit, and the resident size above which it is killed (`memory`). */
  memoryMb: number;
  /** Characters of text kept per file (capped at MAX_EXTRACT_CHARS); more is cut (`truncated`). */
  maxChars: number;
  /** Files larger than this are refused (`too_large`) without starting anything. */
  maxBytes: number;
  /** Children extracting at once (default 1; defaultConcurrency() sizes it to the machine); further files wait in a queue. */
  concurrency?: number;
  /** Test hook: the child's entry module (a file path) instead of worker.ts. */
  workerModule?: string;
  /** Test hook: told whenever a child process ends. */
  onWorkerExit?: (info: WorkerExit) => void;
}

/** How a child ended, as `onWorkerExit` is told. */
export interface WorkerExit {
  pid: number | undefined;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Why the parent killed it, or null when it ended on its own. */
  killedFor: 'timeout' | 'memory' | 'error' | 'recycle' | 'close' | null;
}

export type ExtractOutcome =
  | {
    ok: true; format: ExtractFormat; extractor: string; text: string; characters: number;
    truncated: boolean; language: string | null; durationMs: number;
  }
  | { ok: false; format: ExtractFormat | null; reason: ExtractionFailure; detail: string; durationMs: number };

export interface ExtractorStats {
  /** Child processes alive now. */
  children: number;
  /** Children extracting a file now. */
  busy: number;
  /** Files waiting for a child. */
  queued: number;
  /** Files settled so far (any outcome). */
  settled: number;
  /** Child processes started so far (the first ones and every respawn). */
  spawned: number;
  /** The largest resident size seen of any child while it extracted, in bytes (0 without /proc). */
  peakChildRssBytes: number;
}

export interface Extractor {
  /** Extracts a file's text; always resolves, with the text or the reason there is none. */
  extract(bytes: Uint8Array, hint: FormatHint): Promise<ExtractOutcome>;
  /** Kills the children; files pending or in progress settle with reason `error` ('extractor closed'). */
  close(): Promise<void>;
  stats(): ExtractorStats;
}

/** How often a busy child's resident size is read. */
const RSS_POLL_MS = 50;
/** A child whose resident size after a file is above this share of the budget is replaced (V8 rarely gives memory back). */
const RECYCLE_RSS_SHARE = 0.5;
/** A child is replaced after this many files, so slow leaks in a library never add up. */
const RECYCLE_AFTER_FILES = 500;
/** Characters of a child's stderr kept, to recognise V8's out-of-memory report. */
const STDERR_TAIL_CHARS = 2_048;
/** What V8 prints when a heap limit is reached, just before the process aborts. */
const HEAP_OOM = /heap out of memory|Reached heap limit|Allocation failed/i;

const DEFAULT_WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));
const HAS_PROC = existsSync('/proc/self/status');

/** A file waiting for, or being read by, a child. */
interface Job {
  id: number;
  bytes: Uint8Array;
  format: ExtractFormat;
  maxChars: number;
  settle: (outcome: ExtractOutcome) => void;
  startedAt: number;
}

/** A child process and the file it is reading (null when idle). */
interface Child {
  process: ChildProcess;
  job: Job | null;
  files: number;
  lastRss: number;
  stderrTail: string;
  killedFor: WorkerExit['killedFor'];
  timer: NodeJS.Timeout | undefined;
  poller: NodeJS.Timeout | undefined;
  exited: Promise<void>;
}

/** The resident size (VmRSS) of a process in bytes, or null when it cannot be read (gone, no /proc). */
export async function residentBytes(pid: number): Promise<number | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/**
 * Why a child that ended without answering failed its file: V8 reporting its heap limit (on
 * stderr, then aborting) is `memory`; any other death is `error`.
 */
export function exitReason(code: number | null, signal: NodeJS.Signals | null, stderrTail: string): { reason: ExtractionFailure; detail: string } {
  if (HEAP_OOM.test(stderrTail)) return { reason: 'memory', detail: 'the extraction process ran out of memory (heap limit reached)' };
  const how = signal ? `signal ${signal}` : `code ${code}`;
  return { reason: 'error', detail: `the extraction process exited unexpectedly (${how})` };
}

/** A reply is only believed when it has the shape the protocol promises (the child reads hostile files). */
function isReply(message: unknown): message is JobReply {
  if (typeof message !== 'object' || message === null) return false;
  const reply = message as Record<string, unknown>;
  if (typeof reply.id !== 'number') return false;
  if (reply.ok === true) {
    return typeof reply.text === 'string' && typeof reply.truncated === 'boolean' && typeof reply.extractor === 'string'
      && (reply.language === null || typeof reply.language === 'string');
  }
  return reply.ok === false && typeof reply.detail === 'string'
    && (EXTRACTION_FAILURES as readonly unknown[]).includes(reply.reason);
}

/**
 * The child's Node options: a V8 heap limit of the memory budget and small young generation (so
 * the resident size tracks the heap), and no native addons or code generation from strings (none
 * of the libraries need them; a hostile file gets fewer tools). The parent's own flags (test runner,
 * inspector) are not inherited.
 */
function childExecArgv(memoryMb: number): string[] {
  return [
    `--max-old-space-size=${memoryMb}`,
    '--max-semi-space-size=2',
    '--disallow-code-generation-from-strings',
    '--no-addons',
  ];
}

/**
 * The pool size that uses the machine: one child per core (os.availableParallelism()), but no more
 * than half the memory (the container's limit where there is one, else the machine's) holds at the
 * memory budget, and at least one. (Not at a lower CPU priority: the budgets are wall-clock time, so
 * on a busy machine a niced child runs out of time on files it would read, and its owner is demoted.)
 */
export function defaultConcurrency(memoryMb: number, cores = availableParallelism(), memoryBytes = memoryAvailable()): number {
  return Math.max(1, Math.min(cores, Math.floor(memoryBytes / 2 / (memoryMb * 1024 * 1024))));
}

/** The container's memory limit (cgroup) when it has one, else the machine's memory. */
function memoryAvailable(): number {
  const constrained = process.constrainedMemory();
  return Math.min(constrained > 0 ? constrained : Infinity, totalmem());
}

/** Makes an Extractor: see the module comment. Children start on the first file, not here. */
export function makeExtractor(options: ExtractorOptions): Extractor {
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 1));
  const maxChars = Math.max(0, Math.min(Math.floor(options.maxChars), MAX_EXTRACT_CHARS));
  const rssLimit = options.memoryMb * 1024 * 1024;
  const workerModule = options.workerModule ?? DEFAULT_WORKER;
  const slots: Array<Child | null> = Array.from({ length: concurrency }, () => null);
  const queue: Job[] = [];
  const exits = new Set<Promise<void>>();
  let nextId = 1;
  let closed = false;
  let settled = 0;
  let spawned = 0;
  let peakChildRssBytes = 0;

  /** Keeps the parent's event loop alive while a child works, and lets the parent exit while it idles. */
  const hold = (child: Child, busy: boolean): void => {
    const handles = [child.process, child.process.channel, child.process.stderr as Socket | null];
    for (const handle of handles) {
      if (busy) handle?.ref?.();
      else handle?.unref?.();
    }
  };

  const stopWatching = (child: Child): void => {
    clearTimeout(child.timer);
    clearInterval(child.poller);
    child.timer = undefined;
    child.poller = undefined;
  };

  /** Ends a child (SIGKILL: it may be stuck in a loop) and frees its slot; its 'close' handler reports it. */
  const kill = (child: Child, why: NonNullable<WorkerExit['killedFor']>): void => {
    stopWatching(child);
    child.killedFor ??= why;
    const slot = slots.indexOf(child);
    if (slot >= 0) slots[slot] = null;
    // An idle child is unreferenced: reference it again, so whoever awaits its exit (close()) gets it.
    hold(child, true);
    try {
      child.process.kill('SIGKILL');
    } catch {
      // Already gone: its 'close' still comes.
    }
  };

  /** Settles the child's current file (once) and leaves the child idle. */
  const finish = (child: Child, outcome: ExtractOutcome): void => {
    const job = child.job;
    if (!job) return;
    child.job = null;
    stopWatching(child);
    job.settle(outcome);
  };

  const failure = (job: Job, reason: ExtractionFailure, detail: string): ExtractOutcome =>
    ({ ok: false, format: job.format, reason, detail, durationMs: Math.round(performance.now() - job.startedAt) });

  /** Fails the child's current file and kills the child: after a timeout, over budget or a broken channel. */
  const abort = (child: Child, reason: ExtractionFailure, detail: string): void => {
    const job = child.job;
    kill(child, reason === 'timeout' || reason === 'memory' ? reason : 'error');
    if (job) finish(child, failure(job, reason, detail));
    dispatch();
  };

  const pollRss = async (child: Child, pid: number): Promise<void> => {
    const rss = await residentBytes(pid);
    if (rss === null || !child.job) return;
    child.lastRss = rss;
    peakChildRssBytes = Math.max(peakChildRssBytes, rss);
    if (rss > rssLimit) abort(child, 'memory', `the extraction process used more than ${options.memoryMb} MB`);
  };

  const onReply = (child: Child, message: unknown): void => {
    const job = child.job;
    if (!job || !isReply(message) || message.id !== job.id) {
      if (job) abort(child, 'error', 'the extraction process sent a malformed reply');
      return;
    }
    const durationMs = Math.round(performance.now() - job.startedAt);
    finish(child, message.ok
      ? {
        ok: true, format: job.format, extractor: message.extractor, text: message.text, characters: message.text.length,
        truncated: message.truncated, language: message.language, durationMs,
      }
      : { ok: false, format: job.format, reason: message.reason, detail: shortMessage(message.detail), durationMs });
    child.files += 1;
    if (child.files >= RECYCLE_AFTER_FILES || child.lastRss > rssLimit * RECYCLE_RSS_SHARE) kill(child, 'recycle');
    else hold(child, false);
    dispatch();
  };

  const onClose = (child: Child, code: number | null, signal: NodeJS.Signals | null): void => {
    stopWatching(child);
    const slot = slots.indexOf(child);
    if (slot >= 0) slots[slot] = null;
    if (child.job) {
      const { reason, detail } = exitReason(code, signal, child.stderrTail);
      finish(child, failure(child.job, reason, detail));
    }
    try {
      options.onWorkerExit?.({ pid: child.process.pid, code, signal, killedFor: child.killedFor });
    } catch {
      // A test hook's failure is not the extractor's.
    }
    dispatch();
  };

  const spawn = (): Child => {
    const proc = fork(workerModule, [], {
      serialization: 'advanced',
      execArgv: childExecArgv(options.memoryMb),
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    spawned += 1;
    let resolveExit = (): void => {};
    const exited = new Promise<void>((resolve) => { resolveExit = resolve; });
    const child: Child = {
      process: proc, job: null, files: 0, lastRss: 0, stderrTail: '', killedFor: null, timer: undefined, poller: undefined, exited,
    };
    exits.add(exited);
    void exited.then(() => exits.delete(exited));
    proc.stderr?.setEncoding('utf8');
    proc.stderr?.on('data', (text: string) => {
      child.stderrTail = (child.stderrTail + text).slice(-STDERR_TAIL_CHARS);
    });
    proc.stderr?.on('error', () => {});
    proc.on('message', (message) => onReply(child, message));
    proc.on('error', (error) => {
      if (child.job) abort(child, 'error', `the extraction process failed: ${shortMessage(error)}`);
      else kill(child, 'error');
    });
    proc.channel?.on?.('error', () => {});
    proc.on('close', (code, signal) => {
      onClose(child, code, signal);
      resolveExit();
    });
    return child;
  };

  /** Hands a file to a child: starts its time budget and memory watch, then sends the bytes. */
  const start = (child: Child, job: Job): void => {
    child.job = job;
    job.startedAt = performance.now();
    hold(child, true);
    child.timer = setTimeout(() => abort(child, 'timeout', `no text within ${options.timeoutMs} ms`), options.timeoutMs);
    const pid = child.process.pid;
    if (HAS_PROC && pid !== undefined) {
      void pollRss(child, pid);
      child.poller = setInterval(() => void pollRss(child, pid), RSS_POLL_MS);
    }
    const request: JobRequest = { id: job.id, bytes: job.bytes, format: job.format, maxChars: job.maxChars };
    const onSendError = (error: unknown): void => {
      if (child.job === job) abort(child, 'error', `could not hand the file to the extraction process: ${shortMessage(error)}`);
    };
    try {
      child.process.send(request, undefined, {}, (error) => {
        if (error) onSendError(error);
      });
    } catch (error) {
      onSendError(error);
    }
  };

  /** Gives queued files to idle children, starting children as needed. */
  function dispatch(): void {
    if (closed) return;
    for (let slot = 0; slot < slots.length && queue.length > 0; slot += 1) {
      const current = slots[slot];
      if (current?.job) continue;
      const child = current ?? spawn();
      slots[slot] = child;
      const job = queue.shift();
      if (job) start(child, job);
    }
  }

  const immediate = (format: ExtractFormat | null, reason: ExtractionFailure, detail: string): ExtractOutcome =>
    ({ ok: false, format, reason, detail, durationMs: 0 });

  return {
    extract(bytes, hint) {
      const format = detectFormat(hint, bytes.subarray(0, 8));
      if (closed) return Promise.resolve(immediate(format, 'error', 'extractor closed'));
      if (bytes.byteLength > options.maxBytes) {
        return Promise.resolve(immediate(format, 'too_large', `the file is larger than ${options.maxBytes} bytes`));
      }
      if (format === null) {
        return Promise.resolve(immediate(null, 'unsupported_type', `no text is extracted from ${hint.contentType || 'this type of file'}`));
      }
      return new Promise<ExtractOutcome>((resolve) => {
        let done = false;
        const settle = (outcome: ExtractOutcome): void => {
          if (done) return;
          done = true;
          settled += 1;
          resolve(outcome);
        };
        queue.push({ id: nextId++, bytes, format, maxChars, settle, startedAt: performance.now() });
        dispatch();
      });
    },

    async close() {
      if (closed) {
        await Promise.all(exits);
        return;
      }
      closed = true;
      for (const job of queue.splice(0)) job.settle(failure(job, 'error', 'extractor closed'));
      for (const child of slots) {
        if (!child) continue;
        if (child.job) finish(child, failure(child.job, 'error', 'extractor closed'));
        kill(child, 'close');
      }
      await Promise.all(exits);
    },

    stats() {
      const children = slots.filter((child) => child !== null);
      return {
        children: children.length,
        busy: children.filter((child) => child.job !== null).length,
        queued: queue.length,
        settled,
        spawned,
        peakChildRssBytes,
      };
    },
  };
}
