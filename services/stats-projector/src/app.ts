import express, { type Express } from 'express';
import { M } from '@docshare/contracts';
import { actorOf, errorHandler, failureMessage, jsonBody, sendError, type Logger } from '@docshare/http';
import type { ReadStore } from '@docshare/read-store';
import { makeStatsQueries } from './queries.ts';
import { dailyParams, topParams, trendingParams } from './params.ts';

export interface StatsAppOptions {
  /** The public base URL of the files' view-page links (api-top, api-trending). */
  publicBaseUrl?: string;
  /** The clock that says which days and hours are the last ones (default: the system's). */
  now?: () => Date;
}

/**
 * The stats query API, from the read model only: the authenticated user's lifetime statistics,
 * daily statistics and top files, and every user's trending files. Bad query parameters answer
 * a JSON 400 (params.ts) through the error handler.
 */
export const makeStatsApp = (store: ReadStore, logger: Logger, options: StatsAppOptions = {}): Express => {
  const queries = makeStatsQueries(store, { publicBaseUrl: options.publicBaseUrl ?? '', now: options.now ?? (() => new Date()) });
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.post('/api/V1/stats/api-stats', failureMessage(M.statsFailed), jsonBody(), async (req, res) => {
    const data = await queries.statsOf(actorOf(req));
    res.json({ status: 'success', data });
  });
  app.get('/api/V1/stats/api-daily', failureMessage(M.statsFailed), async (req, res) => {
    const userId = actorOf(req);
    const daily = await queries.daily(userId, dailyParams(req.query));
    res.json({ status: 'success', ...daily });
  });
  app.get('/api/V1/stats/api-top', failureMessage(M.statsFailed), async (req, res) => {
    const userId = actorOf(req);
    res.json({ status: 'success', results: await queries.top(userId, topParams(req.query)) });
  });
  app.get('/api/V1/stats/api-trending', failureMessage(M.statsFailed), async (req, res) => {
    actorOf(req);
    res.json({ status: 'success', results: await queries.trending(trendingParams(req.query)) });
  });
  app.use((_req, res) => sendError(res, 404, M.notFound));
  app.use(errorHandler(logger));
  return app;
};
