// Validates values against the schemas of the gateway's OpenAPI document (JSON Schema 2020-12,
// Ajv), with `$ref`s into the document's components resolved. Shared by the unit tests of the
// document (services/gateway/test/openapi.test.ts) and the conformance test that holds the
// document true to a running server (tests/conformance/openapi.test.ts).
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';

export type Obj = Record<string, unknown>;

export interface Operation {
  operationId: string;
  parameters?: Obj[];
  requestBody?: Obj;
  responses: Record<string, Obj>;
  security?: unknown[];
  [key: string]: unknown;
}

export interface Doc {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: Record<string, Record<string, Obj>>;
  [key: string]: unknown;
}

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** Every operation of the document with its path and method. */
export const operationsOf = (doc: Doc): Array<{ path: string; method: string; op: Operation }> =>
  Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item)
    .filter(([method]) => (HTTP_METHODS as readonly string[]).includes(method))
    .map(([method, op]) => ({ path, method, op })));

/** A JSON pointer (RFC 6901) from its segments. */
export const pointer = (...segments: Array<string | number>): string =>
  segments.map((s) => `/${String(s).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

/**
 * Objects with `properties` and no word on others get `additionalProperties: false`: an answer
 * with a field the document does not name fails (for answers; requests may carry more).
 */
export const closed = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(closed);
  if (value === null || typeof value !== 'object') return value;
  const out: Obj = {};
  for (const [k, v] of Object.entries(value)) out[k] = closed(v);
  if (out.type === 'object' && out.properties !== undefined && !('additionalProperties' in out)) out.additionalProperties = false;
  return out;
};

const ID = 'https://docshare.invalid/openapi.json';

export class DocSchemas {
  readonly doc: Doc;
  private readonly ajv: Ajv2020;
  private readonly compiled = new Map<string, ValidateFunction>();

  /** `strict`: objects of the document's schemas admit no other property (see `closed`). */
  constructor(doc: Doc, options: { strict?: boolean } = {}) {
    this.doc = doc;
    // The document is no schema itself: only the schemas it holds are compiled, through $refs.
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
    formats.default(this.ajv);
    const source = (options.strict ? closed(doc) : structuredClone(doc)) as Obj;
    this.ajv.addSchema({ ...source, $id: ID });
  }

  /** The object a `$ref` (`#/components/...`) names, followed until it is not a reference. */
  resolve<T = Obj>(value: unknown): T {
    let current = value as Obj;
    for (let hops = 0; typeof current?.$ref === 'string'; hops++) {
      if (hops > 10) throw new Error(`$ref loop at ${String(current.$ref)}`);
      const ref = current.$ref;
      if (!ref.startsWith('#/')) throw new Error(`not a local $ref: ${ref}`);
      current = ref.slice(2).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
        .reduce<unknown>((node, key) => (node as Obj | undefined)?.[key], this.doc) as Obj;
      if (current === undefined) throw new Error(`$ref to nothing: ${ref}`);
    }
    return current as T;
  }

  /** Errors of `value` against the schema at `at` (a JSON pointer into the document); empty when valid. */
  errors(at: string, value: unknown): string[] {
    let validate = this.compiled.get(at);
    if (validate === undefined) {
      validate = this.ajv.compile({ $ref: `${ID}#${at.split('/').map(encodeURIComponent).join('/')}` });
      this.compiled.set(at, validate);
    }
    if (validate(value)) return [];
    return (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
  }

  /**
   * Errors of a header's text value against a header or parameter schema at `at`: numbers and
   * booleans are read from the text as the schema's type says.
   */
  headerErrors(at: string, text: string): string[] {
    const target = this.resolve<Obj>(this.at(at));
    const type = (target as { type?: unknown }).type;
    const value = type === 'integer' || type === 'number' ? (/^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text)
      : type === 'boolean' ? (text === 'true' ? true : text === 'false' ? false : text) : text;
    return this.errors(at, value);
  }

  /** The value at a JSON pointer of the document. */
  at(at: string): unknown {
    return at.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((node, key) => (node as Obj | undefined)?.[key], this.doc);
  }

  /** `at`, or where the `$ref` found there leads (followed until it is not a reference). */
  deref(at: string): string {
    let current = at;
    for (let hops = 0; hops < 10; hops++) {
      const node = this.at(current) as Obj | undefined;
      if (typeof node?.$ref !== 'string') return current;
      current = node.$ref.slice(1);
    }
    throw new Error(`$ref loop at ${at}`);
  }

  /**
   * The pointer of a response (following its `$ref`): where its headers and content are.
   */
  responsePointer(path: string, method: string, status: string): string {
    if (this.doc.paths[path]?.[method]?.responses[status] === undefined) throw new Error(`no ${status} answer documented for ${method.toUpperCase()} ${path}`);
    return this.deref(pointer('paths', path, method, 'responses', status));
  }
}
