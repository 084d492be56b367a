import type { SearchProjector } from '@docshare/projection';
import { searchHandler } from './projection.ts';
import { makeSearchApp } from './app.ts';

/** The search projector: the files' search index. */
export const searchProjector: SearchProjector = {
  kind: 'search',
  name: 'search-projector',
  model: 'search',
  upstream: 'search',
  port: 8084,
  handler: searchHandler,
  queryApp: (index, { publicBaseUrl, logger }) => makeSearchApp(index, publicBaseUrl, logger),
};
