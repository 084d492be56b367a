import { LICENSES, LIMITS, M } from '@docshare/contracts';
import { ROUTES, type Route } from './routes.ts';

type Schema = Record<string, unknown>;

const str: Schema = { type: 'string' };
const int: Schema = { type: 'integer' };
const obj = (properties: Record<string, Schema>, required = Object.keys(properties)): Schema =>
  ({ type: 'object', properties, required });
const success = (properties: Record<string, Schema> = {}): Schema =>
  obj({ status: { const: 'success' }, ...properties });
const json = (schema: Schema) => ({ 'application/json': { schema } });
const ok = (description: string, schema: Schema) => ({ description, content: json(schema) });
const error = { $ref: '#/components/responses/Error' };
const bearer = [{ XAuthorization: [] }, { BearerAuth: [] }];

const pagingQuery = (perPageDefault: number) => [
  { name: 'page', in: 'query', required: false, schema: { type: 'integer', minimum: 1, default: 1 } },
  { name: 'per_page', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: LIMITS.perPageMax, default: perPageDefault } },
];

/** Request and success bodies of each operation; errors share one envelope. */
const OPERATIONS: Record<string, Schema> = {
  register: {
    requestBody: { required: true, content: json(obj({ name: str, email: { type: 'string', format: 'email' }, password: { type: 'string', minLength: 8 } })) },
    responses: { 201: ok(M.registered, success({ message: str, user_id: int, token: str })), 400: error, 409: error },
  },
  login: {
    requestBody: { required: true, content: json(obj({ email: str, password: str })) },
    responses: { 200: ok(M.loggedIn, success({ message: str, user_id: int, token: str })), 400: error, 401: error },
  },
  upload: {
    requestBody: {
      required: true,
      content: {
        'multipart/form-data': {
          schema: obj({
            file: { type: 'string', contentMediaType: 'application/octet-stream' }, title: str, description: str,
            tags: { type: 'string', description: 'comma-separated' }, category_id: str, new_category_name: str,
            category_description: str, category_tags: str, cc_license: { type: 'string', enum: [...LICENSES] },
            video: { type: 'string', description: 'http(s) URL, may be empty' },
          }, ['file', 'title', 'description', 'tags', 'cc_license']),
        },
      },
    },
    responses: {
      201: ok(M.uploaded, success({ message: str, file_id: str, category_id: str, category_name: str })),
      400: error, 401: error, 404: error, 413: error,
    },
  },
  download: {
    parameters: [{ name: 'file_id', in: 'query', required: true, schema: str }],
    responses: {
      200: ok(M.downloadReady, success({ message: str, original_file_name: str, download_url: { type: 'string', format: 'uri' } })),
      400: error, 401: error, 403: error, 404: error,
    },
  },
  deleteFile: {
    requestBody: { required: true, content: json(obj({ id: str })) },
    responses: { 200: ok(M.deleted, success({ message: str })), 400: error, 401: error, 403: error, 404: error, 500: error },
  },
  postComment: {
    requestBody: { required: true, content: json(obj({ file_id: str, comment: { type: 'string', maxLength: 5000 } })) },
    responses: { 201: ok(M.commentPosted, success({ message: str, comment_id: int })), 400: error, 401: error, 404: error },
  },
  updateFile: {
    requestBody: {
      required: true,
      content: json(obj({
        id: str, for_sale: { type: 'boolean' }, price: { type: 'number', minimum: 0 }, enabled: { type: 'boolean' },
        title: str, description: str, tags: str,
      }, ['id'])),
    },
    responses: { 200: ok(M.updated, success({ message: str })), 400: error, 401: error, 403: error, 404: error },
  },
  purchase: {
    requestBody: { required: true, content: json(obj({ file_id: str })) },
    responses: { 201: ok(M.purchased, success({ message: str, sale_id: int })), 400: error, 401: error, 404: error, 409: error },
  },
  listCategories: {
    parameters: pagingQuery(LIMITS.perPageMax),
    responses: {
      200: ok('Categories, by id', success({
        data: { type: 'array', items: obj({ id: int, name: str, description: str, tags: str }) },
        total: int, page: int, per_page: int,
      })),
      400: error, 401: error,
    },
  },
  search: {
    requestBody: {
      required: true,
      content: json(obj({
        search: { type: 'string', maxLength: LIMITS.searchTerm, description: 'Matched against title, tags, category, description and the text extracted from the file (in that order of weight), tolerant of one-letter typos' },
        page: { type: 'integer', minimum: 1, description: 'Ignored with `cursor`. Pages reach the first 10,000 matches; a cursor goes on' },
        per_page: { type: 'integer', minimum: 1, maximum: LIMITS.perPageMax, default: LIMITS.perPageDefault },
        facets: { type: 'boolean', default: false, description: 'Add `facets`: counts per category, licence and tag over every match' },
        filters: {
          type: 'object',
          description: 'Every filter given must hold; tags compare without case, and a file must carry every tag listed',
          properties: {
            category_id: { type: ['string', 'integer'] },
            license: { type: 'string', enum: [...LICENSES] },
            tags: { type: 'array', items: str, maxItems: 20 },
          },
        },
        cursor: { type: 'string', description: '`next_cursor` of the previous page, with the same `search` and `filters`: the following page, from the same snapshot of the index. Expires 5 minutes after its last use' },
      }, ['search'])),
    },
    responses: {
      200: ok('Matches, best first', {
        ...success({
          results: {
            type: 'array',
            items: obj({
              id: str, title: str, link: { type: 'string', format: 'uri' }, description: str, category: str, tag: str,
              snippet: { type: 'string', description: 'HTML: an escaped excerpt around the best match, matched words in <mark>…</mark>' },
            }),
          },
          total: int, page: int, per_page: int,
          facets: obj({
            category: { type: 'array', items: obj({ id: str, name: str, count: int }) },
            license: { type: 'array', items: obj({ value: str, count: int }) },
            tag: { type: 'array', items: obj({ value: str, count: int }) },
          }),
          next_cursor: { type: 'string', description: 'Present while more matches follow this page' },
        }),
        required: ['status', 'results', 'total', 'page', 'per_page'],
      }),
      400: error, 401: error, 404: error, 500: error,
    },
  },
  stats: {
    responses: {
      200: ok('Statistics', success({ data: obj({ total_comments: int, total_files: int, total_views: int, total_downloads: int, total_sales: int }) })),
      401: error, 500: error,
    },
  },
  listFiles: {
    parameters: [{ name: 'user_id', in: 'query', required: false, schema: str }, ...pagingQuery(LIMITS.perPageDefault)],
    responses: {
      200: ok('Files, newest first', success({
        user: obj({ id: int, name: str }),
        files: { type: 'array', items: obj({ file_id: int, upload_date: { type: 'string', format: 'date' }, title: str, description: str, file_url: { type: 'string', format: 'uri' } }) },
        total: int, page: int, per_page: int,
      })),
      400: error, 401: error, 404: error,
    },
  },
  listComments: {
    parameters: pagingQuery(LIMITS.perPageMax),
    requestBody: {
      required: false,
      description: 'Optional; page and per_page here win over the query string.',
      content: json(obj({ page: { type: 'integer', minimum: 1 }, per_page: { type: 'integer', minimum: 1, maximum: LIMITS.perPageMax } }, [])),
    },
    responses: {
      200: ok('Comments received, newest first', success({
        data: { type: 'array', items: obj({ comment_id: int, submission_date: { type: 'string', format: 'date' }, title: str, comment: str, link: { type: 'string', format: 'uri' } }) },
        total: int, page: int, per_page: int,
      })),
      400: error, 401: error, 404: error,
    },
  },
  viewPage: {
    parameters: [{ name: 'fileId', in: 'path', required: true, schema: str }],
    responses: {
      200: { description: 'HTML page of the file', content: { 'text/html': { schema: str } } },
      404: { description: 'HTML page: file not found', content: { 'text/html': { schema: str } } },
    },
  },
  fileContent: {
    parameters: [
      { name: 'fileId', in: 'path', required: true, schema: str },
      { name: 'expires', in: 'query', required: true, schema: int },
      { name: 'signature', in: 'query', required: true, schema: str },
      { name: 'Range', in: 'header', required: false, schema: str },
    ],
    responses: {
      200: { description: 'The file', content: { 'application/octet-stream': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } } },
      206: { description: 'Part of the file' },
      403: error, 404: error, 416: error,
    },
  },
};

const openApiPath = (path: string): string => path.replace(/:(\w+)/g, '{$1}');

/** The OpenAPI 3.1 document of the gateway, built from the route table so it cannot drift from it. */
export const openApiDocument = (publicBaseUrl: string): Schema => {
  const paths: Record<string, Record<string, Schema>> = {};
  const rateLimited = { 429: error };
  for (const route of ROUTES as Route[]) {
    const operation = OPERATIONS[route.operationId];
    if (!operation) throw new Error(`no OpenAPI operation for ${route.operationId}`);
    const responses = { ...(operation.responses as Record<string, unknown>), ...rateLimited };
    (paths[openApiPath(route.path)] ??= {})[route.method] = {
      operationId: route.operationId, summary: route.summary, ...operation, responses,
      security: route.auth ? bearer : [],
    };
  }
  paths['/api/V1/openapi.json'] = {
    get: { operationId: 'openapi', summary: 'This document', security: [], responses: { 200: { description: 'OpenAPI 3.1 document' } } },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'docshare API', version: '1.0.0',
      description: 'Upload, download, delete and search files with metadata; statistics, file lists and comments. Every response is JSON with `status` = `success` | `error`.',
    },
    servers: [{ url: publicBaseUrl }],
    security: bearer,
    paths,
    components: {
      securitySchemes: {
        XAuthorization: { type: 'apiKey', in: 'header', name: 'X-Authorization', description: '`Bearer <JWT>`' },
        BearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      },
      schemas: { Error: obj({ status: { const: 'error' }, message: str }) },
      responses: { Error: { description: 'Error envelope', content: json({ $ref: '#/components/schemas/Error' }) } },
    },
  };
};
