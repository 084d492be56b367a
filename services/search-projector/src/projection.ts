import type { CloudEvent, DocshareEvent, StoredEvent } from '@docshare/contracts';
import { known } from '@docshare/projection';
import type { SearchDoc, SearchIndex } from '@docshare/search-index';

/**
 * What an event does to a file's search document, given the document as indexed now (null when
 * absent). Pure; null means no change. Deleted and disabled files stay indexed but invisible, so
 * a replayed older write cannot bring them back; a deleted one without its personal fields.
 */
export const searchProjection = (event: DocshareEvent, current: SearchDoc | null): SearchDoc | null => {
  switch (event.type) {
    case 'docs.file.uploaded.v1': {
      const f = event.data;
      return {
        id: String(f.fileId), title: f.title, description: f.description, tags: f.tags, category: f.categoryName,
        categoryId: f.categoryId, license: f.license, content: '', ownerId: f.ownerId, visible: true, uploadedAt: f.uploadedAt,
      };
    }
    case 'docs.file.updated.v1': {
      if (!current) return null;
      const { title, description, tags, enabled } = event.data.changes;
      if (title === undefined && description === undefined && tags === undefined && enabled === undefined) return null;
      return {
        ...current,
        title: title ?? current.title,
        description: description ?? current.description,
        tags: tags ?? current.tags,
        visible: enabled ?? current.visible,
      };
    }
    // A tombstone keeps only what stops a replayed older write (its version) and what is no one's
    // personal data (ids, category, licence, time): the owner's title, description, tags and
    // extracted text (up to 100,000 characters) go, as nothing can show or search them again and
    // an erasure deletes the files this way.
    case 'docs.file.deleted.v1':
      return current ? { ...current, visible: false, title: '', description: '', tags: [], content: '' } : null;
    // The text found in the file's bytes: searched below title, tags and description.
    case 'docs.file.content-extracted.v1':
      return current ? { ...current, content: event.data.text } : null;
    default:
      return null;
  }
};

const FILE_EVENTS = new Set(['docs.file.uploaded.v1', 'docs.file.updated.v1', 'docs.file.deleted.v1', 'docs.file.content-extracted.v1']);

const fileIdOf = (event: DocshareEvent): string => event.subject.replace(/^file-/, '');

/**
 * Applies a batch of events to the index: the current documents of the files concerned in one
 * read, the events folded in memory (each skipped when the document already reflects its stream
 * version: the index's external version makes redelivery harmless), the results in one bulk
 * write, made searchable once. The handler every runner of the index uses (projector, embedded
 * mode, rebuild).
 */
export const searchHandler = (
  index: SearchIndex,
  /** false while filling a rebuild's index, which publish() refreshes once (a refresh per batch only makes small segments). */
  options: { refresh?: boolean } = {},
) => async (records: readonly StoredEvent<CloudEvent>[]): Promise<void> => {
  const events = records.map((r) => known(r.event)).filter((e): e is DocshareEvent => e !== null && FILE_EVENTS.has(e.type));
  if (events.length === 0) return;
  const current = await index.getMany([...new Set(events.map(fileIdOf))]);
  const changed = new Map<string, { doc: SearchDoc; version: number }>();
  for (const event of events) {
    const id = fileIdOf(event);
    const now = changed.get(id) ?? current.get(id);
    if (now && now.version >= event.streamversion) continue;
    const next = searchProjection(event, now?.doc ?? null);
    if (next) changed.set(id, { doc: next, version: event.streamversion });
  }
  if (changed.size === 0) return;
  await index.upsertMany([...changed.values()]);
  if (options.refresh !== false) await index.refresh();
};
