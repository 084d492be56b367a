// The per-user storage quota (STORAGE_QUOTA_BYTES; docs/api-decisions.md upload row, docs/architecture.md).
import assert from 'node:assert/strict';
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { makeOdt } from '@docshare/extract/testing';
import { randomWord, type RegisteredUser } from '../support/client.ts';
import { assertKeys, expectError, expectSuccess } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';
import { localOnly } from '../support/server.ts';
import { eventually } from '../support/wait.ts';

const QUOTA = 10_000;

describe('storage quota', { skip: localOnly }, () => {
  const fx = useServer({ STORAGE_QUOTA_BYTES: String(QUOTA) });
  let ada: RegisteredUser;

  const upload = (user: RegisteredUser, size: number) =>
    fx.c.upload(user.token, { title: 'q', description: 'd', tags: 'x', cc_license: 'CC BY', new_category_name: 'Quota' }, randomBytes(size), 'q.bin');
  const uploaded = async (user: RegisteredUser, size: number): Promise<string> =>
    String(expectSuccess(await upload(user, size), 201).file_id);
  const refused = async (user: RegisteredUser, size: number): Promise<void> => {
    expectError(await upload(user, size), 413, 'Storage quota exceeded');
  };

  it('accepts uploads up to the quota exactly, then refuses with 413 "Storage quota exceeded"', async () => {
    ada = await fx.c.register();
    await uploaded(ada, 4_000);
    await uploaded(ada, 4_000);
    await refused(ada, 2_001);
    await uploaded(ada, 2_000);
    // At the quota: even an empty file is refused, and nothing was counted for the refusals.
    await refused(ada, 1);
    await refused(ada, 0);
    const stats = expectSuccess(await fx.c.stats(ada.token), 200).data;
    assertKeys(stats, ['total_comments', 'total_files', 'total_views', 'total_downloads', 'total_sales'], 'stats data');
    assert.equal(stats.total_files, 3);
    // Another user has a quota of their own.
    const bob = await fx.c.register();
    await uploaded(bob, 9_000);
  });

  it('a deleted file gives its bytes back', async () => {
    const u = await fx.c.register();
    const big = await uploaded(u, 7_000);
    await uploaded(u, 3_000);
    await refused(u, 1);
    expectSuccess(await fx.c.del(u.token, big), 200);
    await refused(u, 7_001);
    await uploaded(u, 7_000);
    await refused(u, 1);
  });

  it('a user at the quota is refused before the server reads the body (declared Content-Length)', async () => {
    const u = await fx.c.register();
    await uploaded(u, QUOTA);
    // Declares 50 MB and sends only the first bytes: the answer must come without the rest.
    const { status, body } = await partialUpload(fx.server.baseUrl, u.token, 50_000_000);
    assert.equal(status, 413);
    assert.deepEqual(body, { status: 'error', message: 'Storage quota exceeded' });
  });

  it('a file over the free space is refused, whether its length is declared or not', async () => {
    const u = await fx.c.register();
    await uploaded(u, 6_000);
    // fetch declares the length of a FormData body; the raw request sends it chunked.
    await refused(u, 4_500);
    const { status, body } = await chunkedUpload(fx.server.baseUrl, u.token, 4_500);
    assert.equal(status, 413);
    assert.deepEqual(body, { status: 'error', message: 'Storage quota exceeded' });
    await uploaded(u, 4_000);
  });

  it('concurrent uploads by one user cannot jointly overshoot the quota', async () => {
    const u = await fx.c.register();
    const results = await Promise.all(Array.from({ length: 6 }, () => upload(u, 3_000)));
    const ok = results.filter((r) => r.status === 201);
    for (const r of results) if (r.status !== 201) expectError(r, 413, 'Storage quota exceeded');
    assert.ok(ok.length >= 1 && ok.length <= 3, `${ok.length} uploads of 3,000 bytes fit in ${QUOTA}`);
    // What is left is exactly the quota minus what was accepted.
    const free = QUOTA - 3_000 * ok.length;
    await refused(u, free + 1);
    await uploaded(u, free);
  });

  it('extracted text is bounded by the bytes the file counts (4 characters a byte): a full quota buys no more text', async () => {
    const u = await fx.c.register();
    // A small ODT of one sentence repeated, inflating to about 93,000 characters (issue 17).
    const [head, tail] = [randomWord(12), randomWord(12)];
    const sentence = 'the committee reviewed the quarterly figures and the plans for next year';
    const odt = makeOdt([`${head} ${sentence}`, ...Array.from({ length: 1_250 }, () => sentence), `${sentence} ${tail}`]);
    assert.ok(odt.length < 2_500, `the ODT is ${odt.length} bytes`);
    const { fileId } = await fx.c.uploadOk(u.token, { title: 'Minutes', description: 'Minutes' }, odt, 'minutes.odt', 'application/vnd.oasis.opendocument.text');
    // Fill the quota to the byte: the text kept must not depend on free space the user no longer has.
    await uploaded(u, QUOTA - odt.length);
    await refused(u, 1);
    const page = await eventually(async () => {
      const res = await fx.c.view(fileId);
      assert.match(res.text, /Status: <strong>extracted<\/strong>/);
      return res.text;
    }, { timeoutMs: 60_000, intervalMs: 200 });
    const characters = Number(/\((\d+) characters/.exec(page)?.[1]);
    assert.ok(characters > 0 && characters <= 4 * odt.length, `${characters} characters kept of a ${odt.length}-byte file`);
    assert.match(page, /truncated/);
    // What was kept is searched; what was cut is not.
    await eventually(async () => {
      const found = expectSuccess(await fx.c.search(u.token, { search: head }), 200).results as { id: string }[];
      assert.ok(found.some((r) => r.id === fileId), `${head} not found yet`);
    }, { timeoutMs: 60_000, intervalMs: 200 });
    expectError(await fx.c.search(u.token, { search: tail }), 404, 'No results found');
  });

  it('a restart keeps every user\'s usage (counted from the events)', async () => {
    await fx.server.restart();
    await refused(ada, 1);
    const u = await fx.c.register();
    await uploaded(u, QUOTA);
    await fx.server.restart();
    await refused(u, 1);
  });
});

const BOUNDARY = 'quota-test-boundary';
const head = (fieldsOnly = false): string => [
  ...Object.entries({ title: 'q', description: 'd', tags: 'x', cc_license: 'CC BY', new_category_name: 'Quota' })
    .map(([k, v]) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`),
  ...(fieldsOnly ? [] : [`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="q.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`]),
].join('');

/** Sends `headers` and `body` on a raw socket and resolves with the status and JSON body of the answer. */
const rawRequest = (baseUrl: string, headers: string, body: Buffer): Promise<{ status: number; body: unknown }> => {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    let received = Buffer.alloc(0);
    const settle = (): boolean => {
      const text = received.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return false;
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end))?.[1] ?? NaN);
      const payload = received.subarray(end + 4);
      if (!Number.isFinite(length) || payload.length < length) return false;
      socket.destroy();
      resolve({ status, body: JSON.parse(payload.subarray(0, length).toString('utf8')) });
      return true;
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      settle();
    });
    socket.on('error', (error) => { if (!settle()) reject(error); });
    socket.on('close', () => { if (!settle()) reject(new Error(`connection closed before a full answer: ${received.toString('latin1')}`)); });
    socket.write(headers);
    socket.write(body);
  });
};

/** An upload that declares `declared` bytes and sends only its first few: the server must answer anyway. */
const partialUpload = (baseUrl: string, token: string, declared: number) =>
  rawRequest(baseUrl, [
    'POST /api/V1/docs/api-upload HTTP/1.1', `Host: ${new URL(baseUrl).host}`, `X-Authorization: Bearer ${token}`,
    `Content-Type: multipart/form-data; boundary=${BOUNDARY}`, `Content-Length: ${declared}`, '', '',
  ].join('\r\n'), Buffer.concat([Buffer.from(head()), randomBytes(1_000)]));

/** A whole upload of a `size`-byte file sent with chunked transfer encoding (no length declared). */
const chunkedUpload = (baseUrl: string, token: string, size: number) => {
  const body = Buffer.concat([Buffer.from(head()), randomBytes(size), Buffer.from(`\r\n--${BOUNDARY}--\r\n`)]);
  const chunked = Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]);
  return rawRequest(baseUrl, [
    'POST /api/V1/docs/api-upload HTTP/1.1', `Host: ${new URL(baseUrl).host}`, `X-Authorization: Bearer ${token}`,
    `Content-Type: multipart/form-data; boundary=${BOUNDARY}`, 'Transfer-Encoding: chunked', 'Connection: close', '', '',
  ].join('\r\n'), chunked);
};
