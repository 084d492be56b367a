// The OpenAPI document is true to the server (issue 10): the document's own examples are sent (a
// fresh email, real file ids) and every answer must be documented for its status, its body must
// validate against the documented schema (no undocumented field either), and it must carry the
// headers the document marks required (X-Request-Id, RateLimit-*, Allow, Retry-After, ...), each
// valid against its schema. Also: the reference page (/api/V1/docs) and its same-origin files,
// the index (`/`), 404 and 405, and the CORS preflight.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { DocSchemas, operationsOf, pointer, type Doc, type Obj } from '../../services/gateway/test/openapi-schema.ts';
import { randomWord, unique, type Json, type Res } from '../support/client.ts';
import { useServer } from '../support/fixture.ts';
import { eventually } from '../support/wait.ts';
import { startReceiver, verifyDelivery, webhookHeaders, type Receiver } from '../support/webhook-receiver.ts';

const ORIGIN = 'https://app.example.com';
let doc: Doc;
let schemas: DocSchemas;

/** Where the webhook examples are sent (a local endpoint: the server allows private networks and http). */
let receiver: Receiver;

const fx = useServer({ CORS_ORIGINS: ORIGIN, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_ALLOW_HTTP: 'true' }, async () => {
  const res = await fx.c.raw('GET', '/api/V1/openapi.json');
  assert.equal(res.status, 200, res.text);
  doc = res.body as Doc;
  schemas = new DocSchemas(doc, { strict: true });
  receiver = await startReceiver();
});
after(async () => {
  if (receiver !== undefined) await receiver.close();
});

/** The operations an answer was checked for (`get /docs/{fileId}`). */
const exercised = new Set<string>();

const mediaTypeOf = (res: Res): string => (res.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';

/**
 * The answer is documented for its status, its body validates against the schema of its media
 * type (closed objects: no undocumented field), and every header the document marks required is
 * there; every documented header that is there validates against its schema.
 */
function conforms(res: Res, path: string, method: string, where = `${method.toUpperCase()} ${path}`): void {
  exercised.add(`${method} ${path}`);
  const status = String(res.status);
  const documented = Object.keys(doc.paths[path]?.[method]?.responses ?? {});
  assert.ok(documented.includes(status), `${where}: HTTP ${status} is not documented (${documented.join(', ')}): ${res.text.slice(0, 300)}`);
  const at = schemas.responsePointer(path, method, status);
  checkAnswer(res, at, where);
}

function checkAnswer(res: Res, at: string, where: string): void {
  const response = schemas.at(at) as Obj;
  const content = (response.content as Record<string, Obj> | undefined) ?? {};
  if (Object.keys(content).length === 0) {
    assert.equal(res.text, '', `${where} ${res.status}: documented without a body`);
  } else {
    const type = mediaTypeOf(res);
    const key = type in content ? type : '*/*' in content ? '*/*' : undefined;
    assert.ok(key !== undefined, `${where} ${res.status}: media type ${type} is not documented (${Object.keys(content).join(', ')})`);
    const value = key === 'application/json' ? res.body as unknown : res.text;
    assert.deepEqual(schemas.errors(`${at}${pointer('content', key, 'schema')}`, value), [], `${where} ${res.status}: body ${res.text.slice(0, 400)}`);
  }
  for (const name of Object.keys((response.headers as Obj | undefined) ?? {})) {
    const headerAt = schemas.deref(`${at}${pointer('headers', name)}`);
    const header = schemas.at(headerAt) as { required?: boolean };
    const value = res.headers.get(name);
    if (header.required === true) assert.ok(value !== null, `${where} ${res.status}: header ${name} is documented as always sent`);
    if (value !== null) assert.deepEqual(schemas.headerErrors(`${headerAt}/schema`, value), [], `${where} ${res.status}: header ${name}: ${value}`);
  }
}

/** The value of a documented request example (the first when no name is given). */
function requestExample(path: string, method: string, name?: string, type = 'application/json'): Json {
  const media = ((doc.paths[path]?.[method]?.requestBody as Obj).content as Record<string, Obj>)[type] as Obj;
  const examples = media.examples as Record<string, { value: unknown }>;
  const chosen = name === undefined ? Object.values(examples)[0] : examples[name];
  assert.ok(chosen, `no request example ${name ?? ''} for ${method} ${path}`);
  return structuredClone(chosen.value);
}

/** A parameter's documented example. */
function parameterExample(path: string, method: string, name: string): unknown {
  const op = doc.paths[path]?.[method];
  for (const p of op?.parameters ?? []) {
    const parameter = schemas.resolve<{ name: string; example?: unknown }>(p);
    if (parameter.name === name) return parameter.example;
  }
  throw new Error(`no parameter ${name} on ${method} ${path}`);
}

const auth = (token: string): Record<string, string> => ({ 'X-Authorization': `Bearer ${token}` });

/** The multipart body of an upload example: `file` becomes a file part of that text. */
function uploadForm(fields: Record<string, string>, fileName: string, type: string): FormData {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) {
    if (k === 'file') form.append('file', new Blob([v], { type }), fileName);
    else form.append(k, v);
  }
  return form;
}

describe('the OpenAPI document, over HTTP', () => {
  let token = '';
  let email = '';
  let password = '';
  let fileId = '';
  let pdfId = '';
  /** A user who bought the PDF (the purchase examples). */
  let buyerToken = '';
  let categoryId = '';
  let downloadUrl = '';
  let title = '';

  it('is served as it is documented', async () => {
    const res = await fx.c.raw('GET', '/api/V1/openapi.json');
    conforms(res, '/api/V1/openapi.json', 'get');
    assert.match(String(doc.openapi), /^3\.1\.\d+$/);
    // "Try it out" calls the origin the reference was opened at, whatever PUBLIC_BASE_URL is.
    assert.deepEqual((doc.servers as Array<{ url: string }>).map((server) => server.url), ['/']);
  });

  it('the reference page answers HTML that loads only same-origin files, and each answers 200', async () => {
    const page = await fx.c.raw('GET', '/api/V1/docs');
    conforms(page, '/api/V1/docs', 'get');
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    const policy = page.headers.get('content-security-policy') ?? '';
    assert.match(policy, /default-src 'none'/);
    assert.match(policy, /script-src 'self'(;|$)/);
    assert.match(policy, /connect-src 'self'(;|$)/);
    const refs = [...page.text.matchAll(/(?:src|href|data-openapi-url)="([^"]+)"/g)].map((m) => m[1] as string);
    assert.ok(refs.some((r) => r.endsWith('.js')) && refs.some((r) => r.endsWith('.css')), page.text);
    for (const ref of refs) {
      const url = new URL(ref, `${fx.server.baseUrl}/api/V1/docs`);
      assert.equal(url.origin, new URL(fx.server.baseUrl).origin, `same origin: ${ref}`);
      const res = await fx.c.raw('GET', url.pathname);
      assert.equal(res.status, 200, `${ref}: ${res.status}`);
      if (url.pathname.includes('/assets/')) {
        conforms(res, '/api/V1/docs/assets/{version}/{file}', 'get', ref);
        assert.match(res.headers.get('cache-control') ?? '', /immutable/);
      }
    }
    const stale = await fx.c.raw('GET', '/api/V1/docs/assets/0.0.0/swagger-ui.css');
    conforms(stale, '/api/V1/docs/assets/{version}/{file}', 'get');
    assert.equal(stale.body.message, 'Not found');
  });

  it('`/` answers the documented JSON index, and HTML to a browser', async () => {
    const json = await fx.c.raw('GET', '/', { headers: { Accept: 'application/json' } });
    conforms(json, '/', 'get');
    assert.match(json.headers.get('content-type') ?? '', /^application\/json/);
    const example = ((doc.paths['/']?.get?.responses['200']?.content as Record<string, { examples: { default: { value: unknown } } }>)['application/json'])?.examples.default.value;
    assert.deepEqual(json.body, example);
    const html = await fx.c.raw('GET', '/', { headers: { Accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    conforms(html, '/', 'get');
    assert.match(html.headers.get('content-type') ?? '', /^text\/html/);
    assert.ok(html.text.includes('href="/api/V1/docs"'));
  });

  it('register and login: the examples, with a fresh email', async () => {
    const path = '/api/V1/users/api-register';
    const body = requestExample(path, 'post');
    body.email = `${unique('oa')}@example.com`;
    const res = await fx.c.json('POST', path, undefined, body);
    conforms(res, path, 'post');
    assert.equal(res.status, 201);
    token = res.body.token as string;
    ({ email, password } = body as { email: string; password: string });
    conforms(await fx.c.json('POST', path, undefined, body), path, 'post');
    conforms(await fx.c.json('POST', path, undefined, {}), path, 'post');

    const login = '/api/V1/users/api-login';
    const credentials = requestExample(login, 'post');
    const ok = await fx.c.json('POST', login, undefined, { ...credentials, email, password });
    conforms(ok, login, 'post');
    assert.equal(ok.status, 200);
    const wrong = await fx.c.json('POST', login, undefined, { email, password: `${password}x` });
    conforms(wrong, login, 'post');
    assert.equal(wrong.status, 401);
  });

  it('upload: both examples, and a missing field', async () => {
    const path = '/api/V1/docs/api-upload';
    const type = 'multipart/form-data';
    title = `${randomWord(12)} Analytical Engine notes`;
    const first = { ...requestExample(path, 'post', 'newCategory', type), title, new_category_name: `Essays ${randomWord(8)}` } as Record<string, string>;
    const res = await fx.c.json('POST', path, token, undefined, { raw: uploadForm(first, 'engine-notes.txt', 'text/plain') });
    conforms(res, path, 'post');
    assert.equal(res.status, 201, res.text);
    fileId = res.body.file_id as string;
    categoryId = res.body.category_id as string;
    const second = { ...requestExample(path, 'post', 'existingCategory', type), category_id: categoryId } as Record<string, string>;
    const pdf = await fx.c.json('POST', path, token, undefined, { raw: uploadForm(second, 'sketch.pdf', 'application/pdf') });
    conforms(pdf, path, 'post');
    assert.equal(pdf.status, 201, pdf.text);
    pdfId = pdf.body.file_id as string;
    const { title: _missing, ...noTitle } = first;
    const bad = await fx.c.json('POST', path, token, undefined, { raw: uploadForm(noTitle, 'a.txt', 'text/plain') });
    conforms(bad, path, 'post');
    assert.equal(bad.body.message, 'Title is required');
    const unknownCategory = await fx.c.json('POST', path, token, undefined, { raw: uploadForm({ ...second, category_id: '999999999' }, 'a.pdf', 'application/pdf') });
    conforms(unknownCategory, path, 'post');
    assert.equal(unknownCategory.status, 404);
  });

  it('download, the signed content (whole, a range, conditional, refused) and the view page', async () => {
    const path = '/api/V1/docs/api-download';
    assert.equal(typeof parameterExample(path, 'get', 'file_id'), 'string');
    const res = await fx.c.raw('GET', `${path}?file_id=${fileId}`, { headers: auth(token) });
    conforms(res, path, 'get');
    assert.equal(res.status, 200);
    downloadUrl = res.body.download_url as string;
    for (const query of ['', '?file_id=999999999']) conforms(await fx.c.raw('GET', `${path}${query}`, { headers: auth(token) }), path, 'get');
    conforms(await fx.c.raw('GET', `${path}?file_id=${fileId}`), path, 'get');
    conforms(await fx.c.raw('GET', `${path}?file_id=${fileId}`, { headers: auth('not-a-token') }), path, 'get');

    const content = '/files/{fileId}/content';
    const forged = await fx.c.raw('GET', downloadUrl.replace(/signature=([0-9a-f])/, (_m, c: string) => `signature=${c === '0' ? '1' : '0'}`));
    conforms(forged, content, 'get');
    assert.equal(forged.status, 403);
    const whole = await fx.c.raw('GET', downloadUrl);
    conforms(whole, content, 'get');
    // With BLOB_PUBLIC_URL the blob store serves the bytes itself (a documented 302); else:
    if (whole.status !== 302) {
      assert.equal(whole.status, 200);
      const part = await fx.c.raw('GET', downloadUrl, { headers: { Range: 'bytes=0-4' } });
      conforms(part, content, 'get');
      assert.equal(part.status, 206);
      conforms(await fx.c.raw('GET', downloadUrl, { headers: { Range: 'bytes=100000-' } }), content, 'get');
      const etag = whole.headers.get('etag');
      assert.ok(etag, 'the content carries an ETag');
      const cached = await fx.c.raw('GET', downloadUrl, { headers: { 'If-None-Match': etag } });
      conforms(cached, content, 'get');
      assert.equal(cached.status, 304);
      conforms(await fx.c.raw('GET', `${downloadUrl}&disposition=inline`), content, 'get');
    }

    const view = '/docs/{fileId}';
    const page = await fx.c.raw('GET', `/docs/${fileId}`);
    conforms(page, view, 'get');
    assert.equal(page.status, 200);
    const pageTag = page.headers.get('etag');
    if (pageTag !== null) conforms(await fx.c.raw('GET', `/docs/${fileId}`, { headers: { 'If-None-Match': pageTag } }), view, 'get');
    conforms(await fx.c.raw('GET', '/docs/999999999'), view, 'get');
    conforms(await fx.c.raw('GET', '/docs/%zz'), view, 'get');
  });

  it('comment, update, purchase: the examples on real files', async () => {
    const comment = '/api/V1/docs/api-comment';
    const posted = await fx.c.json('POST', comment, token, { ...requestExample(comment, 'post'), file_id: fileId });
    conforms(posted, comment, 'post');
    assert.equal(posted.status, 201);
    conforms(await fx.c.json('POST', comment, token, { file_id: fileId }), comment, 'post');

    const purchase = '/api/V1/docs/api-purchase';
    buyerToken = (await fx.c.register()).token;
    const notForSale = await fx.c.json('POST', purchase, buyerToken, { ...requestExample(purchase, 'post'), file_id: pdfId });
    conforms(notForSale, purchase, 'post');
    assert.equal(notForSale.status, 409);

    const update = '/api/V1/docs/api-update';
    for (const name of ['sell', 'retitle']) {
      const res = await fx.c.json('POST', update, token, { ...requestExample(update, 'post', name), id: pdfId });
      conforms(res, update, 'post', `update ${name}`);
      assert.equal(res.status, 200, res.text);
    }
    conforms(await fx.c.json('POST', update, token, { id: pdfId }), update, 'post');

    // The owner cannot buy their own file; another user buys it once, then is answered the first sale.
    const own = await fx.c.json('POST', purchase, token, { ...requestExample(purchase, 'post'), file_id: pdfId });
    conforms(own, purchase, 'post');
    assert.equal(own.status, 403);
    const bought = await fx.c.json('POST', purchase, buyerToken, { ...requestExample(purchase, 'post'), file_id: pdfId });
    conforms(bought, purchase, 'post');
    assert.equal(bought.status, 201);
    const again = await fx.c.json('POST', purchase, buyerToken, { ...requestExample(purchase, 'post'), file_id: pdfId });
    conforms(again, purchase, 'post');
    assert.equal(again.status, 200);
    // The buyer's link opens the bytes of a file for sale (a content answer as documented).
    conforms(await fx.c.raw('GET', bought.body.download_url as string), '/files/{fileId}/content', 'get');
    // For sale: not downloadable.
    conforms(await fx.c.raw('GET', `/api/V1/docs/api-download?file_id=${pdfId}`, { headers: auth(token) }), '/api/V1/docs/api-download', 'get');
  });

  it('reads: categories, search (both examples), stats, file list, received comments', async () => {
    const categories = '/api/V1/docs/api-categories';
    const page = parameterExample(categories, 'get', 'page');
    const perPage = parameterExample(categories, 'get', 'per_page');
    conforms(await fx.c.raw('GET', `${categories}?page=${String(page)}&per_page=${String(perPage)}`, { headers: auth(token) }), categories, 'get');
    conforms(await fx.c.raw('GET', `${categories}?page=0`, { headers: auth(token) }), categories, 'get');

    const search = '/api/V1/stats/api-search';
    const word = title.split(' ')[0] as string;
    const simple = await fx.c.json('POST', search, token, { ...requestExample(search, 'post', 'simple'), search: word });
    conforms(simple, search, 'post');
    assert.equal(simple.status, 200, simple.text);
    const filtered = requestExample(search, 'post', 'filtered');
    const full = await fx.c.json('POST', search, token, { ...filtered, search: word, filters: { ...filtered.filters, category_id: categoryId } });
    conforms(full, search, 'post');
    assert.equal(full.status, 200, full.text);
    assert.ok(full.body.facets, 'facets asked for');
    conforms(await fx.c.json('POST', search, token, { search: randomWord(16) }), search, 'post');
    conforms(await fx.c.json('POST', search, token, {}), search, 'post');
    conforms(await fx.c.json('POST', search, token, undefined, { raw: '{"search":', headers: { 'Content-Type': 'application/json' } }), search, 'post');

    const stats = '/api/V1/stats/api-stats';
    conforms(await fx.c.json('POST', stats, token), stats, 'post');

    // The statistics over time (issue 21): the examples, the owner's own file, and each 400 once.
    const daily = '/api/V1/stats/api-daily';
    const range = `from=${String(parameterExample(daily, 'get', 'from'))}&to=${String(parameterExample(daily, 'get', 'to'))}`;
    const days = await fx.c.raw('GET', `${daily}?${range}`, { headers: auth(token) });
    conforms(days, daily, 'get');
    assert.equal(days.status, 200, days.text);
    conforms(await fx.c.raw('GET', `${daily}?${range}&file_id=${fileId}`, { headers: auth(token) }), daily, 'get');
    conforms(await fx.c.raw('GET', `${daily}?${range}&file_id=999999999`, { headers: auth(token) }), daily, 'get');
    conforms(await fx.c.raw('GET', `${daily}?from=2025-02-30&to=2025-03-01`, { headers: auth(token) }), daily, 'get');
    conforms(await fx.c.raw('GET', daily), daily, 'get');
    const top = '/api/V1/stats/api-top';
    const ranked = await fx.c.raw('GET', `${top}?metric=${String(parameterExample(top, 'get', 'metric'))}&days=${String(parameterExample(top, 'get', 'days'))}&limit=${String(parameterExample(top, 'get', 'limit'))}`, { headers: auth(token) });
    conforms(ranked, top, 'get');
    assert.equal(ranked.status, 200, ranked.text);
    conforms(await fx.c.raw('GET', `${top}?metric=likes`, { headers: auth(token) }), top, 'get');
    const trending = '/api/V1/stats/api-trending';
    const hot = await fx.c.raw('GET', `${trending}?hours=${String(parameterExample(trending, 'get', 'hours'))}&category_id=${categoryId}&limit=${String(parameterExample(trending, 'get', 'limit'))}`, { headers: auth(token) });
    conforms(hot, trending, 'get');
    assert.equal(hot.status, 200, hot.text);
    conforms(await fx.c.raw('GET', `${trending}?hours=0`, { headers: auth(token) }), trending, 'get');

    const files = '/api/V1/users/api-files';
    const mine = await fx.c.raw('GET', files, { headers: auth(token) });
    conforms(mine, files, 'get');
    const userId = String(mine.body.user.id);
    conforms(await fx.c.raw('GET', `${files}?user_id=${userId}&page=1&per_page=20`, { headers: auth(token) }), files, 'get');
    conforms(await fx.c.raw('GET', `${files}?user_id=999999999`, { headers: auth(token) }), files, 'get');

    const purchases = '/api/V1/users/api-purchases';
    const bought = await fx.c.raw('GET', `${purchases}?page=${String(page)}&per_page=${String(parameterExample(purchases, 'get', 'per_page'))}`, { headers: auth(buyerToken) });
    conforms(bought, purchases, 'get');
    assert.equal((bought.body.data as unknown[]).length, 1);
    conforms(await fx.c.raw('GET', `${purchases}?per_page=0`, { headers: auth(buyerToken) }), purchases, 'get');

    const comments = '/api/V1/users/api-comments';
    const received = await fx.c.json('POST', comments, token, requestExample(comments, 'post'));
    conforms(received, comments, 'post');
    assert.ok((received.body.data as unknown[]).length >= 1);
    conforms(await fx.c.json('POST', comments, token), comments, 'post');
  });

  it('writes with an Idempotency-Key: replayed, reused, invalid', async () => {
    const path = '/api/V1/docs/api-comment';
    const key = { 'Idempotency-Key': unique('key') };
    const body = { ...requestExample(path, 'post'), file_id: fileId };
    const first = await fx.c.json('POST', path, token, body, { headers: key });
    conforms(first, path, 'post');
    const again = await fx.c.json('POST', path, token, body, { headers: key });
    conforms(again, path, 'post');
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body, first.body);
    const reused = await fx.c.json('POST', path, token, { ...body, comment: 'Another comment' }, { headers: key });
    conforms(reused, path, 'post');
    assert.equal(reused.status, 422);
    const invalid = await fx.c.json('POST', path, token, body, { headers: { 'Idempotency-Key': 'k'.repeat(300) } });
    conforms(invalid, path, 'post');
    assert.equal(invalid.body.message, 'Invalid Idempotency-Key');
  });

  it('delete: the example, then again', async () => {
    const path = '/api/V1/docs/api-delete';
    const res = await fx.c.json('DELETE', path, token, { ...requestExample(path, 'delete'), id: fileId });
    conforms(res, path, 'delete');
    assert.equal(res.status, 200);
    const gone = await fx.c.json('DELETE', path, token, { id: fileId });
    conforms(gone, path, 'delete');
    assert.equal(gone.status, 404);
    conforms(await fx.c.json('DELETE', path, undefined, { id: fileId }), path, 'delete');
  });

  it('resumable uploads: the control routes refuse a missing or bad token as documented', async () => {
    const id = '3b241101-e2bb-4255-8caf-4136c566a962';
    for (const [method, path, concrete] of [
      ['post', '/api/V1/docs/api-uploads', '/api/V1/docs/api-uploads'],
      ['get', '/api/V1/docs/api-uploads/{uploadId}', `/api/V1/docs/api-uploads/${id}`],
      ['post', '/api/V1/docs/api-uploads/{uploadId}/complete', `/api/V1/docs/api-uploads/${id}/complete`],
      ['delete', '/api/V1/docs/api-uploads/{uploadId}', `/api/V1/docs/api-uploads/${id}`],
    ] as const) {
      for (const headers of [{}, auth('not-a-token')]) {
        const res = await fx.c.raw(method.toUpperCase(), concrete, { headers });
        conforms(res, path, method);
        assert.equal(res.status, 401, `${method} ${concrete}`);
      }
    }
  });

  it('resumable uploads: the examples, a part PUT, the state, completion (twice), abort and the refusals', async () => {
    const uploads = '/api/V1/docs/api-uploads';
    const one = '/api/V1/docs/api-uploads/{uploadId}';
    const part = '/api/V1/docs/api-uploads/{uploadId}/parts/{partNumber}';
    const complete = '/api/V1/docs/api-uploads/{uploadId}/complete';
    const bytes = Buffer.from('%PDF-1.7 resumable conformance\n');
    const example = { ...requestExample(uploads, 'post', 'newCategory'), size: bytes.length, title, new_category_name: `Parts ${randomWord(8)}` };
    const started = await fx.c.json('POST', uploads, token, example);
    conforms(started, uploads, 'post');
    assert.equal(started.status, 201, started.text);
    const id = started.body.upload_id as string;
    const url = (started.body.parts as Array<{ url: string }>)[0]?.url as string;
    conforms(await fx.c.json('POST', uploads, token, { ...example, size: 0 }), uploads, 'post');
    conforms(await fx.c.raw('GET', `${uploads}/${id}`, { headers: auth(token) }), one, 'get');
    conforms(await fx.c.raw('GET', `${uploads}/${id}`, { headers: auth(buyerToken) }), one, 'get');
    const forged = await fx.c.raw('PUT', url.replace(/signature=([0-9a-f])/, (_m, c: string) => `signature=${c === '0' ? '1' : '0'}`), { body: bytes });
    if (new URL(url).origin === new URL(fx.server.baseUrl).origin) {
      conforms(forged, part, 'put');
      assert.equal(forged.status, 403);
      conforms(await fx.c.raw('PUT', url, { body: bytes.subarray(1) }), part, 'put');
      const sent = await fx.c.raw('PUT', url, { body: bytes });
      conforms(sent, part, 'put');
      assert.equal(sent.status, 200, sent.text);
    } else {
      exercised.add(`put ${part}`); // presigned MinIO URLs: not docshare's answer
      assert.equal((await fetch(url, { method: 'PUT', body: bytes })).status, 200);
    }
    conforms(await fx.c.json('POST', `${uploads}/${id}/complete`, token, { parts: 'all' }), complete, 'post');
    const done = await fx.c.json('POST', `${uploads}/${id}/complete`, token, {});
    conforms(done, complete, 'post');
    assert.equal(done.status, 201, done.text);
    conforms(await fx.c.json('POST', `${uploads}/${id}/complete`, token, {}), complete, 'post');
    conforms(await fx.c.raw('GET', `${uploads}/${id}`, { headers: auth(token) }), one, 'get');
    conforms(await fx.c.raw('DELETE', `${uploads}/${id}`, { headers: auth(token) }), one, 'delete');
    const other = await fx.c.json('POST', uploads, token, { ...example, size: 5 });
    const aborted = await fx.c.raw('DELETE', `${uploads}/${String(other.body.upload_id)}`, { headers: auth(token) });
    conforms(aborted, one, 'delete');
    assert.equal(aborted.status, 200);
    conforms(await fx.c.json('POST', `${uploads}/${String(other.body.upload_id)}/complete`, token, {}), complete, 'post');
  });

  it('webhooks: the examples against a local endpoint, each refusal once', async () => {
    const hooks = '/api/V1/users/api-webhooks';
    const one = `${hooks}/{webhookId}`;
    const at = (id: unknown, suffix = ''): string => `${hooks}/${String(id)}${suffix}`;
    const url = receiver.url(`/openapi/${randomWord(10)}`);
    // The example, with the local endpoint's URL typed over the example's (whose host may not resolve here).
    const created = await fx.c.json('POST', hooks, token, { ...requestExample(hooks, 'post'), url });
    conforms(created, hooks, 'post');
    assert.equal(created.status, 201, created.text);
    const id = created.body.webhook.id as number;
    assert.match(String(created.body.secret), /^whsec_/);
    for (const body of [{}, { url, events: ['file.exploded'] }, { url: 'ftp://example.com/x', events: ['file.uploaded'] }]) conforms(await fx.c.json('POST', hooks, token, body), hooks, 'post');
    const keyed = { headers: { 'Idempotency-Key': unique('hook') } };
    const first = await fx.c.json('POST', hooks, token, { ...requestExample(hooks, 'post'), url }, keyed);
    conforms(first, hooks, 'post');
    const again = await fx.c.json('POST', hooks, token, { ...requestExample(hooks, 'post'), url }, keyed);
    conforms(again, hooks, 'post');
    assert.equal(again.headers.get('idempotent-replayed'), 'true');

    conforms(await fx.c.raw('GET', hooks, { headers: auth(token) }), hooks, 'get');
    conforms(await fx.c.raw('GET', hooks), hooks, 'get');
    conforms(await fx.c.raw('GET', at(id), { headers: auth(token) }), one, 'get');
    conforms(await fx.c.raw('GET', at(id), { headers: auth(buyerToken) }), one, 'get');
    for (const name of ['events', 'enable']) {
      const res = await fx.c.json('PATCH', at(id), token, requestExample(one, 'patch', name));
      conforms(res, one, 'patch', `update ${name}`);
      assert.equal(res.status, 200, res.text);
    }
    conforms(await fx.c.json('PATCH', at(id), token, {}), one, 'patch');
    conforms(await fx.c.json('PATCH', at('abc'), token, { enabled: true }), one, 'patch');

    const test = await fx.c.json('POST', at(id, '/test'), token);
    conforms(test, `${one}/test`, 'post');
    assert.equal(test.status, 202, test.text);
    conforms(await fx.c.json('POST', at(999_999_999, '/test'), token), `${one}/test`, 'post');

    const deliveries = `${one}/deliveries`;
    conforms(await fx.c.raw('GET', at(id, `/deliveries?limit=${String(parameterExample(deliveries, 'get', 'limit'))}`), { headers: auth(token) }), deliveries, 'get');
    conforms(await fx.c.raw('GET', at(id, `/deliveries?status=${String(parameterExample(deliveries, 'get', 'status'))}`), { headers: auth(token) }), deliveries, 'get');
    conforms(await fx.c.raw('GET', at(id, '/deliveries?status=pending'), { headers: auth(token) }), deliveries, 'get');
    conforms(await fx.c.raw('GET', at(id, '/deliveries?cursor=not-a-cursor'), { headers: auth(token) }), deliveries, 'get');
    const dead = `${one}/dead-letters`;
    conforms(await fx.c.raw('GET', at(id, '/dead-letters'), { headers: auth(token) }), dead, 'get');
    conforms(await fx.c.raw('GET', at(id, '/dead-letters?cursor=not-a-cursor'), { headers: auth(token) }), dead, 'get');
    conforms(await fx.c.raw('GET', at(999_999_999, '/dead-letters'), { headers: auth(token) }), dead, 'get');

    const replay = `${one}/replay`;
    for (const name of ['range', 'messages']) {
      const res = await fx.c.json('POST', at(id, '/replay'), token, requestExample(replay, 'post', name));
      conforms(res, replay, 'post', `replay ${name}`);
      assert.equal(res.status, 202, res.text);
    }
    conforms(await fx.c.json('POST', at(id, '/replay'), token, {}), replay, 'post');
    const rotated = await fx.c.json('POST', at(id, '/rotate-secret'), token);
    conforms(rotated, `${one}/rotate-secret`, 'post');
    assert.equal(rotated.status, 200, rotated.text);
    conforms(await fx.c.json('POST', at(id, '/rotate-secret'), buyerToken), `${one}/rotate-secret`, 'post');
    // A disabled endpoint: enable it before a replay.
    conforms(await fx.c.json('PATCH', at(id), token, { enabled: false }), one, 'patch');
    const refused = await fx.c.json('POST', at(id, '/replay'), token, requestExample(replay, 'post', 'messages'));
    conforms(refused, replay, 'post');
    assert.equal(refused.status, 409, refused.text);

    const removed = await fx.c.raw('DELETE', at(id), { headers: auth(token) });
    conforms(removed, one, 'delete');
    assert.equal(removed.status, 200, removed.text);
    conforms(await fx.c.raw('DELETE', at(id), { headers: auth(token) }), one, 'delete');
  });

  it('webhooks: a delivery as the catalogue documents it (headers, body, signature), and its attempt listed', async () => {
    const hooks = '/api/V1/users/api-webhooks';
    const one = `${hooks}/{webhookId}`;
    const url = receiver.url(`/openapi/${randomWord(10)}`);
    const created = await fx.c.json('POST', hooks, token, { ...requestExample(hooks, 'post'), url });
    assert.equal(created.status, 201, created.text);
    const id = created.body.webhook.id as number;
    const test = await fx.c.json('POST', `${hooks}/${id}/test`, token);
    assert.equal(test.status, 202, test.text);
    const sent = await eventually(() => {
      const found = receiver.deliveries(new URL(url).pathname).find((d) => d.headers['webhook-id'] === test.body.message_id);
      assert.ok(found, 'the test message has not arrived yet');
      return found;
    }, { timeoutMs: 60_000, intervalMs: 100 });
    const catalogued = pointer('webhooks', 'webhook.test', 'post');
    assert.deepEqual(schemas.errors(`${catalogued}${pointer('requestBody', 'content', 'application/json', 'schema')}`, JSON.parse(sent.body)), [], sent.body);
    ((doc.webhooks as Record<string, { post: { parameters: Obj[] } }>)['webhook.test']?.post.parameters ?? []).forEach((_p, i) => {
      const parameterAt = schemas.deref(`${catalogued}${pointer('parameters', i)}`);
      const name = (schemas.at(parameterAt) as { name: string }).name;
      assert.deepEqual(schemas.headerErrors(`${parameterAt}/schema`, webhookHeaders(sent)[name] ?? ''), [], `${name}: ${webhookHeaders(sent)[name] ?? ''}`);
    });
    assert.equal(verifyDelivery(created.body.secret as string, sent).type, 'webhook.test');
    const listed = await eventually(async () => {
      const res = await fx.c.raw('GET', `${hooks}/${id}/deliveries`, { headers: auth(token) });
      assert.ok((res.body.deliveries as unknown[] | undefined)?.length, `no attempt listed yet: ${res.text}`);
      return res;
    }, { timeoutMs: 60_000, intervalMs: 100 });
    conforms(listed, `${one}/deliveries`, 'get');
  });

  it('leaving: an export (the state pending or ready, the ZIP through its link), an erasure (the example\'s password) and its status link, each refusal once', async () => {
    const users = '/api/V1/users';
    const exp = `${users}/api-export`;
    const content = `${exp}/{exportId}/content`;
    const erase = `${users}/api-erase`;
    const status = `${erase}/status/{erasureId}`;
    // A user of its own: the erasure ends it.
    const leaving = await fx.c.register({ password: (requestExample(erase, 'post') as { password: string }).password });
    const started = await fx.c.json('POST', exp, leaving.token);
    conforms(started, exp, 'post');
    assert.equal(started.status, 202, started.text);
    const exportId = started.body.export_id as string;
    const ready = await eventually(async () => {
      const res = await fx.c.raw('GET', `${exp}?export_id=${exportId}`, { headers: auth(leaving.token) });
      conforms(res, exp, 'get');
      assert.equal((res.body.export as { state: string }).state, 'ready', res.text);
      return res.body.export as { download_url: string; bytes: number };
    });
    conforms(await fx.c.raw('GET', exp, { headers: auth(leaving.token) }), exp, 'get');
    conforms(await fx.c.raw('GET', `${exp}?export_id=${exportId}`, { headers: auth(token) }), exp, 'get');
    const zip = await fx.c.raw('GET', ready.download_url);
    conforms(zip, content, 'get');
    assert.equal(zip.status, 200);
    const forged = new URL(ready.download_url);
    forged.searchParams.set('signature', '0'.repeat(64));
    conforms(await fx.c.raw('GET', forged.toString()), content, 'get');

    conforms(await fx.c.json('POST', erase, leaving.token, {}), erase, 'post');
    conforms(await fx.c.json('POST', erase, leaving.token, { password: `${leaving.password}x` }), erase, 'post');
    const erased = await fx.c.json('POST', erase, leaving.token, requestExample(erase, 'post'));
    conforms(erased, erase, 'post');
    assert.equal(erased.status, 202, erased.text);
    conforms(await fx.c.json('POST', erase, leaving.token, requestExample(erase, 'post')), erase, 'post');
    const link = erased.body.status_url as string;
    const state = await fx.c.raw('GET', link);
    conforms(state, status, 'get');
    assert.equal(state.status, 200, state.text);
    const wrong = new URL(link);
    wrong.searchParams.set('signature', '0'.repeat(64));
    conforms(await fx.c.raw('GET', wrong.toString()), status, 'get');
  });

  it('unknown paths answer the documented 404, other methods the documented 405 with the documented methods in Allow', async () => {
    for (const path of ['/nope', '/api/V1/nope', '/api/v1/users/api-login']) {
      const res = await fx.c.raw('GET', path);
      assert.equal(res.status, 404, path);
      checkAnswer(res, '/components/responses/NotFound', `GET ${path}`);
    }
    for (const { path, methods } of Object.entries(doc.paths).map(([p, item]) => ({ path: p, methods: Object.keys(item) }))) {
      const concrete = path.replace('{fileId}', '1').replace('{version}', '0').replace('{file}', 'x.css').replace('{webhookId}', '1');
      const documented = methods.filter((m) => m !== 'options').map((m) => m.toUpperCase());
      const wrong = ['PUT', 'PATCH', 'POST', 'DELETE'].find((m) => !documented.includes(m)) as string;
      const res = await fx.c.raw(wrong, concrete);
      const operation = methods.find((m) => m !== 'options') as string;
      conforms(res, path, operation, `${wrong} ${path}`);
      assert.equal(res.status, 405, `${wrong} ${path}`);
      const allow = (res.headers.get('allow') ?? '').split(',').map((m) => m.trim());
      for (const m of documented) assert.ok(allow.includes(m), `${wrong} ${path}: Allow ${allow.join(', ')} lacks ${m}`);
    }
  });

  it('a CORS preflight answers the documented 204 on every API path', async () => {
    for (const { path, method, op } of operationsOf(doc)) {
      if (method !== 'options') continue;
      const concrete = path.replace('{fileId}', '1');
      const res = await fx.c.raw('OPTIONS', concrete, {
        headers: { Origin: ORIGIN, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'x-authorization, content-type, idempotency-key' },
      });
      conforms(res, path, 'options', `${op.operationId}`);
      assert.equal(res.status, 204, path);
      assert.equal(res.headers.get('access-control-allow-origin'), ORIGIN, path);
    }
  });

  it('every operation of the document was checked against the server', () => {
    const missing = operationsOf(doc).map(({ path, method }) => `${method} ${path}`).filter((op) => !exercised.has(op));
    assert.deepEqual(missing, []);
  });
});
