import express, { type Express } from 'express';
import { invalid, joinTags, LIMITS, M, notFound, text, viewUrl } from '@docshare/contracts';
import { actorOf, bodyOf, errorHandler, failureMessage, jsonBody, pageOf, sendError, type Logger } from '@docshare/http';
import type { SearchIndex } from '@docshare/search-index';

/** The search query API (decisions §7), answered from the search index only. */
export const makeSearchApp = (index: SearchIndex, publicBaseUrl: string, logger: Logger): Express => {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.post('/api/V1/stats/api-search', failureMessage(M.searchFailed), jsonBody(), async (req, res) => {
    actorOf(req);
    const body = bodyOf(req);
    const term = text(body.search);
    if (term === null) throw invalid(M.searchTermRequired);
    if (term.length > LIMITS.searchTerm) throw invalid(M.searchTermTooLong);
    const { page, perPage } = pageOf(body);
    const result = await index.search(term, { from: (page - 1) * perPage, size: perPage });
    if (result.total === 0) throw notFound(M.noResults);
    res.json({
      status: 'success',
      results: result.hits.map((doc) => ({
        id: doc.id, title: doc.title, link: viewUrl(publicBaseUrl, Number(doc.id)), description: doc.description,
        category: doc.category, tag: joinTags(doc.tags),
      })),
      total: result.total, page, per_page: perPage,
    });
  });
  app.use((_req, res) => sendError(res, 404, M.notFound));
  app.use(errorHandler(logger));
  return app;
};
