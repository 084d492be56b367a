/**
 * The recording load: clients that register, upload random bytes (sha256 known), comment, view
 * pages, authorize downloads, put files up for sale, buy and delete, recording every request
 * (its X-Request-Id, which the events carry as `causationid`) and every answer.
 */
import { createHash, randomBytes, randomInt } from 'node:crypto';

export type Op = 'register' | 'webhook' | 'upload' | 'comment' | 'view' | 'download' | 'content' | 'delete' | 'sell' | 'purchase'
  | 'stats' | 'files' | 'search' | 'comments' | 'daily';

/** One request and what became of it. */
export interface Rec {
  id: string;
  client: string;
  op: Op;
  method: string;
  path: string;
  /** ms since the run began */
  at: number;
  ms: number;
  /** HTTP status, or 0 when no answer came (connection error, timeout). */
  status: number;
  error?: string;
  timedOut?: boolean;
  contentType?: string;
  retryAfter?: string;
  /** The answer's body (JSON answers: whole up to 2 KiB; others: the first 200 characters). */
  body?: string;
  /** Parsed JSON body, when it was JSON. */
  json?: Record<string, unknown>;
  /** What the request was about. */
  fileId?: string;
  sha?: string;
  size?: number;
  title?: string;
  comment?: string;
  userId?: number;
  /** A content answer whose bytes differ from the upload's. */
  badBytes?: string;
}

export const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface User { userId: number; token: string; name: string; email: string; password: string }
export interface KnownFile { id: string; ownerId: number; title: string; word: string; sha: string; size: number; forSale: boolean; deleted: boolean }

/** Every request of the run, and the shared knowledge of the clients. */
export class Recorder {
  readonly records: Rec[] = [];
  readonly files = new Map<string, KnownFile>();
  readonly users = new Map<number, User>();
  private seq = 0;
  readonly began = performance.now();
  /** Run for each user once registered, before `register` returns (the suite registers its webhook endpoint). */
  afterRegister?: (client: string, user: User) => Promise<void>;

  readonly baseUrl: string;
  readonly runId: string;
  readonly requestTimeoutMs: number;

  constructor(baseUrl: string, runId: string, requestTimeoutMs: number) {
    this.baseUrl = baseUrl;
    this.runId = runId;
    this.requestTimeoutMs = requestTimeoutMs;
  }

  now(): number { return performance.now() - this.began; }

  /** Sends one request with a fresh X-Request-Id and records it. Never throws. */
  /** `extra.sha` on a content request: the bytes must hash to it (else `badBytes` is set). */
  async send(client: string, op: Op, method: string, path: string, init: { token?: string; json?: unknown; form?: FormData; url?: string; userAgent?: string } = {}, extra: Partial<Rec> = {}): Promise<Rec> {
    this.seq += 1;
    const id = `chaos-${this.runId}-${client}-${this.seq}`;
    const headers: Record<string, string> = { 'X-Request-Id': id };
    if (init.token) headers['X-Authorization'] = `Bearer ${init.token}`;
    if (init.userAgent) headers['User-Agent'] = init.userAgent;
    let body: string | FormData | undefined;
    if (init.form) body = init.form;
    else if (init.json !== undefined) {
      body = JSON.stringify(init.json);
      headers['Content-Type'] = 'application/json';
    }
    const rec: Rec = { id, client, op, method, path, at: this.now(), ms: 0, status: 0, ...extra };
    const t0 = performance.now();
    try {
      const res = await fetch(init.url ?? `${this.baseUrl}${path}`, {
        method, headers, body, redirect: 'manual', signal: AbortSignal.timeout(this.requestTimeoutMs),
      });
      const buf = Buffer.from(await res.arrayBuffer());
      rec.status = res.status;
      rec.contentType = res.headers.get('content-type') ?? '';
      const retryAfter = res.headers.get('retry-after');
      if (retryAfter !== null) rec.retryAfter = retryAfter;
      if (rec.contentType.includes('application/json')) {
        const text = buf.toString('utf8');
        rec.body = text.length > 2048 ? `${text.slice(0, 2048)}…` : text;
        try { rec.json = JSON.parse(text) as Record<string, unknown>; } catch { /* recorded as non-JSON below */ }
      } else {
        if (!(op === 'content' && rec.status < 300)) rec.body = buf.subarray(0, 200).toString('utf8');
        if (op === 'content' && rec.status === 200 && extra.sha !== undefined && sha256(buf) !== extra.sha) {
          rec.badBytes = `content of file ${extra.fileId}: ${buf.length} bytes, sha256 ${sha256(buf)}; uploaded ${extra.size} bytes, sha256 ${extra.sha}`;
        }
      }
    } catch (error) {
      const e = error as Error & { cause?: { code?: string; message?: string } };
      rec.timedOut = e.name === 'TimeoutError';
      rec.error = `${e.name}: ${e.message}${e.cause ? ` (${e.cause.code ?? e.cause.message ?? ''})` : ''}`;
    }
    rec.ms = Math.round(performance.now() - t0);
    this.records.push(rec);
    return rec;
  }

  /** Registers a user; retries (new request, new email) until it succeeds or `deadline`. */
  async register(client: string, deadlineMs: number): Promise<User> {
    for (;;) {
      const name = `Chaos ${client} ${randomBytes(3).toString('hex')}`;
      const email = `${client}-${randomBytes(6).toString('hex')}@chaos.example.com`;
      const password = `pw-${randomBytes(8).toString('hex')}`;
      const r = await this.send(client, 'register', 'POST', '/api/V1/users/api-register', { json: { name, email, password } });
      if (r.status >= 200 && r.status < 300 && r.json) {
        const user: User = { userId: Number(r.json.user_id), token: String(r.json.token), name, email, password };
        r.userId = user.userId;
        this.users.set(user.userId, user);
        await this.afterRegister?.(client, user);
        return user;
      }
      if (this.now() > deadlineMs) throw new Error(`${client}: could not register: ${r.status} ${r.error ?? r.body ?? ''}`);
      await sleep(500);
    }
  }
}

const letters = 'abcdefghijklmnopqrstuvwxyz';
export const randomWord = (n = 10): string => Array.from(randomBytes(n), (b) => letters[b % 26]).join('');

const randomSize = (): number => {
  const r = Math.random();
  if (r < 0.6) return randomInt(0, 4097);
  if (r < 0.95) return randomInt(4096, 65_537);
  return randomInt(200_000, 600_000);
};

export const uploadForm = (title: string, word: string, runTag: string, category: string, bytes: Uint8Array): FormData => {
  const form = new FormData();
  form.append('title', title);
  form.append('description', `chaos document ${word}`);
  form.append('tags', `${runTag},${word}`);
  form.append('cc_license', 'CC BY');
  form.append('new_category_name', category);
  form.append('category_description', 'made by the chaos suite');
  form.append('category_tags', 'chaos');
  form.append('video', '');
  form.append('file', new Blob([bytes], { type: 'application/octet-stream' }), `${word}.bin`);
  return form;
};

const ok = (r: Rec): boolean => r.status >= 200 && r.status < 300;

/** Uploads one file as `user`; on success the file becomes known to every client. */
export const uploadOne = async (rec: Recorder, client: string, user: User, runTag: string, size = randomSize()): Promise<Rec> => {
  const bytes = randomBytes(size);
  const word = randomWord();
  const title = `chaos ${word}`;
  const r = await rec.send(client, 'upload', 'POST', '/api/V1/docs/api-upload',
    { token: user.token, form: uploadForm(title, word, runTag, `chaos cat ${randomInt(0, 4)}`, bytes) },
    { sha: sha256(bytes), size, title, userId: user.userId });
  if (ok(r) && r.json) {
    const id = String(r.json.file_id);
    r.fileId = id;
    rec.files.set(id, { id, ownerId: user.userId, title, word, sha: sha256(bytes), size, forSale: false, deleted: false });
  }
  return r;
};

const pick = <T>(items: readonly T[]): T | undefined => items.length === 0 ? undefined : items[randomInt(0, items.length)];

/** A view of a file's page, signed in as `user` or anonymous (told apart by the client's User-Agent). */
const viewOne = (rec: Recorder, client: string, fileId: string, user: User | undefined): Promise<Rec> =>
  rec.send(client, 'view', 'GET', `/docs/${fileId}`, user ? { token: user.token } : { userAgent: `docshare-chaos ${client}` }, { fileId, ...(user ? { userId: user.userId } : {}) });

/**
 * One viewer: registers, then views pages until `stop()` says so, half of them on one hot file (the
 * oldest one still there), half signed in, the others anonymous under one of a few User-Agents: the
 * view load the statistics over time must count exactly through every fault.
 */
export const runViewer = async (rec: Recorder, client: string, stop: () => boolean, thinkMs: number): Promise<void> => {
  const user = await rec.register(client, rec.now() + 120_000);
  while (!stop()) {
    const alive = [...rec.files.values()].filter((f) => !f.deleted);
    const f = Math.random() < 0.5 ? alive[0] : pick(alive);
    if (f) {
      if (Math.random() < 0.5) await viewOne(rec, client, f.id, user);
      else await rec.send(client, 'view', 'GET', `/docs/${f.id}`, { userAgent: `docshare-chaos ${client} agent ${randomInt(0, 4)}` }, { fileId: f.id });
    }
    await sleep(thinkMs / 2 + Math.random() * thinkMs);
  }
};

/** One client: registers, then runs random operations until `stop()` says so. */
export const runClient = async (rec: Recorder, client: string, runTag: string, stop: () => boolean, thinkMs: number): Promise<void> => {
  const user = await rec.register(client, rec.now() + 120_000);
  while (!stop()) {
    const alive = [...rec.files.values()].filter((f) => !f.deleted);
    const free = alive.filter((f) => !f.forSale);
    const mine = alive.filter((f) => f.ownerId === user.userId);
    const roll = Math.random();
    if (roll < 0.25 || alive.length < 3) {
      await uploadOne(rec, client, user, runTag);
    } else if (roll < 0.42) {
      const f = pick(alive);
      if (f) {
        const comment = `chaos comment ${randomWord(8)}`;
        const r = await rec.send(client, 'comment', 'POST', '/api/V1/docs/api-comment', { token: user.token, json: { file_id: f.id, comment } }, { fileId: f.id, comment, userId: user.userId });
        void r;
      }
    } else if (roll < 0.56) {
      const f = pick(alive);
      if (f) await viewOne(rec, client, f.id, Math.random() < 0.5 ? user : undefined);
    } else if (roll < 0.70) {
      const f = pick(free);
      if (f) {
        const r = await rec.send(client, 'download', 'GET', `/api/V1/docs/api-download?file_id=${f.id}`, { token: user.token }, { fileId: f.id, userId: user.userId });
        const url = r.json?.download_url;
        if (ok(r) && typeof url === 'string' && Math.random() < 0.5) {
          await rec.send(client, 'content', 'GET', new URL(url).pathname, { url }, { fileId: f.id, sha: f.sha, size: f.size });
        }
      }
    } else if (roll < 0.74) {
      const f = pick(mine.filter((x) => !x.forSale));
      if (f) {
        const r = await rec.send(client, 'sell', 'POST', '/api/V1/docs/api-update', { token: user.token, json: { id: f.id, for_sale: true, price: 3 } }, { fileId: f.id, userId: user.userId });
        if (ok(r)) f.forSale = true;
      }
    } else if (roll < 0.80) {
      const f = pick(alive.filter((x) => x.forSale && x.ownerId !== user.userId));
      if (f) await rec.send(client, 'purchase', 'POST', '/api/V1/docs/api-purchase', { token: user.token, json: { file_id: f.id } }, { fileId: f.id, userId: user.userId });
    } else if (roll < 0.85) {
      const f = pick(mine);
      if (f) {
        f.deleted = true; // no one starts new work on it; if the delete fails it is simply left alone
        await rec.send(client, 'delete', 'DELETE', '/api/V1/docs/api-delete', { token: user.token, json: { id: f.id } }, { fileId: f.id, userId: user.userId });
      }
    } else if (roll < 0.89) {
      await rec.send(client, 'stats', 'POST', '/api/V1/stats/api-stats', { token: user.token });
    } else if (roll < 0.93) {
      await rec.send(client, 'files', 'GET', `/api/V1/users/api-files?user_id=${pick([...rec.users.keys()]) ?? user.userId}`, { token: user.token });
    } else if (roll < 0.97) {
      const f = pick(alive);
      await rec.send(client, 'search', 'POST', '/api/V1/stats/api-search', { token: user.token, json: { search: f?.word ?? runTag } });
    } else {
      await rec.send(client, 'comments', 'POST', '/api/V1/users/api-comments', { token: user.token });
    }
    await sleep(thinkMs / 2 + Math.random() * thinkMs);
  }
};
