// Hardening of the HTTP edge (issue 6, findings 1, 2, 3, 4, 5 and 7): nothing a client sends, however
// malformed, slow, oversized or cut off, takes the server down, holds a socket for ever, reads an
// oversized body to its end, or gets an answer that is not the spec's JSON envelope. Raw sockets
// send what fetch cannot; after each crash candidate the server must still answer /healthz.
//
// The server runs with short limits (HTTP_* variables) so the timeout tests are quick; assertions
// are about what happens (a JSON 408, a closed socket), never about how long it took: each wait has
// only a generous upper bound after which the test fails.
import assert from 'node:assert/strict';
import net from 'node:net';
import { gzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import type { RegisteredUser } from '../support/client.ts';
import { parseResponse } from '../support/raw-http.ts';
import { useServer } from '../support/fixture.ts';

const MAX_UPLOAD_BYTES = 100_000;
/** How long any single wait below may take before the test fails (the server's limits are ~1 s). */
const BOUND_MS = 20_000;

let user: RegisteredUser;
const fx = useServer({
  MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES),
  HTTP_HEADERS_TIMEOUT_MS: '1000',
  HTTP_BODY_IDLE_TIMEOUT_MS: '1500',
  // Above the read-your-writes wait of a command (5 s) so ordinary requests are never cut.
  HTTP_REQUEST_TIMEOUT_MS: '7000',
}, async () => {
  user = await fx.c.register();
});

interface RawResponse {
  /** Undefined when the server closed the connection without answering. */
  status?: number;
  headers: Record<string, string>;
  body: string;
  /** The server closed the connection (as opposed to the bound running out). */
  closed: boolean;
  /** Bytes of `body` (when given) the socket accepted before it was closed or errored. */
  written: number;
}

/**
 * Opens a socket, sends `head`, then the chunks `body` yields (each waiting for the socket to take
 * it), and collects what comes back until the server closes the connection or `BOUND_MS` passes.
 * `head` may be a function that trickles bytes itself.
 */
const exchange = async (
  head: string | Buffer | ((socket: net.Socket) => Promise<void>),
  body?: () => AsyncIterable<Buffer>,
): Promise<RawResponse> => {
  const socket = net.connect(fx.server.port, '127.0.0.1');
  const chunks: Buffer[] = [];
  let written = 0;
  const closed = new Promise<boolean>((resolve) => {
    const bound = setTimeout(() => resolve(false), BOUND_MS);
    socket.on('close', () => {
      clearTimeout(bound);
      resolve(true);
    });
  });
  let isClosed = false;
  void closed.then(() => { isClosed = true; });
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {});
  // A server that is gone refuses the connection: that closes the socket, never hangs the test.
  await new Promise<void>((resolve) => {
    socket.once('connect', () => resolve());
    socket.once('close', () => resolve());
  });
  const write = (data: Buffer | string): Promise<boolean> => new Promise((resolve) => {
    if (socket.destroyed || !socket.writable) return resolve(false);
    socket.write(data, (err) => resolve(err === undefined || err === null));
  });
  try {
    if (typeof head === 'function') await head(socket);
    else await write(head);
    if (body !== undefined) {
      for await (const chunk of body()) {
        if (isClosed || !(await write(chunk))) break;
        written += chunk.length;
      }
    }
  } catch {
    // the server closed the socket while we wrote: that is what some tests wait for
  }
  const wasClosed = await closed;
  socket.destroy();
  return { ...parseResponse(Buffer.concat(chunks).toString('latin1')), closed: wasClosed, written };
};

/** A simple request with `Connection: close`. */
const request = (method: string, path: string, headers: Record<string, string> = {}, body = ''): Promise<RawResponse> => {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: localhost', 'Connection: close'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body !== '' || ['POST', 'PUT', 'PATCH', 'DELETE'].includes(method)) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return exchange(`${lines.join('\r\n')}\r\n\r\n${body}`);
};

const describeRaw = (res: RawResponse): string =>
  `HTTP ${res.status ?? '(none)'} ${res.headers['content-type'] ?? '(no content-type)'} ${res.body.slice(0, 300)}`;

/** The spec's error envelope with this status (and message, when given). */
const expectEnvelope = (res: RawResponse, status: number | ((s: number) => boolean), message?: string): void => {
  assert.ok(res.status !== undefined, `expected an answer, the connection closed without one: ${describeRaw(res)}`);
  if (typeof status === 'number') assert.equal(res.status, status, describeRaw(res));
  else assert.ok(status(res.status), `unexpected status: ${describeRaw(res)}`);
  assert.match(res.headers['content-type'] ?? '', /^application\/json\b/i, describeRaw(res));
  const parsed = JSON.parse(res.body) as { status?: unknown; message?: unknown };
  assert.equal(parsed.status, 'error', describeRaw(res));
  assert.equal(typeof parsed.message, 'string', describeRaw(res));
  if (message !== undefined) assert.equal(parsed.message, message, describeRaw(res));
};

/** Any answer in the envelope, success or error. */
const expectJsonAnswer = (res: RawResponse): void => {
  assert.match(res.headers['content-type'] ?? '', /^application\/json\b/i, describeRaw(res));
  const parsed = JSON.parse(res.body) as { status?: unknown };
  assert.ok(parsed.status === 'success' || parsed.status === 'error', describeRaw(res));
};

const isClientError = (s: number): boolean => s >= 400 && s < 500;

/** The server is still up and answering. */
const expectAlive = async (): Promise<void> => {
  const res = await fetch(`${fx.server.baseUrl}/healthz`, { signal: AbortSignal.timeout(BOUND_MS) });
  assert.equal(res.status, 200, 'the server must still answer /healthz');
  await res.arrayBuffer();
};

const auth = (): Record<string, string> => ({ 'X-Authorization': `Bearer ${user.token}` });

const multipartHead = (boundary: string, extra: Record<string, string> = {}): string => {
  const lines = ['POST /api/V1/docs/api-upload HTTP/1.1', 'Host: localhost', `X-Authorization: Bearer ${user.token}`,
    `Content-Type: multipart/form-data; boundary=${boundary}`];
  for (const [name, value] of Object.entries(extra)) lines.push(`${name}: ${value}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
};

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('finding 1: multipart bodies that break off never crash the server', () => {
  it('an ignored part cut off by the end of the form → 400 "Malformed multipart body", and the server stays up', async () => {
    const body = '--X\r\nContent-Disposition: form-data; name="junk"; filename="a.txt"\r\n\r\nAAAA';
    const res = await request('POST', '/api/V1/docs/api-upload', { ...auth(), 'Content-Type': 'multipart/form-data; boundary=X' }, body);
    expectEnvelope(res, 400, 'Malformed multipart body');
    await expectAlive();
  });

  it('a second file part cut off → 400 "Malformed multipart body"', async () => {
    const body = '--X\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nAAAA\r\n'
      + '--X\r\nContent-Disposition: form-data; name="file"; filename="b.txt"\r\n\r\nBBBB';
    const res = await request('POST', '/api/V1/docs/api-upload', { ...auth(), 'Content-Type': 'multipart/form-data; boundary=X' }, body);
    expectEnvelope(res, 400, 'Malformed multipart body');
    await expectAlive();
  });

  it('a form cut off inside the file part or its headers → 400 "Malformed multipart body"', async () => {
    for (const body of [
      '--X\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nAAAA',
      '--X\r\nContent-Disposition: form-data; name="title"\r\n\r\nT\r\n--X\r\nContent-Dispos',
      '--X\r\n\r\n',
      'no boundary anywhere',
    ]) {
      const res = await request('POST', '/api/V1/docs/api-upload', { ...auth(), 'Content-Type': 'multipart/form-data; boundary=X' }, body);
      expectEnvelope(res, 400, 'Malformed multipart body');
    }
    await expectAlive();
  });

  it('multipart without a boundary → 400 "Malformed multipart body"', async () => {
    const res = await request('POST', '/api/V1/docs/api-upload', { ...auth(), 'Content-Type': 'multipart/form-data' }, 'x');
    expectEnvelope(res, 400, 'Malformed multipart body');
  });

  it('a client that closes the socket in the middle of an ignored part or of the file part leaves the server up', async () => {
    for (const name of ['junk', 'file']) {
      const socket = net.connect(fx.server.port, '127.0.0.1');
      socket.on('error', () => {});
      await new Promise<void>((resolve) => {
        socket.once('connect', () => resolve());
        socket.once('close', () => resolve());
      });
      socket.write(multipartHead('X', { 'Content-Length': '100000' }));
      socket.write(`--X\r\nContent-Disposition: form-data; name="${name}"; filename="a.txt"\r\n\r\n${'A'.repeat(1000)}`);
      await sleep(100);
      socket.destroy();
      await expectAlive();
    }
  });
});

describe('finding 2: slow clients do not hold sockets', () => {
  it('headers trickled one line at a time: the server answers 408 JSON (or nothing) and closes the socket', async () => {
    const res = await exchange(async (socket) => {
      socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n');
      // One header line after another, never the blank line that ends them.
      for (let i = 0; i < BOUND_MS / 200 && !socket.destroyed && socket.writable; i += 1) {
        socket.write(`X-Slow-${i}: ${i}\r\n`);
        await sleep(200);
      }
    });
    assert.ok(res.closed, 'the server must close a connection whose headers never end');
    if (res.status !== undefined) expectEnvelope(res, 408, 'Request timeout');
    await expectAlive();
  });

  it('a connection that sends nothing at all is closed', async () => {
    const res = await exchange(Buffer.alloc(0));
    assert.ok(res.closed, 'an idle connection must be closed');
  });

  it('an upload whose body stops arriving → 408 "Request timeout" JSON, then the socket closes', async () => {
    const res = await exchange(multipartHead('X', { 'Content-Length': '50000' }),
      async function* () {
        yield Buffer.from('--X\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nAAAA');
        // ...and then nothing, with the socket left open.
      });
    assert.ok(res.closed, 'the server must close a stalled upload');
    expectEnvelope(res, 408, 'Request timeout');
    await expectAlive();
  });

  it('a JSON body trickled byte by byte (never idle long enough to time out) → 408 "Request timeout" once the total time is up', async () => {
    const body = JSON.stringify({ search: 'x'.repeat(200) });
    const head = ['POST /api/V1/stats/api-search HTTP/1.1', 'Host: localhost', `X-Authorization: Bearer ${user.token}`,
      'Content-Type: application/json', `Content-Length: ${body.length}`].join('\r\n');
    const res = await exchange(`${head}\r\n\r\n`, async function* () {
      for (const ch of body) {
        yield Buffer.from(ch);
        await sleep(300);
      }
    });
    assert.ok(res.closed, 'the server must close a request past its total time');
    expectEnvelope(res, 408, 'Request timeout');
    await expectAlive();
  });
});

describe('finding 3: malformed percent-escapes are a client error', () => {
  it('answers 4xx (JSON, or the view page\'s HTML 404) and never 500', async () => {
    for (const path of ['/docs/%zz', '/docs/%', '/docs/%E0%A4%A', '/files/%zz/content', '/files/%/content?expires=1&signature=x',
      '/api/V1/docs/%zz', '/api/V1/users/api-files?user_id=%zz', '/api/V1/docs/api-download?file_id=%E0%A4%A', '/%zz', '/healthz/%']) {
      for (const method of ['GET', 'HEAD', 'POST']) {
        const res = await request(method, path, auth());
        assert.ok(res.status !== undefined && isClientError(res.status), `${method} ${path}: ${describeRaw(res)}`);
        if (method !== 'HEAD' && !(res.headers['content-type'] ?? '').startsWith('text/html')) expectEnvelope(res, isClientError);
      }
    }
    await expectAlive();
  });
});

describe('finding 4: a body that does not decode under its Content-Encoding is a client error', () => {
  const json = Buffer.from(JSON.stringify({ search: 'x', id: 1, file_id: 1, comment: 'c', name: 'n', email: 'e@x.io', password: 'p' }));
  const routes: Array<[string, string]> = [
    ['POST', '/api/V1/stats/api-search'], ['POST', '/api/V1/stats/api-stats'], ['POST', '/api/V1/users/api-comments'],
    ['GET', '/api/V1/users/api-files'], ['GET', '/api/V1/docs/api-categories'],
    ['POST', '/api/V1/users/api-register'], ['POST', '/api/V1/users/api-login'], ['DELETE', '/api/V1/docs/api-delete'],
    ['POST', '/api/V1/docs/api-comment'], ['POST', '/api/V1/docs/api-update'], ['POST', '/api/V1/docs/api-purchase'],
  ];
  it('gzip, deflate and br headers over bytes that are not compressed → 4xx JSON, never 5xx', async () => {
    for (const [method, path] of routes) {
      for (const encoding of ['gzip', 'deflate', 'br']) {
        const res = await request(method, path, { ...auth(), 'Content-Type': 'application/json', 'Content-Encoding': encoding }, json.toString('latin1'));
        // Routes that read no body answer as usual; the others refuse it.
        assert.ok(res.status !== undefined && res.status < 500, `${method} ${path} (${encoding}): ${describeRaw(res)}`);
        expectJsonAnswer(res);
      }
    }
    await expectAlive();
  });

  it('the search of the issue → 400 "Request body could not be decoded"', async () => {
    const res = await request('POST', '/api/V1/stats/api-search', { ...auth(), 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }, '{"search":"x"}');
    expectEnvelope(res, 400, 'Request body could not be decoded');
  });

  it('a gzip body cut short → 400, an unknown encoding → 4xx, both JSON', async () => {
    const truncated = gzipSync(json).subarray(0, 12).toString('latin1');
    expectEnvelope(await request('POST', '/api/V1/stats/api-search', { ...auth(), 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }, truncated), 400);
    expectEnvelope(await request('POST', '/api/V1/stats/api-search', { ...auth(), 'Content-Type': 'application/json', 'Content-Encoding': 'compress' }, '{}'), isClientError);
  });
});

describe('finding 5: every answer on the public port is the JSON envelope', () => {
  it('headers over the size limit → 431 JSON', async () => {
    const res = await request('GET', '/healthz', { 'X-Big': 'a'.repeat(64 * 1024) });
    expectEnvelope(res, 431, 'Request header fields too large');
    await expectAlive();
  });

  it('requests Node cannot parse → 400 JSON', async () => {
    for (const text of [
      'GET /healthz HTTP/1.1\r\nHost: localhost\r\nNot a header\r\n\r\n',
      'FOO /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n',
      'GET /healthz HTTP/9.9\r\nHost: localhost\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcde',
      'POST /api/V1/stats/api-search HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n',
      '\x00\x01\x02\r\n\r\n',
    ]) {
      const res = await exchange(text);
      expectEnvelope(res, 400);
    }
    await expectAlive();
  });

  it('every method on every route answers JSON (HEAD: no body), never 5xx, never a dropped connection', async () => {
    const paths = ['/healthz', '/readyz', '/metrics', '/api/V1/openapi.json', '/api/V1/users/api-register', '/api/V1/users/api-login',
      '/api/V1/docs/api-upload', '/api/V1/docs/api-download', '/api/V1/docs/api-delete', '/api/V1/docs/api-comment',
      '/api/V1/docs/api-update', '/api/V1/docs/api-purchase', '/api/V1/docs/api-categories', '/api/V1/stats/api-search',
      '/api/V1/stats/api-stats', '/api/V1/users/api-files', '/api/V1/users/api-comments', '/docs/1', '/files/1/content', '/nope'];
    for (const path of paths) {
      for (const method of ['OPTIONS', 'TRACE', 'PATCH', 'PUT', 'PROPFIND', 'HEAD', 'CONNECT']) {
        const res = await request(method, path, auth());
        assert.ok(res.status !== undefined && res.status < 500, `${method} ${path}: ${describeRaw(res)}`);
        if (method !== 'HEAD') expectEnvelope(res, isClientError);
      }
    }
    const options = await request('OPTIONS', '/healthz');
    expectEnvelope(options, 405, 'Invalid request method');
    assert.equal(options.headers['allow'], 'GET, HEAD');
    await expectAlive();
  });

  it('an HTTP/1.1 request without Host → 400 JSON with X-Request-Id (Node would answer an empty 400)', async () => {
    const res = await exchange('GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n');
    expectEnvelope(res, 400, 'Bad request');
    assert.ok(res.headers['x-request-id'], describeRaw(res));
    await expectAlive();
  });

  it('an Expect other than 100-continue → 417 JSON (Node would answer an empty 417)', async () => {
    const res = await request('GET', '/api/V1/openapi.json', { Expect: 'nothing' });
    expectEnvelope(res, 417, 'Expectation failed');
    assert.ok(res.headers['x-request-id'], describeRaw(res));
  });

  it('the operational paths are case-sensitive like every other path: /HEALTHZ, /Metrics → 404 JSON', async () => {
    for (const path of ['/HEALTHZ', '/Metrics', '/meTricS', '/ReadyZ']) expectEnvelope(await request('GET', path), 404, 'Not found');
  });

  it('an Upgrade request answers like any other request', async () => {
    const res = await request('GET', '/healthz', { Upgrade: 'websocket', Connection: 'Upgrade' });
    assert.ok(res.status !== undefined && res.status < 500, describeRaw(res));
    expectJsonAnswer(res);
  });
});

/** A chunked multipart upload far larger than the limit, made as it is sent. */
const oversizedUpload = (total: number) => async function* (): AsyncIterable<Buffer> {
  const chunk = Buffer.alloc(64 * 1024, 0x41);
  const frame = (data: Buffer): Buffer => Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')]);
  yield frame(Buffer.from('--X\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n'));
  for (let sent = 0; sent < total; sent += chunk.length) yield frame(chunk);
  yield frame(Buffer.from('\r\n--X--\r\n'));
  yield Buffer.from('0\r\n\r\n');
};

describe('finding 7: an upload over MAX_UPLOAD_BYTES is not read to its end', () => {
  const total = 640 * MAX_UPLOAD_BYTES; // 64 MB: more than any socket buffer could swallow
  it('a chunked upload → 413 "File too large", and the server stops reading long before the end', async () => {
    const res = await exchange(multipartHead('X', { 'Transfer-Encoding': 'chunked' }), oversizedUpload(total));
    expectEnvelope(res, 413, 'File too large');
    assert.ok(res.closed, 'the connection must close after the 413');
    assert.ok(res.written < total / 2, `the server read ${res.written} of ${total} bytes`);
    await expectAlive();
  });

  it('a declared Content-Length over the limit → 413 at once, connection closed, body unread', async () => {
    const res = await exchange(multipartHead('X', { 'Content-Length': String(total) }), async function* () {
      const chunk = Buffer.alloc(64 * 1024, 0x41);
      for (let sent = 0; sent < total; sent += chunk.length) yield chunk;
    });
    expectEnvelope(res, 413, 'File too large');
    assert.ok(res.closed);
    assert.ok(res.written < total / 2, `the server read ${res.written} of ${total} bytes`);
  });

  it('an oversized body without a token → 401 and the body is not read either', async () => {
    const head = ['POST /api/V1/docs/api-upload HTTP/1.1', 'Host: localhost', 'Content-Type: multipart/form-data; boundary=X',
      'Transfer-Encoding: chunked'].join('\r\n');
    const res = await exchange(`${head}\r\n\r\n`, oversizedUpload(total));
    expectEnvelope(res, 401, 'Missing JWT token');
    assert.ok(res.written < total / 2, `the server read ${res.written} of ${total} bytes`);
  });

  it('an upload within the limit still works afterwards', async () => {
    const { fileId } = await fx.c.uploadOk(user.token, {}, new Uint8Array(MAX_UPLOAD_BYTES).fill(7));
    assert.match(fileId, /^\d+$/);
  });
});

describe('connection limit (HTTP_MAX_CONNECTIONS)', () => {
  const LIMIT = 6;
  const limited = useServer({ HTTP_MAX_CONNECTIONS: String(LIMIT) });

  /** Opens a keep-alive connection and asks /healthz on it: true when answered, false when dropped. */
  const holdOne = async (sockets: net.Socket[]): Promise<boolean> => {
    const socket = net.connect(limited.server.port, '127.0.0.1');
    sockets.push(socket);
    socket.on('error', () => {});
    return await new Promise<boolean>((resolve) => {
      const bound = setTimeout(() => resolve(false), BOUND_MS);
      socket.once('connect', () => socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n'));
      socket.once('data', () => {
        clearTimeout(bound);
        resolve(true);
      });
      socket.once('close', () => {
        clearTimeout(bound);
        resolve(false);
      });
    });
  };

  it('connections beyond the limit are refused; once some close, new ones are served', async () => {
    const sockets: net.Socket[] = [];
    try {
      const answered: boolean[] = [];
      for (let i = 0; i < LIMIT + 2; i += 1) answered.push(await holdOne(sockets));
      assert.ok(answered.filter(Boolean).length <= LIMIT, `at most ${LIMIT} connections are served at once: ${answered}`);
      assert.ok(answered.includes(false), `a connection beyond the limit must be refused: ${answered}`);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
    let served = false;
    for (let i = 0; i < 50 && !served; i += 1) {
      const again: net.Socket[] = [];
      served = await holdOne(again);
      for (const socket of again) socket.destroy();
      if (!served) await sleep(100);
    }
    assert.ok(served, 'the server must serve again once connections closed');
  });
});
