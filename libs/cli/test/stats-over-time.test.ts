// The CLI's statistics over time (issue 21): `stats --daily`, `top`, `trending`, in-process, the
// server played by a fetch function: what they ask for (the default range from the CLI's clock),
// what they print (every server string shown as escapes), and their usage errors.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { dailyTable, dayRange, parseDay } from '../src/daily.ts';
import { EXIT } from '../src/exit.ts';
import { jsonResponse, runCli, type Ran } from './harness.ts';

let home: string;
before(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), 'docshare-cli-stats-'));
});
after(async () => {
  await rm(home, { recursive: true, force: true });
});

const DAILY = {
  status: 'success', timezone: 'UTC', from: '2026-02-27', to: '2026-03-01',
  days: [
    { date: '2026-02-27', views: 0, unique_viewers: 0, downloads: 0, unique_downloaders: 0, sales: 0, comments: 0 },
    { date: '2026-02-28', views: 1200, unique_viewers: 97, downloads: 3, unique_downloaders: 2, sales: 1, comments: 0 },
    { date: '2026-03-01', views: 5, unique_viewers: 4, downloads: 0, unique_downloaders: 0, sales: 0, comments: 2 },
  ],
  totals: { views: 1205, unique_viewers: 101, downloads: 3, unique_downloaders: 2, sales: 1, comments: 2 },
};
const TOP = { status: 'success', results: [{ id: '12', title: 'Notes\u001b[2J', link: 'http://api.test/docs/12', value: 40 }] };
const TRENDING = {
  status: 'success',
  results: [{ id: '7', title: 'Viral', link: 'http://api.test/docs/7', category: 'News\u202e', unique_viewers: 50, views: 61 }],
};

/** Noon UTC on 1 March 2026: "today" for the CLI. */
const NOW = new Date('2026-03-01T12:00:00Z');

const cli = async (argv: string[], body: unknown = DAILY): Promise<Ran & { urls: string[] }> => {
  const ran = await runCli(argv, {
    home, now: () => NOW, env: { DOCSHARE_TOKEN: 't', DOCSHARE_URL: 'http://api.test' }, answer: () => jsonResponse(200, body),
  });
  return { ...ran, urls: ran.calls.map((call) => call.url) };
};

describe('days', () => {
  it('parseDay takes calendar dates only', () => {
    assert.equal(parseDay('2024-02-29'), '2024-02-29');
    for (const bad of ['2025-02-29', '2025-13-01', '2025-1-01', '20250101', '2025-01-01T00:00:00Z', 'today', '']) assert.equal(parseDay(bad), undefined, bad);
  });

  it('dayRange: the last 30 UTC days ending today, or ending --to; both ends given are kept', () => {
    assert.deepEqual(dayRange(undefined, undefined, new Date('2026-03-01T23:59:59Z')), { from: '2026-01-31', to: '2026-03-01' });
    assert.deepEqual(dayRange(undefined, '2024-03-01', NOW), { from: '2024-02-01', to: '2024-03-01' }, 'a leap year');
    assert.deepEqual(dayRange('2026-02-20', undefined, NOW), { from: '2026-02-20', to: '2026-03-01' });
    assert.deepEqual(dayRange('2026-05-01', '2026-04-01', NOW), { from: '2026-05-01', to: '2026-04-01' }, 'the server judges the order');
  });

  it('dailyTable aligns the numbers under their headings, totals last', () => {
    assert.deepEqual(dailyTable(DAILY as never, false), [
      'date        views  unique viewers  downloads  unique downloaders  sales  comments',
      '2026-02-27      0               0          0                   0      0         0',
      '2026-02-28   1200              97          3                   2      1         0',
      '2026-03-01      5               4          0                   0      0         2',
      'total        1205             101          3                   2      1         2',
    ]);
    assert.deepEqual(dailyTable(DAILY as never, true)[1], '2026-02-28\t1200\t97\t3\t2\t1\t0');
  });
});

describe('docshare stats --daily', () => {
  it('asks for the last 30 UTC days by default and prints the table; the note on stderr', async () => {
    const r = await cli(['stats', '--daily']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.urls, ['http://api.test/api/V1/stats/api-daily?from=2026-01-31&to=2026-03-01']);
    assert.equal(r.stdout, `${dailyTable(DAILY as never, false).join('\n')}\n`);
    assert.match(r.stderr, /^3 UTC days, 2026-02-27 to 2026-03-01, all your files\n$/);
  });

  it('--from, --to and --file are sent as given; -q prints the days tab-separated; --json the answer', async () => {
    const r = await cli(['stats', '--daily', '--from', '2026-02-27', '--to', '2026-03-01', '--file', '12', '-q']);
    assert.deepEqual(r.urls, ['http://api.test/api/V1/stats/api-daily?from=2026-02-27&to=2026-03-01&file_id=12']);
    assert.equal(r.stdout.split('\n').length, 4);
    assert.equal(r.stderr, '');
    assert.deepEqual(JSON.parse((await cli(['stats', '--daily', '--json'])).stdout), DAILY);
  });

  it('the server\'s refusal is its message, exit 1', async () => {
    const r = await runCli(['stats', '--daily', '--from', '2020-01-01', '--retries', '0'], {
      home, now: () => NOW, env: { DOCSHARE_TOKEN: 't', DOCSHARE_URL: 'http://api.test' },
      answer: () => jsonResponse(400, { status: 'error', message: 'The range may span at most 366 days' }),
    });
    assert.equal(r.code, EXIT.apiError);
    assert.match(r.stderr, /The range may span at most 366 days \(HTTP 400/);
  });

  it('usage errors exit 2 before any request: bad dates, a bad file id, --from/--to/--file without --daily', async () => {
    for (const argv of [
      ['stats', '--daily', '--from', '2026-02-30'], ['stats', '--daily', '--to', 'yesterday'], ['stats', '--daily', '--file', 'x'],
      ['stats', '--from', '2026-02-01'], ['stats', '--file', '3'], ['top', '--days', '0'], ['top', '--limit', 'ten'],
      ['trending', '--hours', '-1'], ['trending', '--category', 'news'], ['trending', '--limit', '1.5'],
    ]) {
      const r = await cli(argv);
      assert.equal(r.code, EXIT.usage, `${argv.join(' ')}: ${r.stderr}`);
      assert.equal(r.calls.length, 0, argv.join(' '));
    }
  });

  it('plain stats still prints the totals', async () => {
    const r = await cli(['stats'], { status: 'success', data: { total_files: 2, total_views: 17, total_downloads: 5, total_sales: 1, total_comments: 3 } });
    assert.deepEqual(r.urls, ['http://api.test/api/V1/stats/api-stats']);
    assert.match(r.stdout, /^files 2\nviews 17\n/);
  });
});

describe('docshare top and trending', () => {
  it('top asks for the metric, days and limit given, and prints each file with its value', async () => {
    const r = await cli(['top', '--metric', 'unique_viewers', '--days', '30', '--limit', '5'], TOP);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.urls, ['http://api.test/api/V1/stats/api-top?metric=unique_viewers&days=30&limit=5']);
    assert.equal(r.stdout, '12\t40  Notes\\x1b[2J  http://api.test/docs/12\n');
    assert.match(r.stderr, /1 files by unique_viewers over the last 30 UTC days/);
    const plain = await cli(['top', '-q'], TOP);
    assert.deepEqual(plain.urls, ['http://api.test/api/V1/stats/api-top']);
    assert.equal(plain.stdout, '12\n');
  });

  it('trending asks for the hours, category and limit given, and prints unique viewers and views', async () => {
    const r = await cli(['trending', '--hours', '6', '--category', '3', '--limit', '20'], TRENDING);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.urls, ['http://api.test/api/V1/stats/api-trending?hours=6&category_id=3&limit=20']);
    assert.equal(r.stdout, '7\t50 unique viewers, 61 views  Viral  [News\\u202e]  http://api.test/docs/7\n');
    assert.deepEqual(JSON.parse((await cli(['trending', '--json'], TRENDING)).stdout), TRENDING);
  });
});
