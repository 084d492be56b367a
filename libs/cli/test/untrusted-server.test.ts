// The CLI does not trust the server (issue 17, findings 4 and 9): control characters it sends are
// shown as escapes, --json stays valid JSON with nothing a terminal acts on, an answer over the
// SDK's bound is refused having read at most the bound, and a cursor walk ends. In-process, the
// server played by a fetch function. (The bin against a hostile HTTP server: tests/cli/.)
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EXIT } from '../src/exit.ts';
import { shown, terminalSafeJson, visible } from '../src/terminal.ts';
import { jsonResponse, runCli, type Ran } from './harness.ts';

let home: string;
before(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), 'docshare-cli-untrusted-'));
});
after(async () => {
  await rm(home, { recursive: true, force: true });
});

/** Runs the CLI with a token and captured output, `answer` playing the server (given the JSON body sent). */
const cli = (argv: string[], answer: (url: string, body: unknown) => Response | Promise<Response>, tty = false): Promise<Ran> =>
  runCli(argv, {
    home, tty, env: { DOCSHARE_TOKEN: 't', DOCSHARE_URL: 'http://api.test' },
    answer: (url, init) => answer(url, typeof init?.body === 'string' ? JSON.parse(init.body) : undefined),
  });

const json = (body: unknown, status = 200): Response => jsonResponse(status, body);

/** Text another user (or an old server) could have stored: every kind a terminal acts on. */
const EVIL = 'A\u001b]0;pwned\u0007B\u001b[2J\u001b]52;c;cm0gLXJmIH4=\u0007C\u009b31mD\u202eE\u2066F\rG\nH\u0000I\u007fJ\u2028K';
/** Characters that must not reach a terminal raw. */
// eslint-disable-next-line no-control-regex -- the point
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe('terminal output of what the server sends', () => {
  it('visible() escapes controls, bidi controls and lone surrogates; keeps tabs, text and emoji', () => {
    assert.equal(visible('a\u001b[2Jb'), 'a\\x1b[2Jb');
    assert.equal(visible('x\u009b\u0085\u007f'), 'x\\x9b\\x85\\x7f');
    assert.equal(visible('l1\nl2\r'), 'l1\\nl2\\r');
    assert.equal(visible('\u202eabc\u2069\u2028'), '\\u202eabc\\u2069\\u2028');
    assert.equal(visible('a\ud800b\udc00'), 'a\\ud800b\\udc00');
    assert.equal(visible('tab\there, café, שלום\u200f, 👩‍👩‍👧, 😀'), 'tab\there, café, שלום\u200f, 👩‍👩‍👧, 😀');
    assert.equal(shown`keep\nthis ${'but\nnot this'}`, 'keep\nthis but\\nnot this');
    const value = { s: 'x\u0085\u009b\u202e\u2028\u007fy' };
    const safe = terminalSafeJson(JSON.stringify(value, null, 2));
    assert.doesNotMatch(safe, RAW);
    assert.deepEqual(JSON.parse(safe), value);
  });

  const link = `http://api.test/docs/1${EVIL}`;
  const cases: Array<[string, string[], unknown]> = [
    ['search', ['search', 'x'], { status: 'success', results: [{ id: `1${EVIL}`, title: EVIL, link, description: EVIL, category: EVIL, tag: EVIL, snippet: `<mark>${EVIL}</mark> ${EVIL}` }], total: 1, page: 1, per_page: 20, facets: { category: [{ id: '1', name: EVIL, count: 1 }], license: [{ value: EVIL, count: 1 }], tag: [{ value: EVIL, count: 1 }] } }],
    ['search --facets', ['search', 'x', '--facets'], { status: 'success', results: [{ id: '1', title: 't', link, description: '', category: 'c', tag: '', snippet: EVIL }], total: 1, page: 1, per_page: 20, facets: { category: [{ id: '1', name: EVIL, count: 1 }], license: [{ value: EVIL, count: 1 }], tag: [{ value: EVIL, count: 1 }] } }],
    ['comments', ['comments'], { status: 'success', data: [{ comment_id: 1, submission_date: EVIL, title: EVIL, comment: EVIL, link }], total: 1, page: 1, per_page: 100 }],
    ['files', ['files'], { status: 'success', user: { id: 1, name: EVIL }, files: [{ file_id: 1, upload_date: EVIL, title: EVIL, description: EVIL, file_url: link }], total: 1, page: 1, per_page: 20 }],
    ['categories', ['categories'], { status: 'success', data: [{ id: 1, name: EVIL, description: EVIL, tags: EVIL }], total: 1, page: 1, per_page: 100 }],
    ['stats', ['stats'], { status: 'success', data: { total_comments: EVIL, total_files: EVIL, total_views: 1, total_downloads: 1, total_sales: 1 } }],
    ['comment', ['comment', '3', 'hi'], { status: 'success', message: EVIL, comment_id: EVIL }],
    ['update', ['update', '3', '--title', 't'], { status: 'success', message: EVIL }],
    ['delete', ['delete', '3'], { status: 'success', message: EVIL }],
    ['purchase', ['purchase', '3'], { status: 'success', message: EVIL, sale_id: EVIL }],
  ];

  for (const [name, argv, body] of cases) {
    it(`${name}: every control character shows as an escape (on a terminal too); -q as well`, async () => {
      for (const extra of [[], ['-q']]) {
        const r = await cli([...argv, ...extra], () => json(body), true);
        assert.equal(r.code, 0, r.stderr);
        const printed = r.stdout.replaceAll('\u001b[1m', '').replaceAll('\u001b[22m', ''); // the CLI's own bold marks on a terminal
        assert.doesNotMatch(printed, RAW, `${name} ${extra.join(' ')} stdout: ${JSON.stringify(r.stdout)}`);
        assert.doesNotMatch(r.stderr, RAW, `${name} stderr: ${JSON.stringify(r.stderr)}`);
        if (extra.length === 0) assert.match(r.stdout + r.stderr, /\\x1b\]0;pwned\\x07/, name);
      }
    });

    it(`${name} --json: the server's answer, parsed back whole, with nothing raw a terminal acts on`, async () => {
      const r = await cli([...argv, '--json'], () => json(body));
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stdout, RAW);
      assert.deepEqual(JSON.parse(r.stdout), body);
    });
  }

  it('an error message, its request id and a non-JSON error body are shown escaped; --json keeps the envelope', async () => {
    const evilBody = json({ status: 'error', message: EVIL }, 400);
    const r = await cli(['stats'], () => evilBody);
    assert.equal(r.code, EXIT.apiError);
    assert.doesNotMatch(r.stderr, RAW);
    assert.match(r.stderr, /^docshare: A\\x1b\]0;pwned\\x07B/);
    const j = await cli(['stats', '--json'], () => json({ status: 'error', message: EVIL }, 400));
    assert.doesNotMatch(j.stdout, RAW);
    assert.deepEqual(JSON.parse(j.stdout), { status: 'error', message: EVIL });
    const text = await cli(['stats'], () => new Response(`<h1>${EVIL}</h1>`, { status: 400, headers: { 'X-Request-Id': 'r\u0085id' } }));
    assert.doesNotMatch(text.stderr, RAW);
    // A retry's reason (the server's 503 message) is escaped too.
    let n = 0;
    const retried = await cli(['stats', '--retries', '1'], () => (n++ === 0
      ? new Response(JSON.stringify({ status: 'error', message: EVIL }), { status: 503, headers: { 'Retry-After': '0' } })
      : json({ status: 'success', data: { total_comments: 0, total_files: 0, total_views: 0, total_downloads: 0, total_sales: 0 } })));
    assert.equal(retried.code, 0);
    assert.match(retried.stderr, /trying again/);
    assert.doesNotMatch(retried.stderr, RAW);
  });
});

/** A body of `total` bytes made as it is read, counting what was pulled; never held whole. */
const hugeBody = (total: number, pulled: { bytes: number }): ReadableStream<Uint8Array> => {
  const chunk = new Uint8Array(1024 * 1024).fill(0x61);
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= total) return controller.close();
      sent += chunk.byteLength;
      pulled.bytes += chunk.byteLength;
      controller.enqueue(chunk);
    },
  }, { highWaterMark: 0 });
};

const MiB = 1024 * 1024;
const BOUND = 64 * MiB;

describe('answers and walks the CLI bounds', () => {
  it('a 400 MB answer is refused after reading at most 64 MiB per attempt: exit 5, a clear message, also with --json', async () => {
    // Each attempt (the SDK retries what looks like a failed exchange) reads its own body.
    const attempts: Array<{ bytes: number }> = [];
    const r = await cli(['stats'], () => {
      const pulled = { bytes: 0 };
      attempts.push(pulled);
      return new Response(hugeBody(400 * 1024 * 1024, pulled), { status: 200, headers: { 'Content-Type': 'application/json' } });
    });
    assert.equal(r.code, EXIT.server, r.stderr);
    assert.match(r.stderr, /^docshare: the server's answer is larger than 64 MiB: refused\n$/m);
    assert.doesNotMatch(r.stderr, /is the server running/);
    assert.ok(attempts.length >= 1);
    for (const pulled of attempts) assert.ok(pulled.bytes <= BOUND + 2 * 1024 * 1024, `pulled ${pulled.bytes} bytes, bound ${BOUND}`);

    const j = await cli(['stats', '--json', '--retries', '0'], () => new Response(hugeBody(400 * 1024 * 1024, { bytes: 0 }), { status: 200 }));
    assert.equal(j.code, EXIT.server);
    assert.deepEqual(JSON.parse(j.stdout), { status: 'error', message: "the server's answer is larger than 64 MiB: refused" });
  });

  it('an answer that declares more than 64 MiB is refused before its body is read', async () => {
    const pulled = { bytes: 0 };
    const r = await cli(['stats', '--retries', '0'], () =>
      new Response(hugeBody(400 * 1024 * 1024, pulled), { status: 200, headers: { 'Content-Length': String(400 * 1024 * 1024) } }));
    assert.equal(r.code, EXIT.server);
    assert.match(r.stderr, /larger than 64 MiB/);
    assert.ok(pulled.bytes <= 1024 * 1024, `pulled ${pulled.bytes}`);
  });

  const page = (n: number, cursor: string | undefined): Response =>
    json({ status: 'success', results: [{ id: String(n), title: `t${n}`, link: `http://api.test/docs/${n}`, description: '', category: 'c', tag: '', snippet: '' }], total: 1e9, page: n, per_page: 1, ...(cursor !== undefined ? { next_cursor: cursor } : {}) });

  it('search --all stops after --max-pages when the cursor never ends (exit 8), having printed those pages', async () => {
    let n = 0;
    const r = await cli(['search', 'x', '--all', '--max-pages', '5', '-q'], () => {
      n += 1;
      return page(n, `cursor-${n}`);
    });
    assert.equal(r.code, EXIT.incomplete, r.stderr);
    assert.equal(r.calls.length, 5);
    assert.deepEqual(r.stdout.trim().split('\n'), ['1', '2', '3', '4', '5']);
    assert.match(r.stderr, /stopped after 5 pages \(5 results\); more follow: --max-pages raises the limit/);
  });

  it('search --all stops by default after 1000 pages', async () => {
    let n = 0;
    const r = await cli(['search', 'x', '--all', '-q'], () => {
      n += 1;
      return page(n, `c${n}`);
    });
    assert.equal(r.code, EXIT.incomplete);
    assert.equal(r.calls.length, 1000);
  });

  it('search --all stops when the server sends a cursor again (exit 5)', async () => {
    let n = 0;
    const cursors = ['a', 'b', 'c', 'b'];
    const r = await cli(['search', 'x', '--all', '-q'], () => {
      n += 1;
      return page(n, cursors[n - 1]);
    });
    assert.equal(r.code, EXIT.server, r.stderr);
    assert.equal(r.calls.length, 4);
    assert.deepEqual(r.calls.map((c) => (c.body as { cursor?: string }).cursor), [undefined, 'a', 'b', 'c']);
    assert.match(r.stderr, /sent a search cursor it had sent before \(page 5\): stopped after 4 results/);
  });

  it('search --all --json stops once the results it holds pass 64 MiB (exit 8); without --json nothing is held', async () => {
    const big = 'b'.repeat(MiB);
    const pageOf = (n: number): Response => json({ status: 'success', results: [{ id: String(n), title: big, link: 'l', description: '', category: 'c', tag: '', snippet: '' }], total: 1e9, page: n, per_page: 1, next_cursor: `c${n}` });
    let n = 0;
    const r = await cli(['search', 'x', '--all', '--json'], () => pageOf(++n));
    assert.equal(r.code, EXIT.incomplete, r.stderr);
    assert.equal(r.calls.length, 64, 'the 64th page of 1 MiB passes 64 MiB');
    assert.match(JSON.parse(r.stdout).message, /passed 64 MiB, more than --json holds/);
    n = 0;
    const plain = await cli(['search', 'x', '--all', '-q', '--max-pages', '70'], () => pageOf(++n));
    assert.equal(plain.code, EXIT.incomplete);
    assert.equal(plain.calls.length, 70);
  });

  it('search --all --json: the whole walk as one JSON answer; a walk that ends prints "No results found" only when empty', async () => {
    let n = 0;
    const r = await cli(['search', 'x', '--all', '--json'], () => {
      n += 1;
      return page(n, n < 3 ? `c${n}` : undefined);
    });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout).results.map((x: { id: string }) => x.id), ['1', '2', '3']);
    n = 0;
    const plain = await cli(['search', 'x', '--all'], () => {
      n += 1;
      return page(n, n < 2 ? `c${n}` : undefined);
    });
    assert.equal(plain.code, 0);
    assert.doesNotMatch(plain.stderr, /No results found/);
    const none = await cli(['search', 'x', '--all'], () => json({ status: 'error', message: 'No results found' }, 404));
    assert.equal(none.code, 0);
    assert.match(none.stderr, /No results found/);
  });
});
