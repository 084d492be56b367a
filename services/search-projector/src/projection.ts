import type { CloudEvent, DocshareEvent, StoredEvent } from '@docshare/contracts';
import { known } from '@docshare/projection';
import type { SearchDoc, SearchIndex } from '@docshare/search-index';

/**
 * What an event does to a file's search document, given the document as indexed now (null when
 * absent). Pure; null means no change. Deleted and disabled files stay indexed but invisible, so
 * a replayed older write cannot bring them back.
 */
export const searchProjection = (event: DocshareEvent, current: SearchDoc | null): SearchDoc | null => {
  switch (event.type) {
    case 'docs.file.uploaded.v1': {
      const f = event.data;
      return {
        id: String(f.fileId), title: f.title, description: f.description, tags: f.tags, category: f.categoryName,
        ownerId: f.ownerId, visible: true, uploadedAt: f.uploadedAt,
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
    case 'docs.file.deleted.v1':
      return current ? { ...current, visible: false } : null;
    default:
      return null;
  }
};

const FILE_EVENTS = new Set(['docs.file.uploaded.v1', 'docs.file.updated.v1', 'docs.file.deleted.v1']);

/** Applies one event to the index; the index's external version (the stream version) makes it idempotent. */
export const indexEvent = async (index: SearchIndex, event: DocshareEvent): Promise<void> => {
  if (!FILE_EVENTS.has(event.type)) return;
  const id = event.subject.replace(/^file-/, '');
  const current = await index.get(id);
  if (current && current.version >= event.streamversion) return;
  const next = searchProjection(event, current?.doc ?? null);
  if (next) await index.upsert(next, event.streamversion);
};

/** The search projector's event handler: the index's counterpart of applyProjection. */
export const searchHandler = (index: SearchIndex) => async (record: StoredEvent<CloudEvent>): Promise<void> => {
  const event = known(record.event);
  if (event) await indexEvent(index, event);
};
