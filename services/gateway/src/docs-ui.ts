import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { Express, Request, RequestHandler, Response } from 'express';
import { M } from '@docshare/contracts';
import { PROBE_PATHS, closeEarly, sendError } from '@docshare/http';

/*
 * The documentation a person reads: Swagger UI (swagger-ui-dist, served from node_modules, never
 * from a CDN) at /api/V1/docs over the gateway's OpenAPI document, and `/`, a small index that
 * points to it. Both are public (no token) and rate limited like every other path.
 */

/** The API's prefix (spec §9: the version is the path segment /api/V1/). */
export const API_PREFIX = '/api/V1';
export const OPENAPI_PATH = `${API_PREFIX}/openapi.json`;
export const DOCS_PATH = `${API_PREFIX}/docs`;
export const INDEX_PATH = '/';
/** Express pattern of the UI's static files: the version segment changes with their content. */
export const DOCS_ASSET_PATH = `${DOCS_PATH}/assets/:version/:file`;

/** The routes the gateway answers itself (the route table, routes.ts, names those of the services). */
export const LOCAL_ROUTES = [
  { method: 'get', path: INDEX_PATH, operationId: 'index', summary: 'Index: where the API, its reference and the health probes are' },
  { method: 'get', path: OPENAPI_PATH, operationId: 'openapi', summary: 'This OpenAPI 3.1 document' },
  { method: 'get', path: DOCS_PATH, operationId: 'docsUi', summary: 'API reference (HTML, Swagger UI)' },
  { method: 'get', path: DOCS_ASSET_PATH, operationId: 'docsAsset', summary: 'A static file of the API reference page' },
] as const;

const swaggerDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const swaggerVersion = (JSON.parse(readFileSync(path.join(swaggerDir, 'package.json'), 'utf8')) as { version: string }).version;

/**
 * Starts Swagger UI on the page's own element, over the document at a same-origin path. A file
 * rather than an inline script, so the page's Content-Security-Policy allows no inline script.
 * No top bar (it would load any URL typed in), no external validator badge.
 */
const INIT_JS = `'use strict';
(function () {
  var root = document.getElementById('swagger-ui');
  window.ui = SwaggerUIBundle({
    url: root.getAttribute('data-openapi-url'),
    domNode: root,
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    validatorUrl: null,
    displayRequestDuration: true,
    defaultModelsExpandDepth: 0
  });
})();
`;

interface Asset { type: string; load: () => Promise<Buffer> }

/** The only files served under the assets path: an allow-list, never a path into node_modules. */
const ASSETS: Record<string, Asset> = {
  'swagger-ui.css': { type: 'text/css; charset=utf-8', load: () => readFile(path.join(swaggerDir, 'swagger-ui.css')) },
  'swagger-ui-bundle.js': { type: 'text/javascript; charset=utf-8', load: () => readFile(path.join(swaggerDir, 'swagger-ui-bundle.js')) },
  'favicon-32x32.png': { type: 'image/png', load: () => readFile(path.join(swaggerDir, 'favicon-32x32.png')) },
  'docs-init.js': { type: 'text/javascript; charset=utf-8', load: async () => Buffer.from(INIT_JS) },
};
export const DOCS_ASSET_FILES: readonly string[] = Object.keys(ASSETS);

/** Changes whenever a served file can: swagger-ui-dist's version and our initialiser. */
export const DOCS_ASSET_VERSION = `${swaggerVersion}-${createHash('sha256').update(INIT_JS).digest('hex').slice(0, 10)}`;
const assetUrl = (file: string): string => `${DOCS_PATH}/assets/${DOCS_ASSET_VERSION}/${file}`;

/** Each file and its gzip, read and compressed once, on first use. */
const loaded = new Map<string, Promise<{ raw: Buffer; gzipped: Buffer }>>();
const gzipAsync = promisify(gzip);
const loadAsset = (file: string, asset: Asset) => {
  let entry = loaded.get(file);
  if (entry === undefined) {
    entry = asset.load().then(async (raw) => ({ raw, gzipped: await gzipAsync(raw, { level: 9 }) }));
    entry.catch(() => loaded.delete(file));
    loaded.set(file, entry);
  }
  return entry;
};

const sha256 = (text: string): string => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

/**
 * The reference page's policy: its scripts and stylesheet are its own files; Swagger UI sets
 * inline styles (style-src 'unsafe-inline'), shows data: images from its stylesheet, and calls the
 * API ("Try it out") on the origin the page was reached by: the document's server is relative
 * (`/`), so 'self' is all it needs, whatever the host name (PUBLIC_BASE_URL plays no part).
 */
export const DOCS_POLICY = [
  "default-src 'none'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:",
  "connect-src 'self'", "font-src 'self'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
].join('; ');

export const docsPage = (): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>docshare API reference</title>
<link rel="stylesheet" href="${assetUrl('swagger-ui.css')}">
<link rel="icon" type="image/png" href="${assetUrl('favicon-32x32.png')}">
</head>
<body>
<div id="swagger-ui" data-openapi-url="${OPENAPI_PATH}"></div>
<noscript><p>The API reference needs JavaScript. The OpenAPI document itself is at <a href="${OPENAPI_PATH}">${OPENAPI_PATH}</a>.</p></noscript>
<script src="${assetUrl('swagger-ui-bundle.js')}"></script>
<script src="${assetUrl('docs-init.js')}"></script>
</body>
</html>
`;

/** The JSON index: where the API, its reference, its document and the probes are (paths on this origin). */
export const indexBody = () => ({
  status: 'success' as const,
  message: 'docshare API',
  api: API_PREFIX,
  docs: DOCS_PATH,
  openapi: OPENAPI_PATH,
  health: [...PROBE_PATHS],
});

const INDEX_STYLE = 'body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}code{background:#f3f3f3;padding:0 .2em}';

const indexPage = (): string => {
  const body = indexBody();
  const link = (href: string, text: string): string => `<a href="${escapeHtml(href)}">${escapeHtml(text)}</a>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>docshare API</title>
<style>${INDEX_STYLE}</style>
</head>
<body>
<h1>docshare API</h1>
<p>A JSON API for uploading, downloading, deleting and searching documents. Its paths start with <code>${escapeHtml(body.api)}</code>.</p>
<ul>
<li>${link(body.docs, 'API reference')} (every operation, with examples)</li>
<li>${link(body.openapi, 'OpenAPI 3.1 document')} (JSON)</li>
${body.health.map((p) => `<li>${link(p, p)} (health probe)</li>`).join('\n')}
</ul>
</body>
</html>
`;
};

const INDEX_POLICY = `default-src 'none'; style-src ${sha256(INDEX_STYLE)}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

const sendHtml = (res: Response, html: string, policy: string): void => {
  res.status(200)
    .set('Content-Type', 'text/html; charset=utf-8')
    .set('Content-Security-Policy', policy)
    .set('X-Content-Type-Options', 'nosniff')
    .set('Referrer-Policy', 'no-referrer')
    // The page names the current assets' version: checked each time, never kept stale.
    .set('Cache-Control', 'no-cache')
    .send(html);
};

/** GET `/`: JSON when the client prefers it (Accept), else HTML. */
const index: RequestHandler = (req, res) => {
  res.locals.route = INDEX_PATH;
  res.vary('Accept');
  if (req.accepts(['html', 'json']) === 'json') {
    res.set('Cache-Control', 'no-store').json(indexBody());
    return;
  }
  sendHtml(res, indexPage(), INDEX_POLICY);
};

const asset: RequestHandler = async (req: Request, res, next) => {
  res.locals.route = DOCS_ASSET_PATH;
  const { version, file } = req.params as { version: string; file: string };
  const found = Object.hasOwn(ASSETS, file) ? ASSETS[file] : undefined;
  if (version !== DOCS_ASSET_VERSION || found === undefined) return sendError(res, 404, M.notFound);
  try {
    const { raw, gzipped } = await loadAsset(file, found);
    const useGzip = req.acceptsEncodings('gzip', 'identity') === 'gzip';
    res.status(200)
      .set('Content-Type', found.type)
      .set('Cache-Control', 'public, max-age=31536000, immutable')
      .set('X-Content-Type-Options', 'nosniff')
      .set('Cross-Origin-Resource-Policy', 'same-origin')
      .vary('Accept-Encoding');
    if (useGzip) res.set('Content-Encoding', 'gzip');
    const body = useGzip ? gzipped : raw;
    res.set('Content-Length', String(body.length)).end(body);
  } catch (error) {
    next(error);
  }
};

/**
 * The gateway's own routes take no body, and never read one: when a request comes with a body
 * anyway, its answer is the connection's last (closeEarly), so that the unread body cannot reset
 * the connection under a long answer (the OpenAPI document, a script) before it is all sent.
 */
export const unreadBody: RequestHandler = (req, res, next) => {
  if (!req.complete) closeEarly(res);
  next();
};

/**
 * Mounts the gateway's own documentation routes on the app itself (not on a sub-router, whose
 * automatic OPTIONS answer would pre-empt the app's 405): `/`, the reference page and its files.
 */
export const mountDocs = (app: Express): void => {
  const page = docsPage();
  const policy = DOCS_POLICY;
  app.get(INDEX_PATH, unreadBody, index);
  app.get(DOCS_PATH, unreadBody, (_req, res) => {
    res.locals.route = DOCS_PATH;
    sendHtml(res, page, policy);
  });
  app.get(DOCS_ASSET_PATH, unreadBody, asset);
};
