/**
 * The recovery probe: a round trip through every route. Upload a small file, authorize its
 * download and fetch its bytes, view its page, comment on it, then read it back from search,
 * the file list, the comment list and the statistics. The API has recovered when one whole
 * round succeeds.
 */
import { randomBytes } from 'node:crypto';
import { randomWord, sha256, uploadForm, type Rec, type Recorder, type User } from './load.ts';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const ok = (r: Rec): boolean => r.status >= 200 && r.status < 300;
const what = (r: Rec): string => `${r.op} ${r.status || r.error}${r.json?.message ? ` ${String(r.json.message)}` : ''}`;

export interface ProbeResult {
  recovered: boolean;
  at: number;
  rounds: number;
  lastFailure: string;
  /** The successful round's requests: total time and its slowest ones (where the recovery time went). */
  lastRound: string;
}

export class Probe {
  private uploads = 0;
  private readonly rec: Recorder;
  private readonly user: User;
  private readonly runTag: string;

  constructor(rec: Recorder, user: User, runTag: string) {
    this.rec = rec;
    this.user = user;
    this.runTag = runTag;
  }

  /** One round; returns null when every route served, else what failed first. */
  async round(readTimeoutMs: number): Promise<string | null> {
    const { rec, user } = this;
    const bytes = randomBytes(1024 + Math.floor(Math.random() * 4096));
    const word = randomWord();
    const up = await rec.send('probe', 'upload', 'POST', '/api/V1/docs/api-upload',
      { token: user.token, form: uploadForm(`probe ${word}`, word, this.runTag, 'chaos probe', bytes) },
      { sha: sha256(bytes), size: bytes.length, title: `probe ${word}`, userId: user.userId });
    if (!ok(up) || !up.json) return what(up);
    const fileId = String(up.json.file_id);
    up.fileId = fileId;
    this.uploads += 1;
    const dl = await rec.send('probe', 'download', 'GET', `/api/V1/docs/api-download?file_id=${fileId}`, { token: user.token }, { fileId, userId: user.userId });
    if (!ok(dl) || typeof dl.json?.download_url !== 'string') return what(dl);
    const url = dl.json.download_url;
    const content = await rec.send('probe', 'content', 'GET', new URL(url).pathname, { url }, { fileId, sha: sha256(bytes), size: bytes.length });
    if (!ok(content) || content.badBytes) return content.badBytes ?? what(content);
    const view = await rec.send('probe', 'view', 'GET', `/docs/${fileId}`, {}, { fileId });
    if (view.status !== 200) return what(view);
    const comment = `probe comment ${word}`;
    const posted = await rec.send('probe', 'comment', 'POST', '/api/V1/docs/api-comment', { token: user.token, json: { file_id: fileId, comment } }, { fileId, comment, userId: user.userId });
    if (!ok(posted)) return what(posted);
    const commentId = Number(posted.json?.comment_id);

    // Reads: with read-your-writes they reflect the writes at once; allow for a lagging projector.
    const deadline = performance.now() + readTimeoutMs;
    let failure = '';
    while (performance.now() < deadline) {
      const search = await rec.send('probe', 'search', 'POST', '/api/V1/stats/api-search', { token: user.token, json: { search: word } });
      const files = await rec.send('probe', 'files', 'GET', `/api/V1/users/api-files?user_id=${user.userId}&per_page=100`, { token: user.token });
      const comments = await rec.send('probe', 'comments', 'POST', '/api/V1/users/api-comments', { token: user.token });
      const stats = await rec.send('probe', 'stats', 'POST', '/api/V1/stats/api-stats', { token: user.token });
      const results = (search.json?.results ?? []) as Array<{ id: unknown }>;
      const listed = (files.json?.files ?? []) as Array<{ file_id: unknown }>;
      const received = (comments.json?.data ?? []) as Array<{ comment_id: unknown }>;
      const data = stats.json?.data as { total_files?: number; total_views?: number; total_comments?: number; total_downloads?: number } | undefined;
      if (!ok(search) || !results.some((r) => String(r.id) === fileId)) failure = `search for the new file: ${what(search)}`;
      else if (!ok(files) || !listed.some((f) => String(f.file_id) === fileId)) failure = `file list: ${what(files)}`;
      else if (!ok(comments) || !received.some((c) => Number(c.comment_id) === commentId)) failure = `comment list: ${what(comments)}`;
      else if (!ok(stats) || !data || (data.total_files ?? 0) < this.uploads) failure = `stats: ${what(stats)} ${JSON.stringify(data)}`;
      else return null;
      await sleep(250);
    }
    return `reads did not reflect the round's writes within ${readTimeoutMs} ms: ${failure}`;
  }

  /** Rounds until one succeeds or `timeoutMs` passes; `at` = when the successful round ended (recorder time). */
  async untilRecovered(timeoutMs: number, abort: () => boolean = () => false): Promise<ProbeResult> {
    const deadline = performance.now() + timeoutMs;
    let rounds = 0;
    let lastFailure = '';
    while (performance.now() < deadline && !abort()) {
      rounds += 1;
      const from = this.rec.records.length;
      const t0 = performance.now();
      const failure = await this.round(Math.min(15_000, Math.max(1_000, deadline - performance.now())));
      if (failure === null) {
        const mine = this.rec.records.slice(from).filter((r) => r.client === 'probe').sort((a, b) => b.ms - a.ms);
        const lastRound = `last round ${((performance.now() - t0) / 1000).toFixed(1)} s, slowest: ${mine.slice(0, 2).map((r) => `${r.op} ${(r.ms / 1000).toFixed(1)} s`).join(', ')}`;
        return { recovered: true, at: this.rec.now(), rounds, lastFailure, lastRound };
      }
      lastFailure = failure;
      await sleep(250);
    }
    return { recovered: false, at: this.rec.now(), rounds, lastFailure, lastRound: '' };
  }
}
