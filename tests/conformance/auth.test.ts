// Registration, login and JWT handling (spec §5, decisions §2, docs/api-decisions.md).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_UPLOAD, unique, type Res } from '../support/client.ts';
import { assertInt, assertKeys, expectError, expectSuccess } from '../support/expect.ts';
import { filesContaining } from '../support/datadir.ts';
import { enc, useServer } from '../support/fixture.ts';
import { decodePart, hmac, nowSeconds, signJwt, TEST_JWT_SECRET } from '../support/jwt.ts';
import { localOnly, secretOnly } from '../support/server.ts';
import { eventually } from '../support/wait.ts';

const TTL = 7200;
const fx = useServer({ JWT_TTL_SECONDS: String(TTL) });

const REGISTER = '/api/V1/users/api-register';
const LOGIN = '/api/V1/users/api-login';

function longString(n: number): string {
  return 'x'.repeat(n);
}

describe('register', () => {
  it('registers a user: 201, message, integer user_id, a JWT that works at once', async () => {
    const { c } = fx;
    const password = 'correct horse battery';
    const email = `${unique('reg')}@example.com`;
    const res = await c.json('POST', REGISTER, undefined, { name: 'Ada Lovelace', email, password });
    const body = expectSuccess(res, 201);
    assertKeys(body, ['status', 'message', 'user_id', 'token'], 'register body');
    assert.equal(body.message, 'User registered successfully');
    assertInt(body.user_id, 'user_id');
    assert.ok(body.user_id > 0);
    assert.equal(typeof body.token, 'string');
    assert.equal(body.token.split('.').length, 3, 'token must be a JWT');
    assert.ok(!res.text.includes(password), 'the password must never appear in a response');
    const stats = await c.stats(body.token);
    expectSuccess(stats, 200);
  });

  it('the JWT carries sub = user id and an exp set by JWT_TTL_SECONDS', { skip: localOnly }, async () => {
    const u = await fx.c.register();
    const header = decodePart(u.token, 0);
    const payload = decodePart(u.token, 1);
    assert.match(String(header['alg']), /^HS(256|384|512)$/, `unexpected alg ${String(header['alg'])}`);
    assert.equal(String(payload['sub']), String(u.userId));
    assert.equal(typeof payload['exp'], 'number');
    const exp = payload['exp'] as number;
    if (typeof payload['iat'] === 'number') assert.equal(exp - payload['iat'], TTL);
    const now = nowSeconds();
    assert.ok(exp > now + TTL - 600 && exp <= now + TTL + 5, `exp ${exp} should be about now + ${TTL} (now ${now})`);
  });

  const cases: Array<[string, Record<string, unknown>, number, string]> = [
    ['empty body', {}, 400, 'Name is required'],
    ['blank name', { name: '   ', email: 'a@example.com', password: 'password1' }, 400, 'Name is required'],
    ['name of the wrong type', { name: 42, email: 'a@example.com', password: 'password1' }, 400, 'Name is required'],
    ['name over 100 characters', { name: longString(101), email: 'a@example.com', password: 'password1' }, 400, 'Name is too long'],
    ['missing email', { name: 'Bob', password: 'password1' }, 400, 'Email is required'],
    ['blank email', { name: 'Bob', email: '  ', password: 'password1' }, 400, 'Email is required'],
    ['email without @', { name: 'Bob', email: 'not-an-email', password: 'password1' }, 400, 'Invalid email'],
    ['email without domain', { name: 'Bob', email: 'bob@', password: 'password1' }, 400, 'Invalid email'],
    ['missing password', { name: 'Bob', email: 'bob@example.com' }, 400, 'Password is required'],
    ['empty password', { name: 'Bob', email: 'bob@example.com', password: '' }, 400, 'Password is required'],
    ['7-character password', { name: 'Bob', email: 'bob@example.com', password: '1234567' }, 400, 'Password must be at least 8 characters'],
    ['password over 1024 characters', { name: 'Bob', email: 'bob@example.com', password: longString(1025) }, 400, 'Password is too long'],
  ];
  for (const [what, body, status, message] of cases) {
    it(`rejects ${what}: ${status} "${message}"`, async () => {
      expectError(await fx.c.json('POST', REGISTER, undefined, body), status, message);
    });
  }

  it('accepts the boundaries: a 100-character name and an 8-character password', async () => {
    const res = await fx.c.json('POST', REGISTER, undefined, { name: longString(100), email: `${unique('b')}@example.com`, password: '12345678' });
    expectSuccess(res, 201);
  });

  it('rejects an email already registered: 409 "Email already registered"', async () => {
    const u = await fx.c.register();
    const res = await fx.c.json('POST', REGISTER, undefined, { name: 'Other', email: u.email, password: 'another password' });
    expectError(res, 409, 'Email already registered');
  });

  it('answers malformed JSON with 400 "Malformed JSON"', async () => {
    const res = await fx.c.json('POST', REGISTER, undefined, undefined, { raw: '{"name": "x",', headers: { 'Content-Type': 'application/json' } });
    expectError(res, 400, 'Malformed JSON');
  });
});

describe('secrets', () => {
  it('no password or JWT secret appears in the server output or in the stored data', { skip: localOnly }, async () => {
    const { c, server } = fx;
    const password = `Pw-${unique('secret')}-Zz`;
    const u = await c.register({ password });
    expectSuccess(await c.login(u.email, password), 200);
    expectError(await c.login(u.email, `${password}-wrong`), 401, 'Invalid email or password');
    await c.uploadOk(u.token);
    // Give logs and projections a moment by round-tripping a read that depends on the writes.
    await eventually(async () => assert.equal(expectSuccess(await c.stats(u.token), 200).data.total_files, 1));
    assert.ok(!server.output().includes(password), 'password in the server output');
    assert.ok(!server.output().includes(`${password}-wrong`), 'a wrong password in the server output');
    assert.ok(!server.output().includes(TEST_JWT_SECRET), 'JWT secret in the server output');
    assert.deepEqual(await filesContaining(server.dataDir, password), [], 'password stored in DATA_DIR');
    assert.deepEqual(await filesContaining(server.dataDir, TEST_JWT_SECRET), [], 'JWT secret (given by env) stored in DATA_DIR');
  });
});

describe('login', () => {
  it('logs in: 200 "Login successful" with the same user_id and a working token', async () => {
    const { c } = fx;
    const u = await c.register();
    const res = await c.login(u.email, u.password);
    const body = expectSuccess(res, 200);
    assertKeys(body, ['status', 'message', 'user_id', 'token'], 'login body');
    assert.equal(body.message, 'Login successful');
    assertInt(body.user_id, 'user_id');
    assert.equal(body.user_id, u.userId);
    assert.ok(!res.text.includes(u.password));
    const files = expectSuccess(await c.files(body.token), 200);
    assert.equal(files.user.id, u.userId);
  });

  it('rejects a missing email: 400 "Email is required"', async () => {
    expectError(await fx.c.json('POST', LOGIN, undefined, { password: 'whatever1' }), 400, 'Email is required');
  });

  it('rejects a missing password: 400 "Password is required"', async () => {
    expectError(await fx.c.json('POST', LOGIN, undefined, { email: 'a@example.com' }), 400, 'Password is required');
  });

  it('rejects a wrong password and an unknown email alike: 401 "Invalid email or password"', async () => {
    const u = await fx.c.register();
    expectError(await fx.c.login(u.email, `${u.password}-wrong`), 401, 'Invalid email or password');
    expectError(await fx.c.login(`${unique('nobody')}@example.com`, 'some password'), 401, 'Invalid email or password');
  });
});

// Every protected route with a request that would otherwise be valid enough to reach auth.
type Call = (headers: Record<string, string>) => Promise<Res>;
function protectedCalls(): Array<[string, Call]> {
  const { c } = fx;
  const form = (): FormData => c.uploadForm({ ...DEFAULT_UPLOAD }, enc('x'), 'x.txt', 'text/plain');
  return [
    ['upload', (h) => c.json('POST', '/api/V1/docs/api-upload', undefined, undefined, { headers: h, raw: form() })],
    ['download', (h) => c.json('GET', '/api/V1/docs/api-download?file_id=1', undefined, undefined, { headers: h })],
    ['delete', (h) => c.json('DELETE', '/api/V1/docs/api-delete', undefined, { id: '1' }, { headers: h })],
    ['search', (h) => c.json('POST', '/api/V1/stats/api-search', undefined, { search: 'x' }, { headers: h })],
    ['stats', (h) => c.json('POST', '/api/V1/stats/api-stats', undefined, undefined, { headers: h })],
    ['file list', (h) => c.json('GET', '/api/V1/users/api-files', undefined, undefined, { headers: h })],
    ['comments', (h) => c.json('POST', '/api/V1/users/api-comments', undefined, undefined, { headers: h })],
    ['comment (post)', (h) => c.json('POST', '/api/V1/docs/api-comment', undefined, { file_id: '1', comment: 'x' }, { headers: h })],
    ['update', (h) => c.json('POST', '/api/V1/docs/api-update', undefined, { id: '1', title: 'x' }, { headers: h })],
    ['purchase', (h) => c.json('POST', '/api/V1/docs/api-purchase', undefined, { file_id: '1' }, { headers: h })],
    ['categories', (h) => c.json('GET', '/api/V1/docs/api-categories', undefined, undefined, { headers: h })],
  ];
}

describe('tokens on every protected endpoint', () => {
  it('no token → 401 "Missing JWT token"', async () => {
    for (const [name, call] of protectedCalls()) {
      const res = await call({});
      assert.doesNotThrow(() => expectError(res, 401, 'Missing JWT token'), `${name}: ${res.status} ${res.text}`);
    }
  });

  it('an empty X-Authorization header counts as missing → 401 "Missing JWT token"', async () => {
    for (const [name, call] of protectedCalls()) {
      const res = await call({ 'X-Authorization': '' });
      assert.doesNotThrow(() => expectError(res, 401, 'Missing JWT token'), `${name}: ${res.status} ${res.text}`);
    }
  });

  it('a garbage token → 401 "Invalid JWT token"', async () => {
    for (const [name, call] of protectedCalls()) {
      for (const value of ['Bearer not-a-jwt', 'Bearer a.b.c', 'Bearer ' + 'e'.repeat(40)]) {
        const res = await call({ 'X-Authorization': value });
        assert.doesNotThrow(() => expectError(res, 401, 'Invalid JWT token'), `${name} with "${value}": ${res.status} ${res.text}`);
      }
    }
  });

  it('a token signed with another key → 401 "Invalid JWT token"', async () => {
    const u = await fx.c.register();
    const forged = signJwt(decodePart(u.token, 1), 'not-the-server-secret', decodePart(u.token, 0));
    for (const [name, call] of protectedCalls()) {
      const res = await call({ 'X-Authorization': `Bearer ${forged}` });
      assert.doesNotThrow(() => expectError(res, 401, 'Invalid JWT token'), `${name}: ${res.status} ${res.text}`);
    }
  });

  it('a token with alg "none" → 401 "Invalid JWT token"', async () => {
    const u = await fx.c.register();
    const payload = decodePart(u.token, 1);
    const unsigned = signJwt(payload, '', { alg: 'none', typ: 'JWT' });
    const noneWithSig = `${unsigned}${u.token.split('.')[2] ?? ''}`;
    for (const [name, call] of protectedCalls()) {
      for (const t of [unsigned, noneWithSig]) {
        const res = await call({ 'X-Authorization': `Bearer ${t}` });
        assert.doesNotThrow(() => expectError(res, 401, 'Invalid JWT token'), `${name}: ${res.status} ${res.text}`);
      }
    }
  });

  it('a token whose payload was altered (other sub, old signature) → 401 "Invalid JWT token"', async () => {
    const a = await fx.c.register();
    const b = await fx.c.register();
    const [h, , s] = a.token.split('.');
    const payload = decodePart(a.token, 1);
    const sub = typeof payload['sub'] === 'number' ? b.userId : String(b.userId);
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...payload, sub })).toString('base64url')}.${s}`;
    for (const [name, call] of protectedCalls()) {
      const res = await call({ 'X-Authorization': `Bearer ${tampered}` });
      assert.doesNotThrow(() => expectError(res, 401, 'Invalid JWT token'), `${name}: ${res.status} ${res.text}`);
    }
  });

  it('the server signs with JWT_SECRET: re-signing a real token with it reproduces the token', { skip: secretOnly }, async () => {
    const u = await fx.c.register();
    const header = decodePart(u.token, 0);
    const again = signJwt(decodePart(u.token, 1), TEST_JWT_SECRET, header);
    // Re-serialising the JSON may change the bytes; compare the signature over the original input.
    const [h, p, sig] = u.token.split('.');
    assert.equal(hmac(String(header['alg']), TEST_JWT_SECRET, `${h}.${p}`), sig, 'token signature must be HMAC(JWT_SECRET, header.payload)');
    // A hand-made token with the same claims is accepted.
    expectSuccess(await fx.c.stats(again), 200);
  });

  it('an expired token → 401 "Invalid JWT token"', { skip: secretOnly }, async () => {
    const u = await fx.c.register();
    const header = decodePart(u.token, 0);
    const now = nowSeconds();
    const expired = signJwt({ ...decodePart(u.token, 1), iat: now - 7200, exp: now - 3600 }, TEST_JWT_SECRET, header);
    for (const [name, call] of protectedCalls()) {
      const res = await call({ 'X-Authorization': `Bearer ${expired}` });
      assert.doesNotThrow(() => expectError(res, 401, 'Invalid JWT token'), `${name}: ${res.status} ${res.text}`);
    }
  });

  it('a token signed with another HMAC algorithm than the pinned one → 401 "Invalid JWT token"', { skip: secretOnly }, async () => {
    const u = await fx.c.register();
    const header = decodePart(u.token, 0);
    const other = header['alg'] === 'HS512' ? 'HS256' : 'HS512';
    const t = signJwt(decodePart(u.token, 1), TEST_JWT_SECRET, { ...header, alg: other });
    expectError(await fx.c.stats(t), 401, 'Invalid JWT token');
  });

  it('accepts "Authorization: Bearer", a lower-case scheme, and a bare token', async () => {
    const u = await fx.c.register();
    const variants: Array<Record<string, string>> = [
      { Authorization: `Bearer ${u.token}` },
      { 'X-Authorization': `bearer ${u.token}` },
      { 'X-Authorization': u.token },
    ];
    for (const headers of variants) {
      const res = await fx.c.json('GET', '/api/V1/users/api-files', undefined, undefined, { headers });
      const body = expectSuccess(res, 200);
      assert.equal(body.user.id, u.userId, JSON.stringify(headers));
    }
  });

  it('a valid token of a user that does not exist: file list and comments → 404 "User not found", stats → zeros', { skip: secretOnly }, async () => {
    const u = await fx.c.register();
    const header = decodePart(u.token, 0);
    const payload = decodePart(u.token, 1);
    const ghostId = 987654321;
    const ghost = signJwt({ ...payload, sub: typeof payload['sub'] === 'number' ? ghostId : String(ghostId) }, TEST_JWT_SECRET, header);
    expectError(await fx.c.files(ghost), 404, 'User not found');
    expectError(await fx.c.comments(ghost), 404, 'User not found');
    const stats = expectSuccess(await fx.c.stats(ghost), 200);
    assert.deepEqual(stats.data, { total_comments: 0, total_files: 0, total_views: 0, total_downloads: 0, total_sales: 0 });
  });
});

describe('a client-sent user id is never trusted', () => {
  it('stats ignore a user_id body field and an X-User-Id header', async () => {
    const { c } = fx;
    const a = await c.register();
    const b = await c.register();
    await c.uploadOk(b.token, { title: 'b1' });
    await c.uploadOk(b.token, { title: 'b2' });
    await eventually(async () => assert.equal(expectSuccess(await c.stats(b.token), 200).data.total_files, 2));
    const res = await c.json('POST', '/api/V1/stats/api-stats', a.token, { user_id: b.userId }, { headers: { 'X-User-Id': String(b.userId) } });
    assert.equal(expectSuccess(res, 200).data.total_files, 0);
  });

  it('the file list without user_id ignores X-User-Id and lists the caller', async () => {
    const { c } = fx;
    const a = await c.register();
    const b = await c.register();
    const res = await c.json('GET', '/api/V1/users/api-files', a.token, undefined, { headers: { 'X-User-Id': String(b.userId) } });
    assert.equal(expectSuccess(res, 200).user.id, a.userId);
  });

  it('comments ignore a user_id body field', async () => {
    const { c } = fx;
    const a = await c.register();
    const b = await c.register();
    const { fileId } = await c.uploadOk(b.token, { title: 'commented' });
    expectSuccess(await c.comment(a.token, { file_id: fileId, comment: 'nice' }), 201);
    await eventually(async () => assert.equal(expectSuccess(await c.comments(b.token), 200).data.length, 1));
    const res = await c.json('POST', '/api/V1/users/api-comments', a.token, { user_id: b.userId }, { headers: { 'X-User-Id': String(b.userId) } });
    assert.deepEqual(expectSuccess(res, 200).data, []);
  });

  it('an upload with a user_id form field belongs to the token user', async () => {
    const { c } = fx;
    const a = await c.register();
    const b = await c.register();
    const res = await c.upload(a.token, { ...DEFAULT_UPLOAD, title: 'mine', user_id: String(b.userId) }, enc('x'), 'x.txt', 'text/plain', { headers: { 'X-User-Id': String(b.userId) } });
    const fileId = Number(expectSuccess(res, 201).file_id);
    await eventually(async () => {
      const files = expectSuccess(await c.files(a.token), 200).files as Array<{ file_id: number }>;
      assert.ok(files.some((f) => f.file_id === fileId), 'the file must be in the uploader\'s list');
    });
    const bFiles = expectSuccess(await c.files(b.token), 200).files as Array<{ file_id: number }>;
    assert.ok(!bFiles.some((f) => f.file_id === fileId));
  });

  it('a delete with X-User-Id of the owner is still refused to another user: 403', async () => {
    const { c } = fx;
    const a = await c.register();
    const b = await c.register();
    const { fileId } = await c.uploadOk(b.token);
    const res = await c.json('DELETE', '/api/V1/docs/api-delete', a.token, { id: fileId, user_id: b.userId }, { headers: { 'X-User-Id': String(b.userId) } });
    expectError(res, 403, 'You do not own this file');
  });
});
