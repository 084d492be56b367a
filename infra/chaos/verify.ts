/**
 * What the chaos run must prove, from the record of every request and from the event store:
 *   - every acknowledged write is in the event store exactly once (by causationid = X-Request-Id),
 *     and no request, acknowledged or not, is recorded more than once; no event nobody asked for;
 *   - every answer is clean: a 5xx is a JSON envelope 503 with Retry-After, never a 500, never a
 *     body that is not JSON (connection errors only while the gateway itself is down);
 *   - the read models (stats, file lists, comments, search) equal a model computed from the events.
 * The pure parts live here (record × events → violations) so they can be tested on their own.
 */
import type { Rec } from './load.ts';

export interface Event {
  id: string;
  type: string;
  subject: string;
  streamversion: number;
  causationid?: string;
  data: Record<string, unknown>;
  position: number;
}

/**
 * The event a successful request of each write operation records, and how its answer names it.
 * Views and downloads record v2 (outside the file's stream, with a viewer key); a log written
 * before that holds v1, which counts the same.
 */
export const WRITES: Record<string, { type: string; also?: readonly string[]; key?: (e: Event) => unknown; answer?: (r: Rec) => unknown }> = {
  register: { type: 'docs.user.registered.v1', key: (e) => Number(e.data.userId), answer: (r) => Number(r.json?.user_id) },
  webhook: { type: 'docs.webhook.registered.v1', key: (e) => Number(e.data.webhookId), answer: (r) => Number((r.json?.webhook as { id?: unknown } | undefined)?.id) },
  upload: { type: 'docs.file.uploaded.v1', key: (e) => String(e.data.fileId), answer: (r) => String(r.json?.file_id) },
  comment: { type: 'docs.comment.posted.v1', key: (e) => Number(e.data.commentId), answer: (r) => Number(r.json?.comment_id) },
  view: { type: 'docs.file.viewed.v2', also: ['docs.file.viewed.v1'], key: (e) => String(e.data.fileId), answer: (r) => r.fileId },
  download: { type: 'docs.file.downloaded.v2', also: ['docs.file.downloaded.v1'], key: (e) => String(e.data.fileId), answer: (r) => r.fileId },
  delete: { type: 'docs.file.deleted.v1', key: (e) => String(e.data.fileId), answer: (r) => r.fileId },
  sell: { type: 'docs.file.updated.v1', key: (e) => String(e.data.fileId), answer: (r) => r.fileId },
  purchase: { type: 'docs.file.purchased.v1', key: (e) => String(e.data.saleId), answer: (r) => String(r.json?.sale_id) },
};
/**
 * A write that asks for what is already so records nothing, and rightly: a sell of a file an
 * earlier sell (say one whose answer the gateway's death swallowed) already put up for sale.
 */
const ALREADY_IN_EFFECT: Record<string, (r: Rec, earlier: readonly Event[]) => boolean> = {
  sell: (r, earlier) => earlier.some((e) => e.type === 'docs.file.updated.v1' && String(e.data.fileId) === r.fileId
    && (e.data.changes as { forSale?: boolean } | undefined)?.forSale === true),
  // A buyer buys a file once: a repeat is answered with the earlier sale, which its answer names.
  purchase: (r, earlier) => earlier.some((e) => e.type === 'docs.file.purchased.v1' && String(e.data.fileId) === r.fileId
    && Number(e.data.buyerId) === r.userId && String(e.data.saleId) === String(r.json?.sale_id)),
};
/** Events a write may record besides its own (an upload that creates its category). */
const COMPANIONS: Record<string, string[]> = { upload: ['docs.category.created.v1'] };

export interface Window { from: number; to: number; label: string }

export interface RecordCheck {
  violations: string[];
  /** Writes that failed (5xx, no answer) yet were recorded once: allowed, counted. */
  recordedUnacknowledged: Rec[];
  /** Connection errors while the gateway was down (allowed). */
  connectionErrorsInWindows: number;
  timeouts: Rec[];
}

const ok = (r: Rec): boolean => r.status >= 200 && r.status < 300;
const short = (r: Rec): string => `${r.id} ${r.op} ${r.method} ${r.path} at ${(r.at / 1000).toFixed(1)}s → ${r.status || r.error}${r.body ? ` ${r.body.slice(0, 160)}` : ''}`;

/**
 * 4xx answers the load can legitimately get: a file another client deleted or put up for sale
 * meanwhile; a search for another client's file that the index does not show yet (only the
 * author's reads wait for a write: docs/api-decisions.md) or no longer shows.
 */
const EXPECTED_4XX = new Set(['File not found', 'File is either for sale or not enabled', 'No results found']);

const EXTRACTION_EVENTS = new Set(['docs.file.content-extracted.v1', 'docs.file.content-extraction-failed.v1']);

/** Checks the record against the events; pure. */
export const checkRecord = (records: readonly Rec[], events: readonly Event[], gatewayDown: readonly Window[]): RecordCheck => {
  const violations: string[] = [];
  // Answers that are not clean come in bursts during an outage: one violation per kind, with examples.
  const unclean = new Map<string, string[]>();
  const flag = (kind: string, r: Rec): void => { unclean.set(kind, [...(unclean.get(kind) ?? []), short(r)]); };
  const recordedUnacknowledged: Rec[] = [];
  const timeouts: Rec[] = [];
  let connectionErrorsInWindows = 0;
  const byCause = new Map<string, Event[]>();
  // Text extraction is caused by an upload event, not by a request: at most one outcome per
  // file, caused by that file's upload.
  const uploads = new Map(events.filter((e) => e.type === 'docs.file.uploaded.v1').map((e) => [e.id, e]));
  const extracted = new Set<string>();
  for (const e of events) {
    if (EXTRACTION_EVENTS.has(e.type)) {
      const upload = uploads.get(e.causationid ?? '');
      if (!upload || upload.subject !== e.subject) violations.push(`${e.type} ${e.subject} not caused by its file's upload (${e.causationid ?? 'none'})`);
      if (extracted.has(e.subject)) violations.push(`DUPLICATED: a second extraction outcome for ${e.subject}`);
      extracted.add(e.subject);
      continue;
    }
    const key = e.causationid ?? '';
    byCause.set(key, [...(byCause.get(key) ?? []), e]);
  }
  const seenIds = new Set<string>();
  const seenVersions = new Set<string>();
  for (const e of events) {
    if (seenIds.has(e.id)) violations.push(`duplicate event id ${e.id} (${e.type} at ${e.position})`);
    seenIds.add(e.id);
    if (e.streamversion === 0) continue; // of no stream (views, downloads): many share subject@0
    const v = `${e.subject}@${e.streamversion}`;
    if (seenVersions.has(v)) violations.push(`two events at ${v}`);
    seenVersions.add(v);
  }

  const requestIds = new Set(records.map((r) => r.id));
  const started = new Map(records.map((r) => [r.id, r.at]));
  /** Events of requests sent before `r` was answered: the only ones that can have made it a no-op. */
  const before = (r: Rec): Event[] => events.filter((e) => (started.get(e.causationid ?? '') ?? Infinity) < r.at + r.ms);
  for (const [cause, list] of byCause) {
    if (!requestIds.has(cause)) violations.push(`${list.length} event(s) with a causationid no request of the run had (${cause || 'none'}): ${list.slice(0, 3).map((e) => `${e.type} ${e.subject}`).join(', ')}`);
  }

  for (const r of records) {
    const mine = byCause.get(r.id) ?? [];
    const write = WRITES[r.op];
    if (!write) {
      if (mine.length > 0) violations.push(`a read recorded events: ${short(r)}: ${mine.map((e) => e.type).join(', ')}`);
    } else {
      const isOwn = (e: Event): boolean => e.type === write.type || (write.also ?? []).includes(e.type);
      const own = mine.filter(isOwn);
      const other = mine.filter((e) => !isOwn(e) && !(COMPANIONS[r.op] ?? []).includes(e.type));
      if (other.length > 0) violations.push(`unexpected events for ${short(r)}: ${other.map((e) => e.type).join(', ')}`);
      for (const type of COMPANIONS[r.op] ?? []) {
        if (mine.filter((e) => e.type === type).length > 1) violations.push(`duplicated ${type} for ${short(r)}`);
      }
      if (own.length > 1) violations.push(`DUPLICATED: ${own.length} × ${write.type} for ${short(r)}`);
      if (ok(r)) {
        if (own.length === 0) {
          if (!ALREADY_IN_EFFECT[r.op]?.(r, before(r))) violations.push(`LOST: acknowledged ${r.op} has no ${write.type} in the event store: ${short(r)}`);
        } else if (write.key && write.answer && write.key(own[0] as Event) !== write.answer(r)) {
          violations.push(`acknowledged ${r.op} names ${String(write.answer(r))} but its event names ${String(write.key(own[0] as Event))}: ${short(r)}`);
        }
      } else if (own.length === 1) {
        if (r.status >= 400 && r.status < 500) violations.push(`a ${r.status} answer, yet the ${r.op} was recorded: ${short(r)}`);
        else recordedUnacknowledged.push(r);
      }
    }

    // Clean answers.
    if (r.status === 0) {
      if (r.timedOut) timeouts.push(r);
      else if (gatewayDown.some((w) => r.at + r.ms >= w.from && r.at <= w.to)) connectionErrorsInWindows += 1;
      else flag('connection error while the gateway was up', r);
      continue;
    }
    const isJson = (r.contentType ?? '').includes('application/json');
    const envelope = isJson && r.json !== undefined && (r.json.status === 'success' || (r.json.status === 'error' && typeof r.json.message === 'string'));
    if (r.status >= 500) {
      if (r.status !== 503) flag(`${r.op} answered ${r.status} (only 503 may signal an outage)`, r);
      if (!envelope) flag(`${r.op} answered ${r.status} without the JSON envelope [${r.contentType}]`, r);
      if (r.status === 503 && !/^\d+$/.test(r.retryAfter ?? '')) flag(`${r.op} answered 503 without Retry-After`, r);
      continue;
    }
    const page = r.op === 'view' && (r.status === 200 || r.status === 404) && (r.contentType ?? '').includes('text/html');
    const bytes = r.op === 'content' && (r.status === 200 || r.status === 206);
    if (!page && !bytes && !envelope) flag(`${r.op} answered ${r.status}, not the JSON envelope [${r.contentType}]`, r);
    if (r.status >= 400 && !page && !EXPECTED_4XX.has(String(r.json?.message))) flag(`${r.op} answered an unexpected ${r.status} ${String(r.json?.message ?? '')}`, r);
    if (r.badBytes) violations.push(`BYTES: ${r.badBytes} (${r.id})`);
  }
  for (const [kind, examples] of unclean) {
    violations.push(`${kind}: ${examples.length} time(s), e.g.\n      ${examples.slice(0, 5).join('\n      ')}`);
  }
  return { violations, recordedUnacknowledged, connectionErrorsInWindows, timeouts };
};

/** Views and downloads of one UTC day. */
export interface DayCounts { views: number; downloads: number }

export interface UserModel {
  stats: { total_files: number; total_comments: number; total_views: number; total_downloads: number; total_sales: number };
  files: Map<string, string>;
  comments: Set<number>;
  /** The owner's views and downloads per UTC day (of all their files, deleted ones included). */
  days: Map<string, DayCounts>;
}

/** The UTC day of an event's time ('YYYY-MM-DD'); an event without a valid time is on no day (a difference with any answer). */
const dayOfTime = (time: unknown): string => {
  const at = new Date(String(time));
  return Number.isNaN(at.getTime()) ? `(no time: ${String(time)})` : at.toISOString().slice(0, 10);
};

const countDay = (days: Map<string, DayCounts>, day: string, what: keyof DayCounts): void => {
  const counts = days.get(day) ?? { views: 0, downloads: 0 };
  counts[what] += 1;
  days.set(day, counts);
};

/** The read models as the events define them (docs/architecture.md "Decisions worth knowing"). */
export interface Model {
  users: Map<number, UserModel>;
  searchable: Set<string>;
  alive: Map<string, { ownerId: number; causationid: string; forSale: boolean }>;
  /** Views and downloads of each file per UTC day (of its event's time). */
  fileDays: Map<string, Map<string, DayCounts>>;
}

export const modelOf = (events: readonly Event[], userIds: readonly number[]): Model => {
  const users = new Map<number, UserModel>(userIds.map((id) => [id, {
    stats: { total_files: 0, total_comments: 0, total_views: 0, total_downloads: 0, total_sales: 0 }, files: new Map(), comments: new Set(), days: new Map(),
  }]));
  const fileDays = new Map<string, Map<string, DayCounts>>();
  /** A view or download (v1 or v2: they count the same) of a file, on the day of its time. */
  const counted = (d: Record<string, unknown>, what: keyof DayCounts, time: unknown): void => {
    const day = dayOfTime(time);
    const u = user(d.ownerId);
    if (u) {
      if (what === 'views') u.stats.total_views += 1;
      else u.stats.total_downloads += 1;
      countDay(u.days, day, what);
    }
    const fileId = String(d.fileId);
    const days = fileDays.get(fileId) ?? new Map<string, DayCounts>();
    countDay(days, day, what);
    fileDays.set(fileId, days);
  };
  const user = (id: unknown): UserModel | undefined => users.get(Number(id));
  const files = new Map<string, { ownerId: number; title: string; causationid: string; deleted: boolean; forSale: boolean; enabled: boolean; comments: number[] }>();
  for (const e of events) {
    const d = e.data;
    switch (e.type) {
      case 'docs.file.uploaded.v1':
        files.set(String(d.fileId), { ownerId: Number(d.ownerId), title: String(d.title), causationid: e.causationid ?? '', deleted: false, forSale: false, enabled: true, comments: [] });
        break;
      case 'docs.file.updated.v1': {
        const f = files.get(String(d.fileId));
        const changes = (d.changes ?? {}) as Record<string, unknown>;
        if (f && typeof changes.forSale === 'boolean') f.forSale = changes.forSale;
        if (f && typeof changes.enabled === 'boolean') f.enabled = changes.enabled;
        if (f && typeof changes.title === 'string') f.title = changes.title;
        break;
      }
      case 'docs.file.deleted.v1': {
        const f = files.get(String(d.fileId));
        if (f) f.deleted = true;
        break;
      }
      case 'docs.file.viewed.v1':
      case 'docs.file.viewed.v2': counted(d, 'views', d.viewedAt); break;
      case 'docs.file.downloaded.v1':
      case 'docs.file.downloaded.v2': counted(d, 'downloads', d.downloadedAt); break;
      case 'docs.file.purchased.v1': { const u = user(d.ownerId); if (u) u.stats.total_sales += 1; break; }
      case 'docs.comment.posted.v1': {
        const u = user(d.fileOwnerId);
        if (u) u.stats.total_comments += 1;
        files.get(String(d.fileId))?.comments.push(Number(d.commentId));
        break;
      }
      default:
    }
  }
  const searchable = new Set<string>();
  const alive = new Map<string, { ownerId: number; causationid: string; forSale: boolean }>();
  for (const [id, f] of files) {
    if (f.deleted) continue;
    alive.set(id, { ownerId: f.ownerId, causationid: f.causationid, forSale: f.forSale });
    if (f.enabled) searchable.add(id);
    const u = user(f.ownerId);
    if (!u) continue;
    u.stats.total_files += 1;
    u.files.set(id, f.title);
    for (const c of f.comments) u.comments.add(c);
  }
  return { users, searchable, alive, fileDays };
};

/** What the record says of one counter: requests answered 200, and requests that failed in flight (no answer, or a 5xx): maybe recorded. */
export interface Bound { acked: number; unsure: number }

/** The bound on each file's views and downloads, from the record. */
export const boundsOf = (records: readonly Rec[]): Map<string, Record<keyof DayCounts, Bound>> => {
  const bounds = new Map<string, Record<keyof DayCounts, Bound>>();
  for (const r of records) {
    if ((r.op !== 'view' && r.op !== 'download') || r.fileId === undefined) continue;
    const file = bounds.get(r.fileId) ?? { views: { acked: 0, unsure: 0 }, downloads: { acked: 0, unsure: 0 } };
    const bound = file[r.op === 'view' ? 'views' : 'downloads'];
    if (r.status === 200) bound.acked += 1;
    else if (r.status === 0 || r.status >= 500) bound.unsure += 1;
    bounds.set(r.fileId, file);
  }
  return bounds;
};

/** An api-daily answer (only what the check reads), or why there is none. */
export interface DailyAnswer {
  days: ReadonlyArray<{ date: string; views: number; downloads: number }>;
  totals: { views: number; downloads: number };
}
export interface AnalyticsAnswers {
  /** Per user: api-stats' totals and api-daily over the run's days (all their files). */
  users: Map<number, { stats: { total_views: number; total_downloads: number } | string; daily: DailyAnswer | string }>;
  /** Per file not deleted: api-daily with its file_id over the run's days. */
  files: Map<string, DailyAnswer | string>;
}

const dayCounts = (answer: DailyAnswer): string => JSON.stringify(answer.days.filter((d) => d.views + d.downloads > 0).map((d) => [d.date, d.views, d.downloads]));
const modelDays = (days: Map<string, DayCounts> | undefined): string => JSON.stringify([...(days ?? new Map<string, DayCounts>())]
  .sort(([a], [b]) => a.localeCompare(b)).map(([date, c]) => [date, c.views, c.downloads]));

/**
 * The statistics over time against the record and the events; pure. Every file's api-daily views
 * and downloads lie between what was acknowledged and that plus what failed in flight, and equal
 * the events day by day; every user's days add up to api-stats' total_views and total_downloads.
 */
export const checkDailyCounts = (records: readonly Rec[], model: Model, answers: AnalyticsAnswers): string[] => {
  const diffs: string[] = [];
  const bounds = boundsOf(records);
  for (const [userId, answer] of answers.users) {
    if (typeof answer.stats === 'string' || typeof answer.daily === 'string') {
      diffs.push(`analytics of user ${userId}: ${typeof answer.stats === 'string' ? answer.stats : ''}${typeof answer.daily === 'string' ? answer.daily : ''}`);
      continue;
    }
    const { stats, daily } = answer;
    if (daily.totals.views !== stats.total_views) diffs.push(`user ${userId}: api-daily's views add up to ${daily.totals.views}, api-stats total_views is ${stats.total_views}`);
    if (daily.totals.downloads !== stats.total_downloads) diffs.push(`user ${userId}: api-daily's downloads add up to ${daily.totals.downloads}, api-stats total_downloads is ${stats.total_downloads}`);
    const sum = daily.days.reduce((n, d) => ({ views: n.views + d.views, downloads: n.downloads + d.downloads }), { views: 0, downloads: 0 });
    if (sum.views !== daily.totals.views || sum.downloads !== daily.totals.downloads) diffs.push(`user ${userId}: api-daily's totals ${JSON.stringify(daily.totals)} are not its days' sum ${JSON.stringify(sum)}`);
    const m = model.users.get(userId);
    if (m && dayCounts(daily) !== modelDays(m.days)) diffs.push(`user ${userId}: api-daily [date, views, downloads] ${dayCounts(daily)} ≠ events ${modelDays(m.days)}`);
  }
  for (const [fileId, answer] of answers.files) {
    if (typeof answer === 'string') {
      diffs.push(`api-daily of file ${fileId}: ${answer}`);
      continue;
    }
    const bound = bounds.get(fileId) ?? { views: { acked: 0, unsure: 0 }, downloads: { acked: 0, unsure: 0 } };
    for (const what of ['views', 'downloads'] as const) {
      const got = answer.totals[what];
      const b = bound[what];
      if (got < b.acked) diffs.push(`file ${fileId}: LOST ${what}: api-daily counts ${got}, ${b.acked} were acknowledged`);
      else if (got > b.acked + b.unsure) diffs.push(`file ${fileId}: ${what} counted twice or unasked for: api-daily counts ${got}, ${b.acked} acknowledged and ${b.unsure} failed in flight`);
    }
    if (dayCounts(answer) !== modelDays(model.fileDays.get(fileId))) diffs.push(`file ${fileId}: api-daily [date, views, downloads] ${dayCounts(answer)} ≠ events ${modelDays(model.fileDays.get(fileId))}`);
  }
  return diffs;
};
