/**
 * The docshare public API as the bench uses it (../shared/spec/api-spec.md, decisions.md): JSON
 * routes on the keep-alive node:http client, uploads as multipart through fetch.
 */
import { expectOk, request } from './load.ts';

export interface User { userId: number; token: string; name: string }

export interface UploadInput {
  title: string;
  description: string;
  tags: string;
  category: string;
  body: Blob;
  fileName: string;
}

const WORDS = [
  'quantum', 'history', 'biology', 'poetry', 'algebra', 'castles', 'rivers', 'engines', 'music', 'painting',
  'geology', 'finance', 'weather', 'gardens', 'chemistry', 'bridges', 'language', 'robots', 'oceans', 'theatre',
  'medicine', 'planets', 'cooking', 'archives', 'networks', 'forests', 'sculpture', 'economics', 'glaciers', 'typography',
];
const KINDS = ['notes', 'report', 'slides', 'handbook', 'survey', 'draft', 'summary', 'checklist'];
export const CATEGORY_COUNT = 24;

/** Search terms for the read measure: exact words, typos (fuzzy) and two-word queries. */
export const SEARCH_TERMS = ['quantm notes', 'castels', 'biology', 'river engines', 'poetry history', 'chemstry report', 'oceans', 'typografy slides'];

const word = (i: number): string => WORDS[((i % WORDS.length) + WORDS.length) % WORDS.length]!;

/** 4 KiB of text, different for every file. */
const fileBody = (i: number, size = 4096): Blob => {
  const line = `file ${i}: ${word(i)} ${word(i * 7 + 3)} ${word(i * 13 + 5)}\n`;
  return new Blob([line.repeat(Math.ceil(size / line.length)).slice(0, size)], { type: 'text/plain' });
};

/** Varied metadata for the i-th file (titles, tags and categories spread over the word list). */
export const fileInput = (i: number, size = 4096): UploadInput => ({
  title: `${word(i)} ${KINDS[i % KINDS.length]} ${i}`,
  description: `About ${word(i * 3 + 1)} and ${word(i * 7 + 2)}, part ${i % 97}`,
  tags: `${word(i * 5)},${word(i * 11 + 4)},bench`,
  category: `Category ${word(i % CATEGORY_COUNT)}`,
  body: fileBody(i, size),
  fileName: `f${i}.txt`,
});

export class Api {
  readonly base: string;
  constructor(base: string) { this.base = base; }

  private auth(token: string): Record<string, string> { return { 'x-authorization': `Bearer ${token}` }; }

  async json(path: string, token: string | null, body: unknown, what: string): Promise<Record<string, unknown>> {
    const answer = expectOk(await request('POST', `${this.base}${path}`, {
      'content-type': 'application/json', ...(token ? this.auth(token) : {}),
    }, JSON.stringify(body)), what);
    return JSON.parse(answer.text) as Record<string, unknown>;
  }

  /** Registers a user; a 503 ("try again later": an upstream slow to answer on a loaded machine) is tried again, 5 times at most. */
  async register(name: string, email: string, password = 'bench-password'): Promise<User> {
    for (let attempt = 1; ; attempt += 1) {
      const answer = await request('POST', `${this.base}/api/V1/users/api-register`, { 'content-type': 'application/json' }, JSON.stringify({ name, email, password }));
      if (answer.status === 503 && attempt < 5) {
        await new Promise((r) => setTimeout(r, 1000 * attempt));
        continue;
      }
      const body = JSON.parse(expectOk(answer, 'api-register').text) as Record<string, unknown>;
      return { userId: Number(body.user_id), token: String(body.token), name };
    }
  }

  async upload(token: string, input: UploadInput, timeoutMs = 60_000): Promise<number> {
    const form = new FormData();
    form.set('file', input.body, input.fileName);
    form.set('title', input.title);
    form.set('description', input.description);
    form.set('tags', input.tags);
    form.set('cc_license', 'CC BY');
    form.set('new_category_name', input.category);
    const res = await fetch(`${this.base}/api/V1/docs/api-upload`, {
      method: 'POST', headers: this.auth(token), body: form, signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`api-upload: ${res.status} ${text.slice(0, 160)}`);
    return Number((JSON.parse(text) as { file_id: string }).file_id);
  }

  async comment(token: string, fileId: number, comment: string): Promise<void> {
    await this.json('/api/V1/docs/api-comment', token, { file_id: fileId, comment }, 'api-comment');
  }

  async stats(token: string): Promise<Record<string, number>> {
    return (await this.json('/api/V1/stats/api-stats', token, {}, 'api-stats')).data as Record<string, number>;
  }

  async files(token: string, userId: number): Promise<{ files: { file_id: number }[]; total: number }> {
    const answer = expectOk(await request('GET', `${this.base}/api/V1/users/api-files?user_id=${userId}`, this.auth(token)), 'api-files');
    return JSON.parse(answer.text) as { files: { file_id: number }[]; total: number };
  }

  /** Search results, or [] when the answer is 404 "no results". */
  async search(token: string, term: string, perPage = 20): Promise<{ id: string }[]> {
    const answer = await request('POST', `${this.base}/api/V1/stats/api-search`, {
      'content-type': 'application/json', ...this.auth(token),
    }, JSON.stringify({ search: term, per_page: perPage }));
    if (answer.status === 404) return [];
    expectOk(answer, 'api-search');
    return (JSON.parse(answer.text) as { results: { id: string }[] }).results;
  }

  /** api-daily (issue 21): the caller's statistics per UTC day from..to (both 'YYYY-MM-DD'). */
  async daily(token: string, from: string, to: string): Promise<{ days: Record<string, number | string>[]; totals: Record<string, number> }> {
    return JSON.parse(expectOk(await this.rawDaily(token, from, to), 'api-daily').text) as { days: Record<string, number | string>[]; totals: Record<string, number> };
  }

  /** A view of the file's public page (GET /docs/<id>), anonymous. */
  viewPage(fileId: number) {
    return request('GET', `${this.base}/docs/${fileId}`);
  }

  /** api-download: counts a download and returns the signed URL of the bytes. */
  async downloadUrl(token: string, fileId: number): Promise<string> {
    const answer = expectOk(await request('GET', `${this.base}/api/V1/docs/api-download?file_id=${fileId}`, this.auth(token)), 'api-download');
    return String((JSON.parse(answer.text) as { download_url: string }).download_url);
  }

  // Raw requests for the read measures (the body is not parsed: the client's cost stays small).
  rawStats(token: string) {
    return request('POST', `${this.base}/api/V1/stats/api-stats`, { 'content-type': 'application/json', ...this.auth(token) }, '{}');
  }
  rawFiles(token: string, userId: number) {
    return request('GET', `${this.base}/api/V1/users/api-files?user_id=${userId}`, this.auth(token));
  }
  rawDaily(token: string, from: string, to: string) {
    return request('GET', `${this.base}/api/V1/stats/api-daily?from=${from}&to=${to}`, this.auth(token));
  }
  rawSearch(token: string, term: string) {
    return request('POST', `${this.base}/api/V1/stats/api-search`, { 'content-type': 'application/json', ...this.auth(token) }, JSON.stringify({ search: term }));
  }
}
