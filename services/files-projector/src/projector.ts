import type { DocumentProjector } from '@docshare/projection';
import type { ReadModelIndex } from '@docshare/read-store/mongo';
import { filesHandler } from './projection.ts';
import { makeFilesApp } from './app.ts';

/**
 * The indexes the files read model's queries need (queries.ts), each an equality prefix followed
 * by the sort, so a page and its total read the index only as far as they need
 * (docs/mongodb.md, "Read paths and their plans").
 */
export const FILES_INDEXES: Readonly<Record<string, readonly ReadModelIndex[]>> = {
  files: [
    // A user's files newest first: the owner's view, and everyone else's (enabled ones only).
    { name: 'owner_listing', key: [['owner_id', 1], ['deleted', 1], ['uploaded_at', -1], ['file_id', -1]] },
    { name: 'visible_listing', key: [['owner_id', 1], ['deleted', 1], ['enabled', 1], ['uploaded_at', -1], ['file_id', -1]] },
    // The titles of a page of received comments.
    { name: 'file_id', key: [['file_id', 1]] },
    // A user's files not deleted by id, a page after another (fileIdsOf: what an erasure deletes).
    { name: 'owner_files', key: [['owner_id', 1], ['deleted', 1], ['file_id', 1]] },
  ],
  comments: [
    // Received comments on live files, newest first: `file_deleted` missing or false
    // (`$in: [false, null]`, two index ranges). Replaces `received`, which left `file_deleted` to
    // a filter over every comment of the owner (a rebuild drops it).
    { name: 'received_live', key: [['file_owner_id', 1], ['file_deleted', 1], ['posted_at', -1], ['comment_id', -1]] },
    // A file's comments, which its deletion marks (projection.ts).
    { name: 'file_id', key: [['file_id', 1]] },
    // A user's comments written, newest first by id: the export lists them, an erasure counts and redacts them.
    { name: 'author', key: [['author_id', 1], ['comment_id', -1]] },
  ],
  categories: [{ name: 'category_id', key: [['category_id', 1]] }],
  // A buyer's purchases still listed, newest first; a file's purchases, which its updates and
  // deletion mark (projection.ts).
  purchases: [
    { name: 'buyer_listing', key: [['buyer_id', 1], ['listed', 1], ['purchased_at', -1], ['file_id', -1]] },
    { name: 'file_id', key: [['file_id', 1]] },
  ],
  // The categories in use (api-categories).
  category_use: [{ name: 'live', key: [['live', 1], ['category_id', 1]] }],
};

/** The files projector: users, files, comments and categories as the list endpoints show them. */
export const filesProjector: DocumentProjector = {
  kind: 'documents',
  name: 'files-projector',
  model: 'files',
  upstream: 'files',
  port: 8083,
  indexes: FILES_INDEXES,
  handler: filesHandler,
  queryApp: (store, { publicBaseUrl, logger }) => makeFilesApp(store, publicBaseUrl, logger),
};
