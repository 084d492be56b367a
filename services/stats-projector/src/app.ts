import express, { type Express } from 'express';
import { M } from '@docshare/contracts';
import { actorOf, errorHandler, failureMessage, jsonBody, sendError, type Logger } from '@docshare/http';
import type { ReadStore } from '@docshare/read-store';
import { makeStatsQueries } from './queries.ts';

/** The stats query API: the authenticated user's statistics, from the read model only. */
export const makeStatsApp = (store: ReadStore, logger: Logger): Express => {
  const queries = makeStatsQueries(store);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.post('/api/V1/stats/api-stats', failureMessage(M.statsFailed), jsonBody(), async (req, res) => {
    const data = await queries.statsOf(actorOf(req));
    res.json({ status: 'success', data });
  });
  app.use((_req, res) => sendError(res, 404, M.notFound));
  app.use(errorHandler(logger));
  return app;
};
