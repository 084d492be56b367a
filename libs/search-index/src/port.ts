/** What search knows of a file. `visible` is false once the file is deleted or disabled. */
export interface SearchDoc {
  id: string;
  title: string;
  description: string;
  tags: string[];
  category: string;
  ownerId: number;
  visible: boolean;
  uploadedAt: string;
}

export interface SearchPage { from: number; size: number }

export interface SearchResult { total: number; hits: SearchDoc[] }

/**
 * Full-text index of files. Writes carry a version (the file stream's version): a write with a
 * version not newer than the stored one is ignored, so replays and duplicates change nothing.
 */
export interface SearchIndex {
  /** Stores `doc` at `version` unless the index already holds that id at `version` or later; true when stored. */
  upsert(doc: SearchDoc, version: number): Promise<boolean>;
  get(id: string): Promise<{ doc: SearchDoc; version: number } | null>;
  /**
   * Visible documents matching `text` in title, tags, category or description, best first
   * (title > tags > category > description), tolerant of a one-letter typo in words of four
   * letters or more; `total` counts every match, `hits` holds the page.
   */
  search(text: string, page: SearchPage): Promise<SearchResult>;
  /** Empties the index (used before a rebuild). */
  clear(): Promise<void>;
  close(): Promise<void>;
}
