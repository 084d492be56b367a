import express, { type Express } from 'express';
import { LIMITS, M, positiveId, present } from '@docshare/contracts';
import { actorOf, bodyOf, errorHandler, jsonBody, pageOf, sendError, type Logger } from '@docshare/http';
import { notFound } from '@docshare/contracts';
import type { ReadStore } from '@docshare/read-store';
import { makeFilesQueries } from './queries.ts';

/**
 * Paging of received comments and categories: up to the usual maximum per page, and by default a
 * whole page of it, so the short lists these endpoints answered before paging existed still come whole.
 */
const LIST_PAGING = { perPage: LIMITS.perPageMax, max: LIMITS.perPageMax };

/** The files query API: a user's files, comments received, categories. */
export const makeFilesApp = (store: ReadStore, publicBaseUrl: string, logger: Logger): Express => {
  const queries = makeFilesQueries(store, publicBaseUrl);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  app.get('/api/V1/users/api-files', async (req, res) => {
    const viewerId = actorOf(req);
    const query = req.query as Record<string, unknown>;
    let userId = viewerId;
    if (present(query.user_id)) {
      const id = positiveId(query.user_id);
      if (id === null) throw notFound(M.userNotFound);
      userId = id;
    }
    const page = pageOf(query);
    res.json({ status: 'success', ...(await queries.filesOf(userId, viewerId, page)) });
  });

  app.post('/api/V1/users/api-comments', jsonBody(), async (req, res) => {
    const userId = actorOf(req);
    // The spec sends no body here: paging may come in the query string, or in a JSON body (which wins).
    const body = bodyOf(req);
    const query = req.query as Record<string, unknown>;
    const from = (name: string): unknown => (body[name] !== undefined ? body[name] : query[name]);
    const page = pageOf({ page: from('page'), per_page: from('per_page') }, LIST_PAGING);
    res.json({ status: 'success', ...(await queries.commentsReceivedBy(userId, page)) });
  });

  app.get('/api/V1/docs/api-categories', async (req, res) => {
    actorOf(req);
    const page = pageOf(req.query, LIST_PAGING);
    res.json({ status: 'success', ...(await queries.categories(page)) });
  });

  app.use((_req, res) => sendError(res, 404, M.notFound));
  app.use(errorHandler(logger));
  return app;
};
