import express, { type Express } from 'express';
import { M, positiveId, present } from '@docshare/contracts';
import { actorOf, errorHandler, jsonBody, pageOf, sendError, type Logger } from '@docshare/http';
import { notFound } from '@docshare/contracts';
import type { ReadStore } from '@docshare/read-store';
import { makeFilesQueries } from './queries.ts';

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
    const data = await queries.commentsReceivedBy(actorOf(req));
    res.json({ status: 'success', data });
  });

  app.get('/api/V1/docs/api-categories', async (req, res) => {
    actorOf(req);
    res.json({ status: 'success', data: await queries.categories() });
  });

  app.use((_req, res) => sendError(res, 404, M.notFound));
  app.use(errorHandler(logger));
  return app;
};
