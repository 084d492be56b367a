// Assertion helpers shared by the conformance tests.
import assert from 'node:assert/strict';
import type { Json, Res } from './client.ts';

function describeRes(res: Res): string {
  return `HTTP ${res.status} ${res.headers.get('content-type') ?? '(no content-type)'} ${res.text.slice(0, 600)}`;
}

export function expectJson(res: Res): void {
  const ct = res.headers.get('content-type') ?? '';
  assert.match(ct, /^application\/json\b/i, `expected a JSON response, got ${describeRes(res)}`);
  assert.ok(res.body !== null && typeof res.body === 'object' && !Array.isArray(res.body), `expected a JSON object body, got ${describeRes(res)}`);
  assert.ok(res.body.status === 'success' || res.body.status === 'error', `body.status must be "success" or "error": ${describeRes(res)}`);
}

/** Error envelope: HTTP status, `status: "error"`, the exact message, and nothing else in the body. */
export function expectError(res: Res, httpStatus: number, message: string): void {
  assert.equal(res.status, httpStatus, `expected HTTP ${httpStatus} "${message}", got ${describeRes(res)}`);
  expectJson(res);
  assert.equal(res.body.status, 'error', describeRes(res));
  assert.equal(res.body.message, message, describeRes(res));
  assertKeys(res.body, ['status', 'message'], 'error body');
}

/** Success envelope with the given HTTP status; returns the body. */
export function expectSuccess(res: Res, httpStatus: number): Json {
  assert.equal(res.status, httpStatus, `expected HTTP ${httpStatus} success, got ${describeRes(res)}`);
  expectJson(res);
  assert.equal(res.body.status, 'success', describeRes(res));
  return res.body;
}

/** The object has exactly these keys (order ignored). */
export function assertKeys(obj: unknown, keys: string[], what = 'object'): void {
  assert.ok(obj !== null && typeof obj === 'object', `${what} must be an object, got ${JSON.stringify(obj)}`);
  assert.deepEqual(Object.keys(obj).sort(), [...keys].sort(), `${what} must have exactly the fields ${keys.join(', ')}: ${JSON.stringify(obj).slice(0, 600)}`);
}

export function assertInt(v: unknown, what: string): asserts v is number {
  assert.ok(typeof v === 'number' && Number.isInteger(v), `${what} must be an integer, got ${JSON.stringify(v)}`);
}

export function assertIdString(v: unknown, what: string): asserts v is string {
  assert.ok(typeof v === 'string' && /^[1-9][0-9]*$/.test(v), `${what} must be a string of digits, got ${JSON.stringify(v)}`);
}

export function assertDate(v: unknown, what: string): asserts v is string {
  assert.ok(typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v), `${what} must be YYYY-MM-DD, got ${JSON.stringify(v)}`);
}

export function utcDate(d = new Date()): string {
  return d.toISOString().slice(0, 10);
}

/** The body must not leak stack traces or internals. */
export function assertNoLeak(res: Res): void {
  const t = res.text;
  assert.doesNotMatch(t, /\bat [^\s]+ \(?[^)]*:\d+:\d+\)?/, `stack trace in body: ${t.slice(0, 600)}`);
  assert.doesNotMatch(t, /node_modules|\.ts:\d+|"stack"|ECONNREFUSED|ENOENT|SQLITE|TypeError|ReferenceError|SyntaxError/i, `internals in body: ${t.slice(0, 600)}`);
}
