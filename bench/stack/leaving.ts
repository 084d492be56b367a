/**
 * The measures of issue 24 (the right to leave), on any docshare behind `api` (embedded: `npm run
 * bench`; distributed: the same module against a stack's gateway):
 *
 *   - an export of a user with BENCH_LEAVING_FILES (1,000) files: time from the 202 of
 *     `POST api-export` to `state: ready` (goal ≤ 30 s), then the ZIP fetched and its SHA-256
 *     checked against the one the API answered;
 *   - the erasure of the same user, who also wrote BENCH_LEAVING_COMMENTS (10,000) comments (half
 *     on a neighbour's files, which stay and read `[deleted]`; half on their own, which go with
 *     their files): time from the 202 of `POST api-erase` to `state: done` at the signed status
 *     link (goal ≤ 60 s); and whether the neighbour's statistics are the same afterwards.
 *
 * Coded against the team's design for issue 24 (§3: routes and answers).
 */
import { createHash } from 'node:crypto';
import { retrying } from '@docshare/contracts';
import { fileInput, type Api, type User } from './api.ts';
import { expectOk, mapLimit, request } from './load.ts';

export interface LeavingOptions {
  files: number;
  comments: number;
  /** Requests in flight while seeding. */
  clients: number;
  /** Longest wait for `ready` / `done`. */
  timeoutMs: number;
  /** Distinguishes this run's e-mail addresses (the bench may run twice against one instance). */
  tag: string;
}

export interface LeavingResult {
  seededMs: number;
  export: { readyMs: number; bytes: number; sha256Matches: boolean };
  erasure: { doneMs: number; filesDeleted: number; commentsRedacted: number; neighbourStatsUnchanged: boolean; tokenRefused: boolean };
}

/** Thrown by a probe while the state it waits for is not reached yet: the one failure retried. */
class NotYet extends Error {}

/**
 * Calls `probe` every few ms (10, growing to 50, jittered) until it answers a value, for at most
 * `timeoutMs`; a probe that throws anything else ends the wait with that error.
 */
export const until = async <T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> => {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    return await retrying(async () => {
      const value = await probe();
      if (value === undefined) throw new NotYet(what);
      return value;
    }, { baseMs: 10, capMs: 50, retryIf: (error) => error instanceof NotYet, signal });
  } catch (error) {
    if (error instanceof NotYet) throw new Error(`${what}: not reached within ${timeoutMs} ms`);
    throw error;
  }
};

/**
 * A link the API answered (status_url, download_url), asked of `base`: the links carry the public
 * base URL (PUBLIC_BASE_URL, or the default port's), which need not be where the bench reaches the
 * server; their path and query are what the signature covers.
 */
export const onBase = (base: string, link: string): string => {
  const url = new URL(link, base);
  return `${base}${url.pathname}${url.search}`;
};

const auth = (token: string): Record<string, string> => ({ 'x-authorization': `Bearer ${token}` });

const parse = (text: string): Record<string, unknown> => JSON.parse(text) as Record<string, unknown>;

/** POST api-export → 202 `{export_id}`; polls GET api-export until ready; fetches the ZIP. */
export const measureExport = async (api: Api, user: User, timeoutMs: number): Promise<LeavingResult['export']> => {
  const accepted = await request('POST', `${api.base}/api/V1/users/api-export`, auth(user.token));
  const began = performance.now();
  if (accepted.status !== 202) throw new Error(`api-export: ${accepted.status} ${accepted.text.slice(0, 160)}`);
  const exportId = String(parse(accepted.text).export_id);
  const ready = await until('export ready', timeoutMs, async () => {
    const answer = expectOk(await request('GET', `${api.base}/api/V1/users/api-export?export_id=${encodeURIComponent(exportId)}`, auth(user.token)), 'api-export status');
    const state = parse(answer.text).export as { state: string; download_url?: string; sha256?: string; bytes?: number };
    return state.state === 'ready' ? state : undefined;
  });
  const readyMs = performance.now() - began;
  const res = await fetch(onBase(api.base, String(ready.download_url)));
  if (!res.ok) throw new Error(`export download: ${res.status}`);
  const zip = Buffer.from(await res.arrayBuffer());
  const sha256 = createHash('sha256').update(zip).digest('hex');
  return { readyMs, bytes: zip.length, sha256Matches: sha256 === ready.sha256 && zip.length === ready.bytes };
};

/** POST api-erase → 202 `{status_url}`; polls the signed status link (no token) until done. */
export const measureErasure = async (
  api: Api, user: User, password: string, neighbour: User, timeoutMs: number,
): Promise<LeavingResult['erasure']> => {
  const before = await api.stats(neighbour.token);
  const accepted = await request('POST', `${api.base}/api/V1/users/api-erase`, { 'content-type': 'application/json', ...auth(user.token) }, JSON.stringify({ password }));
  const began = performance.now();
  if (accepted.status !== 202) throw new Error(`api-erase: ${accepted.status} ${accepted.text.slice(0, 160)}`);
  const statusUrl = onBase(api.base, String(parse(accepted.text).status_url));
  const done = await until('erasure done', timeoutMs, async () => {
    const body = parse(expectOk(await request('GET', statusUrl), 'erasure status').text);
    return body.state === 'done' ? body : undefined;
  });
  const doneMs = performance.now() - began;
  const after = await api.stats(neighbour.token);
  const refused = await request('POST', `${api.base}/api/V1/stats/api-stats`, { 'content-type': 'application/json', ...auth(user.token) }, '{}');
  return {
    doneMs,
    filesDeleted: Number(done.files_deleted),
    commentsRedacted: Number(done.comments_redacted),
    neighbourStatsUnchanged: JSON.stringify(before) === JSON.stringify(after),
    tokenRefused: refused.status === 401,
  };
};

/**
 * Seeds a leaving user (`files` files; `comments` comments, every other one on a neighbour's
 * file) and a neighbour (20 files), then measures the export and the erasure of the leaving user.
 */
export const leaving = async (api: Api, options: LeavingOptions): Promise<LeavingResult> => {
  const password = 'bench-password';
  const began = performance.now();
  const leaver = await api.register('Leaving User', `leaving-${options.tag}@bench.test`, password);
  const neighbour = await api.register('Neighbour', `neighbour-${options.tag}@bench.test`, password);
  const own = await mapLimit(options.files, options.clients, (i) => api.upload(leaver.token, fileInput(i, 1024)));
  const theirs = await mapLimit(20, options.clients, (i) => api.upload(neighbour.token, fileInput(options.files + i, 1024)));
  await mapLimit(options.comments, options.clients, (i) => {
    const files = i % 2 === 0 ? theirs : own;
    return api.comment(leaver.token, files[Math.floor(i / 2) % files.length]!, `comment ${i} by the leaving user`);
  });
  const seededMs = performance.now() - began;
  const exported = await measureExport(api, leaver, options.timeoutMs);
  const erasure = await measureErasure(api, leaver, password, neighbour, options.timeoutMs);
  return { seededMs, export: exported, erasure };
};

/** The report's lines. */
export const leavingLines = (options: LeavingOptions, r: LeavingResult): string[] => [
  `  seeded ${options.files} files and ${options.comments} comments of one user in ${(r.seededMs / 1000).toFixed(1)} s`,
  `  ${'export: 202 → ready'.padEnd(28)} ${(r.export.readyMs / 1000).toFixed(2).padStart(7)} s   ZIP ${(r.export.bytes / 2 ** 20).toFixed(1)} MiB, sha256 ${r.export.sha256Matches ? 'matches' : 'DOES NOT MATCH'}   (goal: ≤ 30 s)`,
  `  ${'erasure: 202 → done'.padEnd(28)} ${(r.erasure.doneMs / 1000).toFixed(2).padStart(7)} s   files_deleted ${r.erasure.filesDeleted}, comments_redacted ${r.erasure.commentsRedacted}   (goal: ≤ 60 s)`,
  `  ${'after the erasure'.padEnd(28)} neighbour's api-stats ${r.erasure.neighbourStatsUnchanged ? 'unchanged' : 'CHANGED'}; the erased user's token ${r.erasure.tokenRefused ? 'refused (401)' : 'NOT refused'}`,
];
