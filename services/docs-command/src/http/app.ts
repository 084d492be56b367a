import { randomBytes } from 'node:crypto';
import express, { type Express, type Request, type RequestHandler, type Response } from 'express';
import {
  DocshareError, ERASED_USER_HEADER, M, positiveId,
} from '@docshare/contracts';
import { RangeNotSatisfiable, type ByteRange } from '@docshare/blob-store';
import {
  actorOf, BLOB_HANDOFF_HEADER, INTERNAL_TOKEN_HEADER, internalOnly, BLOB_KEY_HEADER, BLOB_RANGE_HEADER, bodyOf, errorHandler, failureMessage, IDENTITY_HEADER, jsonBody, metaOf, requesterOf, sendError, uploadSlot, type Logger,
} from '@docshare/http';
import { pageOf } from '@docshare/http';
import type { DocsCommands } from '../commands/docs-commands.ts';
import { CONTENT_CACHE_CONTROL } from '../commands/content.ts';
import { readUploadForm } from './upload-form.ts';
import { declaredLength, drainSmallBody } from './request-body.ts';
import {
  parseChanges, parseComment, parseErasure, parseFileId, parseLogin, parsePartNumber, parseParts, parseRegistration, parseStartUpload, parseUploadMetadata,
} from './validation.ts';
import type { UploadView } from '../commands/resumable.ts';
import {
  CONTENT_SECURITY_POLICY, contentDispositionFor, renderFilePage, renderNotFoundPage,
} from '../pages/view-page.ts';
import { parseExtractionReport } from './extraction-report.ts';
import {
  parseDeliveriesQuery, parseDisableReport, parseReplay, parseWebhookChanges, parseWebhookId, parseWebhookInput,
} from './webhook-validation.ts';
import type { WebhookCommands } from '../commands/webhooks.ts';
import {
  PAGE_CACHE_CONTROL, STREAMED_CONTENT_CACHE_CONTROL, contentValidators, httpDate, notModified, pageValidators, rangeAllowed,
  type ConditionalHeaders, type Validators,
} from './http-caching.ts';
import {
  IDEMPOTENCY_KEY_HEADER, consistencyHeaders, hashOnlySink, hashingSink, idempotent, send, uploadRequestOf, type Idempotency, type IdempotentRoute, type Work,
} from './idempotency.ts';

export interface DocsCommandAppOptions {
  commands: DocsCommands;
  logger: Logger;
  maxUploadBytes: number;
  publicBaseUrl: string;
  /**
   * The shared secret the text extractor sends as `X-Internal-Token` (INTERNAL_TOKEN, distributed
   * mode). Unset: the internal routes do not exist (embedded mode records extractions in process).
   */
  internalToken?: string;
  /** Safe retries: writes with an Idempotency-Key (idempotency.ts); unset: the header is not honoured. */
  idempotency?: Idempotency;
  /**
   * Holds a read of api-purchases until the files read model has applied the caller's consistency
   * token (the purchases it lists come from there); unset: answers at once.
   */
  purchasesConsistency?: RequestHandler;
}

/** The internal token header (libs/http internal-token.ts), where the internal routes' callers send INTERNAL_TOKEN. */
export { INTERNAL_TOKEN_HEADER };

/** Parses `Range: bytes=a-b | a- | -n` for one range of a blob of `size` bytes; undefined means "send it all". */
export const parseRange = (header: string | undefined, size: number): ByteRange | 'unsatisfiable' | undefined => {
  if (!header) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return undefined;
  const [, from = '', to = ''] = match;
  if (from === '' && to === '') return undefined;
  if (from === '') {
    const suffix = Number(to);
    if (suffix === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(from);
  const end = to === '' ? size - 1 : Math.min(Number(to), size - 1);
  if (to !== '' && Number(to) < start) return undefined;
  if (start >= size) return 'unsatisfiable';
  return { start, end };
};


/** A resumable upload session as GET api-uploads/{id} answers it. */
const uploadBody = ({ session, phase, received, parts, fileId }: UploadView) => ({
  upload_id: session.uploadId, state: phase, file_name: session.fileName, size: session.size, part_size: session.partSize,
  part_count: session.partCount, expires_at: session.expiresAt,
  received: received.map((part) => ({ part_number: part.partNumber, size: part.size, etag: part.etag })),
  parts: parts.map(({ partNumber, url }) => ({ part_number: partNumber, url })),
  ...(fileId === undefined ? {} : { file_id: String(fileId) }),
});

/** The conditional headers of a GET or HEAD (http-caching.ts). */
const conditionalOf = (req: Request): ConditionalHeaders => ({ ifNoneMatch: req.get('if-none-match'), ifModifiedSince: req.get('if-modified-since') });

/** The docs-command service's HTTP face: every write of the API, the view page and signed content links. */
export const makeDocsCommandApp = (options: DocsCommandAppOptions): Express => {
  const { commands, logger } = options;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  const { idempotency } = options;
  /** A write that a retry with the same Idempotency-Key does once (when idempotency is configured). */
  const once = (route: IdempotentRoute, work: Work): RequestHandler =>
    idempotency ? idempotent(idempotency, route, work) : async (req, res) => send(res, await work(req));
  const jsonRequest: IdempotentRoute = { requestOf: async (req) => bodyOf(req) };

  app.post('/api/V1/users/api-register', jsonBody(), once({
    ...jsonRequest,
    // The token is not kept: a replay answers with a fresh one for the same user.
    redact: ({ token: _token, ...rest }) => rest,
    restore: (body) => ({ ...body, token: commands.issueToken(Number(body.user_id)) }),
  }, async (req) => {
    const input = parseRegistration(bodyOf(req));
    const { userId, token, recorded } = await commands.register(input, metaOf(req));
    return { status: 201, body: { status: 'success', message: M.registered, user_id: userId, token }, recorded };
  }));

  app.post('/api/V1/users/api-login', jsonBody(), async (req, res) => {
    const { email, password } = parseLogin(bodyOf(req));
    const { userId, token, recorded } = await commands.login(email, password, metaOf(req));
    send(res, { status: 200, body: { status: 'success', message: M.loggedIn, user_id: userId, token }, recorded });
  });

  // Behind a gateway, its caps again per docs-command process (several gateways may feed one);
  // in one process the gateway's count stands.
  app.post('/api/V1/docs/api-upload', uploadSlot((req) => req.get(IDENTITY_HEADER)), once({
    deferred: true,
    // A replay's form is read only to compare it (its bytes hashed, not stored).
    requestOf: async (req) => uploadRequestOf(await readUploadForm(req, hashOnlySink, options.maxUploadBytes)),
  }, async (req) => {
    const actorId = actorOf(req);
    // The storage quota is checked before the body is read, and held until the upload is recorded.
    const storage = await commands.reserveStorage(actorId, declaredLength(req.get('content-length'))).catch(async (error: unknown) => {
      await drainSmallBody(req);
      throw error;
    });
    try {
      // The file part streams into the blob store while the form is read (upload-form.ts).
      const keyed = idempotency !== undefined && req.get(IDEMPOTENCY_KEY_HEADER) !== undefined;
      const sink = keyed ? hashingSink(commands.uploadSink) : commands.uploadSink;
      const form = await readUploadForm(req, sink, storage.limitFor(options.maxUploadBytes)).catch(storage.explain);
      // Until `upload` has it, the stored blob is this route's to remove when the upload is refused.
      let handedOver = false;
      try {
        if (!form.file) throw new DocshareError('invalid', M.fileRequired);
        const metadata = parseUploadMetadata(form.fields);
        handedOver = true;
        const { fileId, categoryId, categoryName, recorded } = await commands.upload(actorId, form.file, metadata, metaOf(req), storage);
        return {
          status: 201, recorded, request: keyed ? uploadRequestOf(form) : undefined,
          body: { status: 'success', message: M.uploaded, file_id: String(fileId), category_id: String(categoryId), category_name: categoryName },
        };
      } finally {
        if (!handedOver) await form.discard();
      }
    } finally {
      await storage.release();
    }
  }));

  // Resumable uploads (docs/api-decisions.md "Resumable uploads"): a session, its parts sent
  // straight to the object store (or to the part route below), and a completion that records the file.
  app.post('/api/V1/docs/api-uploads', jsonBody(), once(jsonRequest, async (req) => {
    const actorId = actorOf(req);
    const input = parseStartUpload(bodyOf(req));
    const { session, parts, recorded } = await commands.startUpload(actorId, input, metaOf(req));
    return {
      status: 201, recorded,
      body: {
        status: 'success', message: M.uploadStarted, upload_id: session.uploadId, part_size: session.partSize, part_count: session.partCount,
        expires_at: session.expiresAt, parts: parts.map(({ partNumber, url }) => ({ part_number: partNumber, url })),
      },
    };
  }));

  app.get('/api/V1/docs/api-uploads/:uploadId', async (req, res) => {
    const view = await commands.uploadStatus(actorOf(req), String(req.params.uploadId));
    res.json({ status: 'success', upload: uploadBody(view) });
  });

  app.post('/api/V1/docs/api-uploads/:uploadId/complete', jsonBody(), once(jsonRequest, async (req) => {
    const actorId = actorOf(req);
    const parts = parseParts(bodyOf(req));
    const { fileId, categoryId, categoryName, recorded } = await commands.completeUpload(actorId, String(req.params.uploadId), parts, metaOf(req));
    return {
      status: 201, recorded,
      body: { status: 'success', message: M.uploaded, file_id: String(fileId), category_id: String(categoryId), category_name: categoryName },
    };
  }));

  app.delete('/api/V1/docs/api-uploads/:uploadId', async (req, res) => {
    const { recorded } = await commands.abortUpload(actorOf(req), String(req.params.uploadId), metaOf(req));
    send(res, { status: 200, body: { status: 'success', message: M.uploadAborted }, recorded });
  });

  // A part through docshare's signed URL: no token (the signature is the credential), the body
  // streamed into the object store (paced to the owner's byte budget), its ETag answered.
  // Parts count among their owner's uploads in flight (HTTP_MAX_UPLOADS_PER_USER, with form
  // uploads): a user cannot open parts without bound, each holding a part's worth of memory.
  const partOwner: RequestHandler = async (req, res, next) => {
    res.locals.partOwner = await commands.uploadOwner(String(req.params.uploadId)).then((owner) => (owner === undefined ? undefined : String(owner)), () => undefined);
    next();
  };
  app.put('/api/V1/docs/api-uploads/:uploadId/parts/:partNumber', partOwner, uploadSlot((_req, res) => res.locals.partOwner as string | undefined), async (req, res) => {
    const partNumber = parsePartNumber(String(req.params.partNumber));
    try {
      if (partNumber === null) throw new DocshareError('forbidden', M.badUploadLink);
      const etag = await commands.putPart(String(req.params.uploadId), partNumber, req.query.expires, req.query.signature, req, declaredLength(req.get('content-length')));
      res.setHeader('ETag', etag);
      res.json({ status: 'success', message: M.partReceived, part_number: partNumber, etag });
    } catch (error) {
      // Refused before or while the body was read: a small rest is read so the client sees the answer.
      await drainSmallBody(req);
      throw error;
    }
  });

  app.get('/api/V1/docs/api-download', async (req, res) => {
    const actorId = actorOf(req);
    const fileId = parseFileId(req.query.file_id);
    const { originalFileName, downloadUrl, recorded } = await commands.authorizeDownload(actorId, fileId, metaOf(req));
    send(res, { status: 200, body: { status: 'success', message: M.downloadReady, original_file_name: originalFileName, download_url: downloadUrl }, recorded });
  });

  app.delete('/api/V1/docs/api-delete', failureMessage(M.deletionFailed), jsonBody(), once(jsonRequest, async (req) => {
    const actorId = actorOf(req);
    const fileId = parseFileId(bodyOf(req).id);
    const { recorded } = await commands.remove(actorId, fileId, metaOf(req));
    return { status: 200, body: { status: 'success', message: M.deleted }, recorded };
  }));

  app.post('/api/V1/docs/api-comment', jsonBody(), once(jsonRequest, async (req) => {
    const actorId = actorOf(req);
    const body = bodyOf(req);
    const fileId = parseFileId(body.file_id);
    const text = parseComment(body.comment);
    const { commentId, recorded } = await commands.comment(actorId, fileId, text, metaOf(req));
    return { status: 201, body: { status: 'success', message: M.commentPosted, comment_id: commentId }, recorded };
  }));

  app.post('/api/V1/docs/api-update', jsonBody(), once(jsonRequest, async (req) => {
    const actorId = actorOf(req);
    const body = bodyOf(req);
    const fileId = parseFileId(body.id);
    const changes = parseChanges(body);
    const { recorded } = await commands.update(actorId, fileId, changes, metaOf(req));
    return { status: 200, body: { status: 'success', message: M.updated }, recorded };
  }));

  app.post('/api/V1/docs/api-purchase', jsonBody(), once({
    ...jsonRequest,
    // A replay answers the link it kept while that is valid (the same body), a fresh one after.
    restore: (body) => {
      const [, fileId, saleId, expires] = /\/files\/(\d+)\/content\?sale=(\d+)&expires=(\d+)&/.exec(String(body.download_url)) ?? [];
      if (!fileId || !saleId || Number(expires) > Date.now() / 1000) return body;
      return { ...body, download_url: commands.purchaseUrl(Number(fileId), Number(saleId)) };
    },
  }, async (req) => {
    const actorId = actorOf(req);
    const fileId = parseFileId(bodyOf(req).file_id);
    const { saleId, created, downloadUrl, recorded } = await commands.purchase(actorId, fileId, metaOf(req));
    // A repeat is answered with the first sale (200): a buyer buys a file once.
    return { status: created ? 201 : 200, body: { status: 'success', message: created ? M.purchased : M.alreadyPurchased, sale_id: saleId, download_url: downloadUrl }, recorded };
  }));

  // The files the caller bought, each with a link to its bytes: from the files read model, signed here.
  const purchasesConsistency: RequestHandler = options.purchasesConsistency ?? ((_req, _res, next) => next());
  app.get('/api/V1/users/api-purchases', purchasesConsistency, async (req, res) => {
    const buyerId = actorOf(req);
    const page = pageOf(req.query);
    res.json({ status: 'success', ...(await commands.purchases(buyerId, page)) });
  });

  // Leaving (issue 24, docs/api-decisions.md "Leaving: erasure and export"). The erasure's answer
  // names the user to the gateway (ERASED_USER_HEADER), which refuses their tokens from then on and
  // forgets their consistency token and rate-limit keys; the header never leaves the gateway.
  app.post('/api/V1/users/api-erase', jsonBody(), async (req, res) => {
    const userId = actorOf(req);
    const password = parseErasure(bodyOf(req));
    const { erasureId, recorded } = await commands.requestErasure(userId, password, metaOf(req));
    res.set(consistencyHeaders(recorded)).set(ERASED_USER_HEADER, String(userId)).status(202).json({
      status: 'success', message: M.erasureAccepted, erasure_id: erasureId, status_url: commands.erasureLinks.statusUrl(userId, erasureId),
    });
  });
  // No token (the erased user has none that works): the link's signature says whose erasure it is.
  app.get('/api/V1/users/api-erase/status/:erasureId', async (req, res) => {
    const { erasureId } = req.params;
    const userId = commands.erasureLinks.verify(erasureId, req.query);
    if (userId === null) return sendError(res, 403, M.badErasureLink);
    const status = await commands.erasureStatus(userId, erasureId);
    if (!status) return sendError(res, 404, M.erasureNotFound);
    res.json({
      status: 'success', erasure_id: erasureId, state: status.state, files_deleted: status.filesDeleted, comments_redacted: status.commentsRedacted,
    });
  });
  app.post('/api/V1/users/api-export', jsonBody(), async (req, res) => {
    const { exportId, recorded } = await commands.exports.request(actorOf(req), metaOf(req));
    send(res, { status: 202, body: { status: 'success', message: M.exportAccepted, export_id: exportId }, recorded });
  });
  app.get('/api/V1/users/api-export', async (req, res) => {
    const userId = actorOf(req);
    const exportId = req.query.export_id;
    if (typeof exportId !== 'string' || exportId.trim() === '') return sendError(res, 400, M.exportIdRequired);
    const status = /^[0-9a-f-]{36}$/.test(exportId) ? await commands.exports.status(userId, exportId) : null;
    if (!status) return sendError(res, 404, M.exportNotFound);
    res.json({ status: 'success', export: status });
  });
  app.get('/api/V1/users/api-export/:exportId/content', async (req, res) => {
    const blob = await commands.exports.open(req.params.exportId, req.query);
    if (blob === null) return sendError(res, 403, M.badExportLink);
    res.status(200).set({
      'Content-Type': 'application/zip', 'Content-Length': String(blob.size), 'Cache-Control': 'private, no-store',
      'Content-Disposition': `attachment; filename="docshare-export-${req.params.exportId}.zip"`,
    });
    blob.body.on('error', (err) => {
      logger.warn({ err }, 'export stream failed');
      res.destroy(err);
    });
    res.on('close', () => blob.body.destroy());
    blob.body.pipe(res);
  });

  // Webhooks (issue 23, docs/api-decisions.md "Webhooks"): a user's endpoints; deliveries are the dispatcher's.
  const webhooks = (): WebhookCommands => {
    if (!commands.webhooks) throw new DocshareError('unavailable', M.unavailable);
    return commands.webhooks;
  };
  // A secret is never kept with an idempotent answer: a replay of the request reads the current one again.
  const secretKept = (read: (ownerId: number, webhookId: number) => Promise<string>): IdempotentRoute => ({
    ...jsonRequest,
    redact: ({ secret: _secret, ...rest }) => rest,
    // The endpoint is the one registered (its id in the answer) or the one in the path (a rotation).
    restore: async (body, req) => {
      const webhookId = (body.webhook as { id?: number } | undefined)?.id ?? parseWebhookId(req.params.webhookId);
      return { ...body, secret: await read(actorOf(req), webhookId) };
    },
  });
  const base = '/api/V1/users/api-webhooks';
  app.post(base, jsonBody(), once(secretKept((ownerId, id) => webhooks().currentSecret(ownerId, id)), async (req) => {
    const input = parseWebhookInput(bodyOf(req));
    const { webhook, secret, recorded } = await webhooks().register(actorOf(req), input, metaOf(req));
    return { status: 201, recorded, body: { status: 'success', message: M.webhookRegistered, webhook, secret } };
  }));
  app.get(base, async (req, res) => {
    res.json({ status: 'success', webhooks: await webhooks().list(actorOf(req)) });
  });
  app.get(`${base}/:webhookId`, async (req, res) => {
    res.json({ status: 'success', webhook: await webhooks().get(actorOf(req), parseWebhookId(req.params.webhookId)) });
  });
  app.patch(`${base}/:webhookId`, jsonBody(), async (req, res) => {
    const webhookId = parseWebhookId(req.params.webhookId);
    const changes = parseWebhookChanges(bodyOf(req));
    const { webhook, recorded } = await webhooks().update(actorOf(req), webhookId, changes, metaOf(req));
    send(res, { status: 200, recorded, body: { status: 'success', message: M.webhookUpdated, webhook } });
  });
  app.delete(`${base}/:webhookId`, async (req, res) => {
    const { recorded } = await webhooks().remove(actorOf(req), parseWebhookId(req.params.webhookId), metaOf(req));
    send(res, { status: 200, recorded, body: { status: 'success', message: M.webhookDeleted } });
  });
  app.post(`${base}/:webhookId/rotate-secret`, jsonBody(), once(secretKept((ownerId, id) => webhooks().currentSecret(ownerId, id)), async (req) => {
    const webhookId = parseWebhookId(req.params.webhookId);
    const { secret, previousValidUntil, recorded } = await webhooks().rotateSecret(actorOf(req), webhookId, metaOf(req));
    return {
      status: 200, recorded,
      body: { status: 'success', message: M.webhookSecretRotated, secret, previous_secret_expires_at: previousValidUntil },
    };
  }));
  app.post(`${base}/:webhookId/test`, jsonBody(), once(jsonRequest, async (req) => {
    const { messageId, recorded } = await webhooks().test(actorOf(req), parseWebhookId(req.params.webhookId), metaOf(req));
    return { status: 202, recorded, body: { status: 'success', message: M.webhookTestQueued, message_id: messageId } };
  }));
  app.get(`${base}/:webhookId/deliveries`, async (req, res) => {
    const webhookId = parseWebhookId(req.params.webhookId);
    res.json({ status: 'success', ...(await webhooks().deliveries(actorOf(req), webhookId, parseDeliveriesQuery(req.query, true))) });
  });
  app.get(`${base}/:webhookId/dead-letters`, async (req, res) => {
    const webhookId = parseWebhookId(req.params.webhookId);
    res.json({ status: 'success', ...(await webhooks().deadLetters(actorOf(req), webhookId, parseDeliveriesQuery(req.query, false))) });
  });
  app.post(`${base}/:webhookId/replay`, jsonBody(), once(jsonRequest, async (req) => {
    const webhookId = parseWebhookId(req.params.webhookId);
    const selector = parseReplay(bodyOf(req), new Date());
    const { replayId, recorded } = await webhooks().replay(actorOf(req), webhookId, selector, metaOf(req));
    return { status: 202, recorded, body: { status: 'success', message: M.webhookReplayQueued, replay_id: replayId } };
  }));

  // Internal: the text extractor's reports. The gateway routes only the API's paths (routes.ts),
  // and each request must carry the internal token besides.
  const internal = options.internalToken === undefined ? null : internalOnly(options.internalToken);
  if (internal) app.get('/internal/V1/files/:fileId/extraction', internal, async (req, res) => {
    const fileId = positiveId(req.params.fileId);
    if (fileId === null) throw new DocshareError('not_found', M.fileNotFound);
    res.json({ status: 'success', extraction: await commands.extractionStatus(fileId) });
  });

  // 200,000 characters of text: up to ~1.2 MB of JSON once escaped.
  if (internal) app.post('/internal/V1/files/:fileId/extraction', internal, jsonBody('4mb'), async (req, res) => {
    const fileId = positiveId(req.params.fileId);
    if (fileId === null) throw new DocshareError('not_found', M.fileNotFound);
    const { blobKey, report } = parseExtractionReport(bodyOf(req));
    const recorded = await commands.recordExtraction(fileId, blobKey, report, metaOf(req));
    send(res, { status: recorded ? 201 : 200, body: { status: 'success', recorded: recorded !== null }, recorded });
  });

  // The dispatcher's report: an endpoint answered 410 Gone, or failed every attempt for WEBHOOK_DISABLE_AFTER.
  if (internal) app.post('/internal/V1/webhooks/:webhookId/disabled', internal, jsonBody(), async (req, res) => {
    const webhookId = parseWebhookId(req.params.webhookId);
    const { ownerId, reason } = parseDisableReport(bodyOf(req));
    const { recorded } = await webhooks().disable(ownerId, webhookId, reason, metaOf(req));
    send(res, { status: 200, body: { status: 'success', recorded: recorded !== null }, recorded });
  });

  app.get('/docs/:fileId', async (req: Request, res: Response) => {
    const fileId = positiveId(req.params.fileId);
    const sendPage = (status: number, html: string, nonce?: string, validators?: Validators): void => {
      const scripts = nonce ? `'nonce-${nonce}'` : "'none'";
      res.status(status)
        .set('Content-Type', 'text/html; charset=utf-8')
        .set('Content-Security-Policy', `default-src 'none'; style-src 'unsafe-inline'; script-src ${scripts}; connect-src 'self'; img-src 'self' data:; frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`)
        .set('X-Content-Type-Options', 'nosniff')
        // A file's page is revalidated on each visit (http-caching.ts); a 404 page is never kept.
        .set('Cache-Control', validators ? PAGE_CACHE_CONTROL : 'no-store')
        .set(validators ? { ETag: validators.etag, 'Last-Modified': httpDate(validators.lastModified) } : {})
        .send(html);
    };
    if (fileId === null) return sendPage(404, renderNotFoundPage());
    try {
      // A HEAD (link checkers, crawlers) answers like GET but is not a view.
      const { file, recorded } = req.method === 'HEAD' ? { file: await commands.peek(fileId), recorded: null } : await commands.view(fileId, requesterOf(req), metaOf(req));
      res.set(consistencyHeaders(recorded));
      // The validators describe what the page shows, not its per-response nonce (http-caching.ts).
      const validators = pageValidators(renderFilePage(file, options.publicBaseUrl, ''), file);
      // A conditional GET is a visit too: its view was counted above, whatever the answer.
      if (notModified(conditionalOf(req), validators)) {
        // Validators and Cache-Control only, no CSP: the browser keeps the page it has with the
        // headers it came with, its CSP naming that page's nonce included.
        res.status(304).set({ ETag: validators.etag, 'Last-Modified': httpDate(validators.lastModified), 'Cache-Control': PAGE_CACHE_CONTROL }).end();
        return;
      }
      const nonce = randomBytes(16).toString('base64');
      sendPage(200, renderFilePage(file, options.publicBaseUrl, nonce), nonce, validators);
    } catch (error) {
      if (error instanceof DocshareError && error.kind === 'not_found') return sendPage(404, renderNotFoundPage());
      throw error;
    }
  });

  app.get('/files/:fileId/content', async (req, res) => {
    const fileId = positiveId(req.params.fileId);
    // The gateway streams the bytes itself from the blob store (BLOB_HANDOFF_HEADER): the link,
    // the file and the range are checked here, no blob is opened.
    const handoff = req.get(BLOB_HANDOFF_HEADER) === '1' && req.method === 'GET';
    // What the conditional headers decided, once the file's validators are known (http-caching.ts).
    const chosen: { notModified?: boolean; range?: ByteRange } = {};
    let opened;
    try {
      opened = fileId === null ? null
        : await commands.openContent(fileId, req.query.expires, req.query.signature, (size, file) => {
          const validators = contentValidators(file);
          chosen.notModified = notModified(conditionalOf(req), validators);
          // If-Range that does not match: the whole file (a resumed download restarts from 0).
          const range = chosen.notModified || !rangeAllowed(req.get('if-range'), validators) ? undefined : parseRange(req.get('range'), size);
          if (range === 'unsatisfiable') return range;
          chosen.range = range;
          // Neither a 304 nor a HEAD needs the bytes.
          return chosen.notModified || req.method === 'HEAD' || handoff ? 'headers' : range;
        }, req.query.sale);
    } catch (error) {
      if (error instanceof RangeNotSatisfiable) {
        res.set('Content-Range', `bytes */${error.size}`);
        throw new DocshareError('range_not_satisfiable', M.rangeNotSatisfiable);
      }
      throw error;
    }
    if (!opened) throw new DocshareError('forbidden', M.badDownloadLink);
    if (opened.redirect !== undefined) {
      // The blob store serves the bytes itself (BLOB_PUBLIC_URL): Range, the file name and the
      // content type come from it. The redirect itself is never cached: it expires with the link.
      res.setHeader('Cache-Control', CONTENT_CACHE_CONTROL);
      res.redirect(302, opened.redirect);
      return;
    }
    const { file, blob } = opened;
    const validators = contentValidators(file);
    res.setHeader('ETag', validators.etag);
    res.setHeader('Last-Modified', httpDate(validators.lastModified));
    res.setHeader('Cache-Control', STREAMED_CONTENT_CACHE_CONTROL);
    // A 304 carries the validators and Cache-Control only: the client keeps the rest of what it has.
    if (chosen.notModified) {
      res.status(304).end();
      return;
    }
    // What the file records (a resumable upload's is sniffed at completion), not what the store was told.
    const contentType = file.contentType;
    // setHeader, not res.set: express would append a charset to the stored content type.
    res.setHeader('Content-Type', contentType);
    // Inline only for the page's previews of safe types (view-page.ts); always sandboxed.
    res.setHeader('Content-Disposition', contentDispositionFor(file.originalFileName, contentType, req.query.disposition));
    res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Accept-Ranges', 'bytes');
    if (handoff) {
      // No body and no length: the gateway sets them from the blob store's answer, as below.
      res.setHeader(BLOB_KEY_HEADER, file.blobKey);
      if (chosen.range) res.setHeader(BLOB_RANGE_HEADER, `${chosen.range.start}-${chosen.range.end}`);
      res.status(200).end();
      return;
    }
    const range = blob ? blob.range : chosen.range;
    const size = blob?.size ?? file.size;
    if (range) {
      res.status(206).set('Content-Range', `bytes ${range.start}-${range.end}/${size}`)
        .set('Content-Length', String(range.end - range.start + 1));
    } else {
      res.status(200).set('Content-Length', String(size));
    }
    // A HEAD: the headers a GET would have, no bytes read.
    if (!blob) {
      res.end();
      return;
    }
    blob.body.on('error', (err) => {
      logger.warn({ err, fileId }, 'content stream failed');
      res.destroy(err);
    });
    res.on('close', () => blob.body.destroy());
    // One pipe, no copy: the store's chunks (MinIO: the response's socket reads; fs: 256 KiB
    // reads) go to the socket as they are, paced by the client.
    blob.body.pipe(res);
  });

  app.use((_req, res) => sendError(res, 404, M.notFound));
  app.use(errorHandler(logger));
  return app;
};
