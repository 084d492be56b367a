// Safe retries (issue 10; docs/api-decisions.md "Safe retries"): every write accepts an
// Idempotency-Key. The same key with the same request replays the first answer without doing the
// work again, also after the first answer was lost to a dropped connection and across a restart;
// the same key with another request is 422; a request still in flight with the key makes another 409.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import net from 'node:net';
import { after, describe, it } from 'node:test';
import { DEFAULT_UPLOAD, type Res } from '../support/client.ts';
import { expectError, expectSuccess } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';
import { localOnly } from '../support/server.ts';
import { eventually } from '../support/wait.ts';

const KEY = 'Idempotency-Key';
const keyed = (key: string) => ({ headers: { [KEY]: key } });

/** A multipart upload body with a fixed boundary, for raw sockets. */
const multipart = (fields: Record<string, string>, bytes: Buffer, boundary = `b${randomUUID()}`): { body: Buffer; type: string } => {
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="raw.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`));
  parts.push(bytes, Buffer.from(`\r\n--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), type: `multipart/form-data; boundary=${boundary}` };
};

describe('Idempotency-Key', () => {
  const fx = useServer();
  after(() => { if (process.env.SHOW) console.log('SERVER OUTPUT', fx.server.output().split('\n').filter((l) => !l.includes('"level":30')).join('\n').slice(-8000)); });

  const fileCount = async (token: string): Promise<number> => expectSuccess(await fx.c.files(token), 200).total as number;

  /**
   * Sends an upload on a raw socket and closes it without reading the answer: `cut` bytes into the
   * body, right after the whole body, or once the answer has begun to arrive (the work is done, the
   * answer lost on its way).
   */
  const sendAndDrop = async (token: string, key: string, fields: Record<string, string>, bytes: Buffer, when: number | 'sent' | 'answering'): Promise<void> => {
    const { body, type } = multipart(fields, bytes);
    const socket = net.connect(fx.server.port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    socket.on('error', () => {});
    const answering = new Promise<void>((resolve) => socket.once('data', () => resolve()));
    socket.write(`POST /api/V1/docs/api-upload HTTP/1.1\r\nHost: localhost\r\nX-Authorization: Bearer ${token}\r\n${KEY}: ${key}\r\n`
      + `Content-Type: ${type}\r\nContent-Length: ${body.length}\r\n\r\n`);
    await new Promise<void>((resolve) => socket.write(typeof when === 'number' ? body.subarray(0, when) : body, () => resolve()));
    if (when === 'answering') await answering;
    socket.destroy();
  };

  /** Retries like a client would: while the first request is still in flight the answer is 409. */
  const retryUntilSettled = async (send: () => Promise<Res>): Promise<Res> => eventually(async () => {
    const res = await send();
    if (res.status === 409) return false;
    return res;
  }, { timeoutMs: 30_000, intervalMs: 100 });

  it('the same upload sent twice with one key creates one file; the second answer is a replay', async () => {
    const u = await fx.c.register();
    const key = randomUUID();
    const bytes = randomBytes(20_000);
    const first = await fx.c.upload(u.token, DEFAULT_UPLOAD, bytes, 'twice.bin', 'application/octet-stream', keyed(key));
    const body = expectSuccess(first, 201);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    // A second multipart body with another boundary: the same request all the same.
    const second = await fx.c.upload(u.token, DEFAULT_UPLOAD, bytes, 'twice.bin', 'application/octet-stream', keyed(key));
    assert.deepEqual(expectSuccess(second, 201), body);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.equal(await fileCount(u.token), 1);
    await eventually(async () => assert.equal(expectSuccess(await fx.c.stats(u.token), 200).data.total_files, 1));
  });

  it('the same key with another request answers 422 and does nothing', async () => {
    const u = await fx.c.register();
    const key = randomUUID();
    expectSuccess(await fx.c.upload(u.token, DEFAULT_UPLOAD, Buffer.from('one'), 'a.txt', 'text/plain', keyed(key)), 201);
    expectError(await fx.c.upload(u.token, { ...DEFAULT_UPLOAD, title: 'Another title' }, Buffer.from('one'), 'a.txt', 'text/plain', keyed(key)),
      422, 'Idempotency-Key was already used for a different request');
    expectError(await fx.c.upload(u.token, DEFAULT_UPLOAD, Buffer.from('two'), 'a.txt', 'text/plain', keyed(key)),
      422, 'Idempotency-Key was already used for a different request');
    // Another route with the same key is another request too.
    expectError(await fx.c.json('POST', '/api/V1/docs/api-comment', u.token, { file_id: '1', comment: 'x' }, keyed(key)),
      422, 'Idempotency-Key was already used for a different request');
    assert.equal(await fileCount(u.token), 1);
  });

  it('a request still in flight with the key makes another one 409; once done, the key replays', async () => {
    const u = await fx.c.register();
    const key = randomUUID();
    const fields = { ...DEFAULT_UPLOAD } as Record<string, string>;
    const bytes = randomBytes(64 * 1024);
    // Two requests with the key, each with its body half sent: whichever takes the key first holds
    // it while its body is still coming, and the other is answered 409 at once.
    const open = async () => {
      const { body, type } = multipart(fields, bytes);
      const socket = net.connect(fx.server.port, '127.0.0.1');
      await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
      const state = { socket, body, answer: '' };
      socket.on('error', () => {});
      socket.on('data', (chunk: Buffer) => { state.answer += chunk.toString('latin1'); });
      socket.write(`POST /api/V1/docs/api-upload HTTP/1.1\r\nHost: localhost\r\nX-Authorization: Bearer ${u.token}\r\n${KEY}: ${key}\r\n`
        + `Content-Type: ${type}\r\nContent-Length: ${body.length}\r\n\r\n`);
      socket.write(body.subarray(0, 1000));
      return state;
    };
    const [a, b] = [await open(), await open()];
    const refused = await eventually(() => (a.answer.includes('}') ? a : b.answer.includes('}') ? b : false), { timeoutMs: 30_000 });
    const holder = refused === a ? b : a;
    assert.match(refused.answer, /^HTTP\/1\.1 409 /);
    assert.match(refused.answer, /"message":"A request with this Idempotency-Key is still in progress"/);
    assert.equal(holder.answer, '');
    holder.socket.write(holder.body.subarray(1000));
    await eventually(() => holder.answer.includes('}'), { timeoutMs: 30_000 });
    a.socket.destroy();
    b.socket.destroy();
    assert.match(holder.answer, /^HTTP\/1\.1 201 /);
    const fileId = /"file_id":"(\d+)"/.exec(holder.answer)?.[1];
    const replay = await fx.c.upload(u.token, fields, bytes, 'raw.bin', 'application/octet-stream', keyed(key));
    assert.equal(expectSuccess(replay, 201).file_id, fileId);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(await fileCount(u.token), 1);
  });

  it('an upload whose answer was lost to a dropped connection is not done twice by its retry', async () => {
    const u = await fx.c.register();
    const key = randomUUID();
    const fields = { ...DEFAULT_UPLOAD, title: 'Lost answer' } as Record<string, string>;
    const bytes = randomBytes(200_000);
    await sendAndDrop(u.token, key, fields, bytes, 'answering');
    const retry = await fx.c.upload(u.token, fields, bytes, 'raw.bin', 'application/octet-stream', keyed(key));
    expectSuccess(retry, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    const files = expectSuccess(await fx.c.files(u.token), 200);
    assert.equal(files.total, 1);
    assert.equal(String(files.files[0].file_id), retry.body.file_id);
  });

  it('a client gone right after its whole body: however far the server got, its retry makes one file', async () => {
    const u = await fx.c.register();
    const key = randomUUID();
    const fields = { ...DEFAULT_UPLOAD, title: 'Gone' } as Record<string, string>;
    const bytes = randomBytes(200_000);
    await sendAndDrop(u.token, key, fields, bytes, 'sent');
    // In flight (409), replayed, or (when the server saw the body cut short) done by the retry.
    const retry = await retryUntilSettled(() => fx.c.upload(u.token, fields, bytes, 'raw.bin', 'application/octet-stream', keyed(key)));
    expectSuccess(retry, 201);
    const again = await fx.c.upload(u.token, fields, bytes, 'raw.bin', 'application/octet-stream', keyed(key));
    assert.equal(expectSuccess(again, 201).file_id, retry.body.file_id);
    assert.equal(await fileCount(u.token), 1);
  });

  it('an upload cut off mid-body did nothing: its retry with the key does the upload', async () => {
    const u = await fx.c.register();
    const key = randomUUID();
    const fields = { ...DEFAULT_UPLOAD } as Record<string, string>;
    const bytes = randomBytes(300_000);
    await sendAndDrop(u.token, key, fields, bytes, 100_000);
    const retry = await retryUntilSettled(() => fx.c.upload(u.token, fields, bytes, 'raw.bin', 'application/octet-stream', keyed(key)));
    expectSuccess(retry, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), null);
    assert.equal(await fileCount(u.token), 1);
    const link = expectSuccess(await fx.c.download(u.token, retry.body.file_id), 200).download_url as string;
    assert.ok((await fx.c.bytes(link)).bytes.equals(bytes));
  });

  it('an error answer is not kept: the corrected request with the same key is done', async () => {
    const u = await fx.c.register();
    const key = randomUUID();
    expectError(await fx.c.upload(u.token, { ...DEFAULT_UPLOAD, title: '' }, Buffer.from('x'), 'x.txt', 'text/plain', keyed(key)), 400, 'Title is required');
    const res = await fx.c.upload(u.token, DEFAULT_UPLOAD, Buffer.from('x'), 'x.txt', 'text/plain', keyed(key));
    expectSuccess(res, 201);
    assert.equal(res.headers.get('idempotent-replayed'), null);
  });

  it('keys belong to their user: another user with the same key does their own write', async () => {
    const [a, b] = [await fx.c.register(), await fx.c.register()];
    const key = randomUUID();
    const one = expectSuccess(await fx.c.upload(a.token, DEFAULT_UPLOAD, Buffer.from('same'), 's.txt', 'text/plain', keyed(key)), 201);
    const two = await fx.c.upload(b.token, DEFAULT_UPLOAD, Buffer.from('same'), 's.txt', 'text/plain', keyed(key));
    assert.notEqual(expectSuccess(two, 201).file_id, one.file_id);
    assert.equal(two.headers.get('idempotent-replayed'), null);
  });

  it('register replays its answer with a working token and creates one account', async () => {
    const key = randomUUID();
    const input = { name: 'Idem Potent', email: `idem-${randomUUID()}@example.com`, password: 'correct horse battery' };
    const first = expectSuccess(await fx.c.json('POST', '/api/V1/users/api-register', undefined, input, keyed(key)), 201);
    const again = await fx.c.json('POST', '/api/V1/users/api-register', undefined, input, keyed(key));
    const replayed = expectSuccess(again, 201);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(replayed.user_id, first.user_id);
    assert.equal(replayed.message, 'User registered successfully');
    expectSuccess(await fx.c.stats(replayed.token), 200);
    // Without the key, the same registration is the conflict it always was.
    expectError(await fx.c.json('POST', '/api/V1/users/api-register', undefined, input), 409, 'Email already registered');
    expectError(await fx.c.json('POST', '/api/V1/users/api-register', undefined, { ...input, name: 'Other' }, keyed(key)),
      422, 'Idempotency-Key was already used for a different request');
  });

  it('comment, update, purchase and delete replay their answers without doing the work again', async () => {
    const [owner, buyer] = [await fx.c.register(), await fx.c.register()];
    const { fileId } = await fx.c.uploadOk(owner.token);
    const twice = async (path: string, token: string, body: unknown, method = 'POST'): Promise<[Res, Res]> => {
      const key = randomUUID();
      const first = await fx.c.json(method, path, token, body, keyed(key));
      // Key order does not make another request.
      const reordered = Object.fromEntries(Object.entries(body as Record<string, unknown>).reverse());
      const second = await fx.c.json(method, path, token, reordered, keyed(key));
      assert.equal(second.headers.get('idempotent-replayed'), 'true', `${path}: ${second.text}`);
      assert.deepEqual(second.body, first.body);
      return [first, second];
    };
    const [commented] = await twice('/api/V1/docs/api-comment', buyer.token, { file_id: fileId, comment: 'Only once, please' });
    expectSuccess(commented, 201);
    assert.equal(expectSuccess(await fx.c.comments(owner.token), 200).total, 1);

    expectSuccess((await twice('/api/V1/docs/api-update', owner.token, { id: fileId, for_sale: true, price: 3 }))[0], 200);
    const [bought] = await twice('/api/V1/docs/api-purchase', buyer.token, { file_id: fileId });
    expectSuccess(bought, 201);
    await eventually(async () => assert.equal(expectSuccess(await fx.c.stats(owner.token), 200).data.total_sales, 1));

    const [deleted, again] = await twice('/api/V1/docs/api-delete', owner.token, { id: fileId }, 'DELETE');
    expectSuccess(deleted, 200);
    expectSuccess(again, 200);
    // Without the key, the file is gone.
    expectError(await fx.c.del(owner.token, fileId), 404, 'File not found');
    await eventually(async () => assert.equal(expectSuccess(await fx.c.stats(owner.token), 200).data.total_sales, 1));
  });

  it('a malformed key is 400 and does nothing', async () => {
    const u = await fx.c.register();
    for (const bad of ['x'.repeat(256), '"unterminated', ' ', 'tab\there']) {
      expectError(await fx.c.upload(u.token, DEFAULT_UPLOAD, Buffer.from('x'), 'x.txt', 'text/plain', keyed(bad)), 400, 'Invalid Idempotency-Key');
    }
    assert.equal(await fileCount(u.token), 0);
    // The draft's Structured Field string form is the same key as its bare value.
    const key = randomUUID();
    expectSuccess(await fx.c.upload(u.token, DEFAULT_UPLOAD, Buffer.from('x'), 'x.txt', 'text/plain', keyed(`"${key}"`)), 201);
    const bare = await fx.c.upload(u.token, DEFAULT_UPLOAD, Buffer.from('x'), 'x.txt', 'text/plain', keyed(key));
    assert.equal(bare.headers.get('idempotent-replayed'), 'true');
  });

  it('a replay survives a restart', { skip: localOnly }, async () => {
    const u = await fx.c.register();
    const key = randomUUID();
    const first = expectSuccess(await fx.c.upload(u.token, DEFAULT_UPLOAD, Buffer.from('kept'), 'k.txt', 'text/plain', keyed(key)), 201);
    await fx.server.restart();
    const again = await fx.c.upload(u.token, DEFAULT_UPLOAD, Buffer.from('kept'), 'k.txt', 'text/plain', keyed(key));
    assert.equal(expectSuccess(again, 201).file_id, first.file_id);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(await fileCount(u.token), 1);
  });
});
