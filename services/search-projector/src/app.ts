import { setImmediate as nextTurn } from 'node:timers/promises';
import express, { type Express } from 'express';
import { invalid, joinTags, LICENSES, LIMITS, M, notFound, positiveId, text, viewUrl } from '@docshare/contracts';
import { actorOf, bodyOf, errorHandler, failureMessage, jsonBody, pageOf, sendError, type Logger } from '@docshare/http';
import { InvalidCursor, makeSnippets, type SearchDoc, type SearchFacets, type SearchFilters, type SearchIndex } from '@docshare/search-index';

/** Most tags one filter may name, and the longest cursor accepted (real ones are far shorter). */
const MAX_FILTER_TAGS = 20;
const MAX_CURSOR_LENGTH = 4_096;

/** `filters` of a search request (docs/api-decisions.md); anything malformed is `Invalid filters`. */
export const parseFilters = (raw: unknown): SearchFilters | undefined => {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'object' || Array.isArray(raw)) throw invalid(M.invalidFilters);
  const { category_id: categoryId, license, tags } = raw as Record<string, unknown>;
  const filters: SearchFilters = {};
  if (categoryId !== undefined && categoryId !== null) {
    const id = positiveId(categoryId);
    if (id === null) throw invalid(M.invalidFilters);
    filters.categoryId = id;
  }
  if (license !== undefined && license !== null) {
    if (typeof license !== 'string' || !(LICENSES as readonly string[]).includes(license.trim())) throw invalid(M.invalidFilters);
    filters.license = license.trim();
  }
  if (tags !== undefined && tags !== null) {
    // A list, as the issue asks; a comma-separated string, as uploads take tags, reads the same.
    const list = typeof tags === 'string' ? tags.split(',') : tags;
    if (!Array.isArray(list) || list.some((tag) => typeof tag !== 'string' || tag.length > LIMITS.tags)) throw invalid(M.invalidFilters);
    const named = (list as string[]).map((tag) => tag.trim()).filter((tag) => tag !== '');
    if (named.length > MAX_FILTER_TAGS) throw invalid(M.invalidFilters);
    if (named.length > 0) filters.tags = named;
  }
  return filters;
};

const parseFacets = (raw: unknown): boolean => {
  if (raw === undefined || raw === null) return false;
  if (typeof raw !== 'boolean') throw invalid(M.facetsNotBoolean);
  return raw;
};

const parseCursor = (raw: unknown): string | undefined => {
  if (raw === undefined || raw === null || raw === '') return undefined;
  if (typeof raw !== 'string' || raw.length > MAX_CURSOR_LENGTH) throw invalid(M.invalidCursor);
  return raw;
};

/** Facets as the API shows them: category ids as strings, like every id of the API. */
const facetsBody = (facets: SearchFacets) => ({
  category: facets.category.map(({ id, name, count }) => ({ id: String(id), name, count })),
  license: facets.license,
  tag: facets.tag,
});

/**
 * The result items of a page, with their snippets. Each snippet's work is bounded (makeSnippets);
 * the event loop gets a turn between them, so a page of 100 long documents never holds other
 * requests for longer than one snippet.
 */
async function resultItems(hits: readonly SearchDoc[], term: string, publicBaseUrl: string) {
  const snippet = makeSnippets(term);
  const items = [];
  for (const doc of hits) {
    if (items.length > 0) await nextTurn();
    items.push({
      id: doc.id, title: doc.title, link: viewUrl(publicBaseUrl, Number(doc.id)), description: doc.description,
      category: doc.category, tag: joinTags(doc.tags), snippet: snippet(doc),
    });
  }
  return items;
}

/** The search query API (decisions §7, docs/api-decisions.md), answered from the search index only. */
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
    const filters = parseFilters(body.filters);
    const facets = parseFacets(body.facets);
    const cursor = parseCursor(body.cursor);
    let result;
    try {
      result = await index.search(term, { from: (page - 1) * perPage, size: perPage }, {
        ...(filters ? { filters } : {}), facets, ...(cursor === undefined ? {} : { cursor }),
      });
    } catch (error) {
      if (error instanceof InvalidCursor) throw invalid(M.invalidCursor);
      throw error;
    }
    if (result.total === 0) throw notFound(M.noResults);
    const from = result.from ?? (page - 1) * perPage;
    res.json({
      status: 'success',
      results: await resultItems(result.hits, term, publicBaseUrl),
      total: result.total,
      // A cursor's page is where its hits sit in the whole list, at this per_page.
      page: cursor === undefined ? page : Math.floor(from / Math.max(1, perPage)) + 1,
      per_page: perPage,
      ...(result.facets ? { facets: facetsBody(result.facets) } : {}),
      ...(result.nextCursor === undefined ? {} : { next_cursor: result.nextCursor }),
    });
  });
  app.use((_req, res) => sendError(res, 404, M.notFound));
  app.use(errorHandler(logger));
  return app;
};
