// Transfers and what they cost (issue 17, items 7 and 11): an upload that trickles gets a JSON 408
// and gives its descriptors back (socket and spool file); uploads in flight are capped per user
// (429) and per process (503), both with Retry-After, while a normal request still gets in; and
// every answer, whoever makes it, carries `X-Content-Type-Options: nosniff`.
//
// Raw sockets send what fetch cannot (a body that trickles, one held open). Servers run with small
// limits; every wait polls until what it waits for happens, bounded only by BOUND_MS, and nothing
// asserts how long anything took.
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import net from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { RegisteredUser } from '../support/client.ts';
import { useServer } from '../support/fixture.ts';
import { sampleOf, scrape } from '../support/metrics.ts';
import { localOnly, TARGET } from '../support/server.ts';
import { parseResponse, type ParsedAnswer } from '../support/raw-http.ts';
import { waitFor } from '../support/wait.ts';

const BOUND_MS = 30_000;
/** Counting spool files and the process's descriptors needs the one embedded process, run here. */
const embeddedOnly = localOnly || (TARGET === 'embedded' ? false : 'counts the spool files of the one embedded process');

type Answer = ParsedAnswer;

/** A raw connection: what it was sent, and the answer once the server closes it. */
interface Held { socket: net.Socket; closed: Promise<Answer> }

const open = (port: number, head: string): Held => {
  const socket = net.connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {});
  const closed = new Promise<Answer>((resolve) => {
    const bound = setTimeout(() => socket.destroy(), BOUND_MS);
    socket.on('close', () => {
      clearTimeout(bound);
      resolve(parseResponse(Buffer.concat(chunks).toString('latin1')));
    });
  });
  socket.write(head);
  return { socket, closed };
};

/** An upload's head and the start of its file part: the server has opened its spool file once it has read this. */
const uploadStart = (token: string, declared: number): string => {
  const fields = Object.entries({ title: 't', description: 'd', tags: 'x', cc_license: 'CC BY', new_category_name: 'Transfers' })
    .map(([name, value]) => `--B\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`).join('');
  return [
    'POST /api/V1/docs/api-upload HTTP/1.1', 'Host: localhost', `X-Authorization: Bearer ${token}`,
    'Content-Type: multipart/form-data; boundary=B', `Content-Length: ${declared}`, '', '',
  ].join('\r\n') + fields + `--B\r\nContent-Disposition: form-data; name="file"; filename="slow.bin"\r\n\r\n${'A'.repeat(1024)}`;
};

/** Sends one byte every `everyMs` while the socket is open (never idle long enough for the idle timeout). */
const trickle = (held: Held, everyMs: number): (() => void) => {
  const timer = setInterval(() => { if (held.socket.writable) held.socket.write('A'); }, everyMs);
  void held.closed.then(() => clearInterval(timer));
  return () => clearInterval(timer);
};

const spoolFiles = async (dataDir: string): Promise<number> => (await readdir(join(dataDir, 'blobs', 'tmp')).catch(() => [])).length;

const expectError = (answer: Answer, status: number, message: string): void => {
  const shown = `${answer.status} ${answer.body.slice(0, 200)}`;
  assert.equal(answer.status, status, shown);
  assert.match(answer.headers['content-type'] ?? '', /^application\/json\b/, shown);
  assert.deepEqual(JSON.parse(answer.body), { status: 'error', message }, shown);
};

describe('an upload that trickles', { skip: embeddedOnly }, () => {
  let user: RegisteredUser;
  const fx = useServer({
    // Below 1 KiB/s over 2 s once the server has waited 2 s: a byte every 100 ms is far below.
    HTTP_BODY_MIN_BYTES_PER_SECOND: '1024', HTTP_BODY_RATE_GRACE_MS: '2000', HTTP_BODY_RATE_WINDOW_MS: '2000',
  }, async () => {
    user = await fx.c.register();
  });

  it('gets a JSON 408 "Request timeout", and its socket and spool file are freed', async () => {
    const descriptors = async (): Promise<number> => sampleOf(await scrape(fx.server, 'gateway'), 'process_open_fds') ?? NaN;
    const before = await descriptors();
    assert.ok(Number.isFinite(before), 'the server reports process_open_fds');
    const held = open(fx.server.port, uploadStart(user.token, 1_000_000));
    trickle(held, 100);
    // While it trickles the upload holds its spool file.
    await waitFor(async () => (await spoolFiles(fx.server.dataDir)) === 1, { timeoutMs: BOUND_MS });
    const answer = await held.closed;
    expectError(answer, 408, 'Request timeout');
    assert.equal(answer.headers['retry-after'], undefined);
    await waitFor(async () => (await spoolFiles(fx.server.dataDir)) === 0, { timeoutMs: BOUND_MS });
    // Every descriptor it held is back (the scrape's own keep-alive connection was there before).
    await waitFor(async () => {
      const now = await descriptors();
      assert.ok(now <= before, `open descriptors: ${now}, before the upload: ${before}`);
      return true;
    }, { timeoutMs: BOUND_MS });
    assert.equal((await fx.c.stats(user.token)).status, 200);
  });
});

describe('uploads in flight beyond the caps', { skip: embeddedOnly }, () => {
  const users: RegisteredUser[] = [];
  const fx = useServer({
    HTTP_MAX_UPLOADS: '3', HTTP_MAX_UPLOADS_PER_USER: '2',
    // The held uploads below trickle on purpose: no minimum pace here.
    HTTP_BODY_MIN_BYTES_PER_SECOND: '0',
  }, async () => {
    for (let i = 0; i < 3; i++) users.push(await fx.c.register());
  });

  it('are refused at once, 429 per user and 503 per process, while a normal request still succeeds', async () => {
    const [ada, bob, cyd] = users as [RegisteredUser, RegisteredUser, RegisteredUser];
    const held: Held[] = [];
    const hold = async (user: RegisteredUser): Promise<void> => {
      const one = open(fx.server.port, uploadStart(user.token, 1_000_000));
      held.push(one);
      trickle(one, 1_000);
      await waitFor(async () => (await spoolFiles(fx.server.dataDir)) === held.length, { timeoutMs: BOUND_MS });
    };
    try {
      await hold(ada);
      await hold(ada);
      const third = await open(fx.server.port, uploadStart(ada.token, 1_000_000)).closed;
      expectError(third, 429, 'Too many uploads in progress. Please try again later.');
      assert.equal(third.headers['retry-after'], '5');

      await hold(bob);
      const overProcess = await open(fx.server.port, uploadStart(bob.token, 1_000_000)).closed;
      expectError(overProcess, 503, 'Service unavailable, try again later');
      assert.equal(overProcess.headers['retry-after'], '5');

      // Everything else goes on: the caps hold uploads below the connection budget.
      const stats = await fx.c.stats(cyd.token);
      assert.equal(stats.status, 200, stats.text);
      assert.equal((await fx.c.raw('GET', '/healthz')).status, 200);
      assert.equal(held.every((one) => !one.socket.destroyed), true, 'the held uploads are still open');
    } finally {
      for (const one of held) one.socket.destroy();
    }
    // Their slots come back with their connections.
    await waitFor(async () => (await spoolFiles(fx.server.dataDir)) === 0, { timeoutMs: BOUND_MS });
    const { fileId } = await waitFor(async () => fx.c.uploadOk(cyd.token), { timeoutMs: BOUND_MS });
    assert.match(fileId, /^\d+$/);
  });
});

describe('X-Content-Type-Options: nosniff on every answer', () => {
  const ORIGIN = 'https://app.example.com';
  let user: RegisteredUser;
  let fileId = '';
  const fx = useServer({ CORS_ORIGINS: ORIGIN, RATE_LIMIT_POINTS: '40' }, async () => {
    user = await fx.c.register();
    ({ fileId } = await fx.c.uploadOk(user.token, {}, new TextEncoder().encode('<html><script>alert(1)</script></html>'), 'page.html', 'text/html'));
  });

  const expectNosniff = (what: string, headers: Headers | Record<string, string>, status?: number): void => {
    const value = headers instanceof Headers ? headers.get('x-content-type-options') : headers['x-content-type-options'];
    assert.equal(value, 'nosniff', `${what} (${status ?? '?'}) must carry X-Content-Type-Options: nosniff`);
  };

  it('JSON successes and errors, the gateway\'s own 401/404/405, the docs UI, probes and preflights', async () => {
    const c = fx.c;
    const cases: Array<[string, Promise<{ status: number; headers: Headers }>]> = [
      ['api-stats', c.stats(user.token)],
      ['api-search without a token (401)', c.search(undefined, { search: 'x' })],
      ['an unknown route (404)', c.raw('GET', '/no/such/route')],
      ['a wrong method (405)', c.raw('PUT', '/api/V1/stats/api-stats')],
      ['malformed JSON (400)', c.raw('POST', '/api/V1/stats/api-search', { headers: { 'X-Authorization': `Bearer ${user.token}`, 'Content-Type': 'application/json' }, body: '{' })],
      ['the OpenAPI document', c.raw('GET', '/api/V1/openapi.json')],
      ['the API reference page', c.raw('GET', '/api/V1/docs')],
      ['the index', c.raw('GET', '/')],
      ['/healthz', c.raw('GET', '/healthz')],
      ['/readyz', c.raw('GET', '/readyz')],
      ['a CORS preflight', c.raw('OPTIONS', '/api/V1/stats/api-search', {
        headers: { Origin: ORIGIN, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'x-authorization, content-type' },
      })],
    ];
    for (const [what, pending] of cases) {
      const res = await pending;
      expectNosniff(what, res.headers, res.status);
    }
  });

  it('the view page, its 304, the file\'s bytes and their 304', async () => {
    // The page may change between the two requests (the text extractor's report lands, in
    // distributed mode): then the second answer is the new page, with another ETag; ask again.
    let again: Awaited<ReturnType<typeof fx.c.raw>> | undefined;
    for (let attempt = 0; attempt < 5 && again?.status !== 304; attempt++) {
      const page = await fx.c.view(fileId);
      assert.equal(page.status, 200);
      expectNosniff('the view page', page.headers, page.status);
      const etag = page.headers.get('etag') ?? '';
      again = await fx.c.raw('GET', `/docs/${fileId}`, { headers: { 'If-None-Match': etag } });
      if (again.status !== 304) {
        assert.equal(again.status, 200);
        assert.notEqual(again.headers.get('etag'), etag, 'a 200 to a conditional GET is a page that changed');
      }
    }
    assert.ok(again);
    assert.equal(again.status, 304);
    expectNosniff('the view page\'s 304', again.headers, again.status);

    const download = await fx.c.download(user.token, fileId);
    assert.equal(download.status, 200, download.text);
    expectNosniff('api-download', download.headers, download.status);
    const content = await fx.c.bytes(download.body.download_url as string);
    assert.equal(content.status, 200);
    expectNosniff('the file\'s bytes', content.headers, content.status);
    const cached = await fx.c.bytes(download.body.download_url as string, { headers: { 'If-None-Match': content.headers.get('etag') ?? '' } });
    assert.equal(cached.status, 304);
    expectNosniff('the file\'s 304', cached.headers, cached.status);
  });

  it('answers of the HTTP layer itself (an unparseable request) and the rate limit\'s 429', async () => {
    const raw = await open(fx.server.port, 'GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n').closed;
    assert.equal(raw.status, 400);
    expectNosniff('an unparseable request', raw.headers, raw.status);
    let limited: { status: number; headers: Headers } | undefined;
    for (let i = 0; i < 60 && limited === undefined; i++) {
      const res = await fx.c.stats(user.token);
      if (res.status === 429) limited = res;
    }
    assert.ok(limited !== undefined, 'the rate limit answers 429 within 60 requests');
    expectNosniff('the rate limit\'s 429', limited.headers, limited.status);
  });
});
