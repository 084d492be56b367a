// One search must not hold the process (issue 17, finding 1): 100 text files of random six-letter
// words over "abcdef" (~99 KB of extracted text each), then one api-search of 28 such words with
// per_page 100. Before the bound, the query app scanned every hit's whole text for fuzzy matches
// in one synchronous run (seconds), and every other request of the process waited behind it.
// Measured as the event loop's longest delay while the attacker's search runs (never as the
// wall time of a request): another user's request can wait at most that long.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { IDENTITY_HEADER, makeLogger } from '@docshare/http';
import { makeMemorySearchIndex, type SearchDoc, type SearchIndex } from '@docshare/search-index';
import { makeSearchApp } from '../src/app.ts';

const sixLetters = (): string => Array.from({ length: 6 }, () => 'abcdef'[randomInt(6)]).join('');

/** ~99,000 characters of random six-letter words: over 100 files, nearly all 46,656 of them. */
const hostileText = (): string => Array.from({ length: 14_140 }, sixLetters).join(' ');

const FILES = 100;

/**
 * The longest the event loop may be held while the attack runs. The bound aims at a few tens of
 * milliseconds; this leaves a wide margin for a shared, slow machine (and a garbage collection),
 * while the unbounded search held it for seconds.
 */
const MAX_DELAY_MS = 1_000;

describe('a search of many fuzzy words over large documents', () => {
  let index: SearchIndex;
  let server: Server;
  let url: string;

  before(async () => {
    index = makeMemorySearchIndex();
    const docs: SearchDoc[] = Array.from({ length: FILES }, (_, i) => ({
      id: String(i + 1), title: `Random words ${i}`, description: 'Six letters at a time', tags: ['random'],
      category: 'General', categoryId: 1, license: 'CC BY', content: hostileText(), ownerId: (i % 4) + 1,
      visible: true, uploadedAt: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(),
    }));
    await index.upsertMany(docs.map((doc) => ({ doc, version: 1 })));
    const app = makeSearchApp(index, 'http://docshare.test', makeLogger('search-load-test', 'silent'));
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/V1/stats/api-search`;
  });

  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await index.close();
  });

  const search = (user: number, body: Record<string, unknown>) => fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [IDENTITY_HEADER]: String(user) },
    body: JSON.stringify(body),
  });

  it('answers 28 words with per_page 100 without holding the event loop', async (t) => {
    const term = Array.from({ length: 28 }, sixLetters).join(' ');
    assert.ok(term.length <= 200, 'within the API\'s limit on a search term');
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const res = await search(9, { search: term, per_page: 100 });
    const body = await res.json() as { status: string; total: number; results: { snippet: string }[] };
    delay.disable();
    assert.equal(res.status, 200);
    assert.equal(body.total, FILES);
    assert.equal(body.results.length, FILES);
    // Every hit still gets its excerpt, marked where the text matches.
    for (const item of body.results) assert.equal(typeof item.snippet, 'string');
    assert.ok(body.results.some((item) => item.snippet.includes('<mark>')), 'matches are marked');
    const maxMs = delay.max / 1e6;
    t.diagnostic(`event loop delay during the search: max ${maxMs.toFixed(1)} ms, mean ${(delay.mean / 1e6).toFixed(1)} ms`);
    assert.ok(maxMs < MAX_DELAY_MS, `the event loop was held ${maxMs.toFixed(0)} ms`);
  });
});
