// Looking inside a local server's DATA_DIR (only meaningful for a locally spawned server).
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

export async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await listFiles(p)));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

/** Files under `dir` whose bytes contain `needle`. Files that vanish while reading are skipped. */
export async function filesContaining(dir: string, needle: Uint8Array | string): Promise<string[]> {
  const n = typeof needle === 'string' ? Buffer.from(needle, 'utf8') : Buffer.from(needle);
  const hits: string[] = [];
  for (const f of await listFiles(dir)) {
    try {
      const data = await readFile(f);
      if (data.indexOf(n) !== -1) hits.push(f);
    } catch {
      // removed meanwhile
    }
  }
  return hits;
}
