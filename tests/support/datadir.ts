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

/**
 * Where a server keeps file bytes that still contain `needle`: files under DATA_DIR (embedded),
 * or objects in the instance's MinIO bucket (distributed; the bucket is named from DATA_DIR as
 * infra/stack/instance.ts names it).
 */
export async function storedBytesContaining(server: { dataDir: string }, needle: Uint8Array): Promise<string[]> {
  if (process.env['DOCSHARE_TARGET'] !== 'distributed') return filesContaining(server.dataDir, needle);
  const { createHash } = await import('node:crypto');
  const { Client } = await import('minio');
  const { parseEndPoint } = await import('@docshare/blob-store/minio');
  const client = new Client({
    ...parseEndPoint(process.env['MINIO_ENDPOINT'] ?? ''),
    accessKey: process.env['MINIO_ACCESS_KEY'] ?? '', secretKey: process.env['MINIO_SECRET_KEY'] ?? '',
  });
  const bucket = `docshare-${createHash('sha256').update(path.resolve(server.dataDir)).digest('hex').slice(0, 12)}`;
  const names: string[] = [];
  for await (const item of client.listObjectsV2(bucket, '', true)) {
    if (item.name) names.push(item.name);
  }
  const n = Buffer.from(needle);
  const hits: string[] = [];
  for (const name of names) {
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of await client.getObject(bucket, name)) chunks.push(chunk as Buffer);
    } catch {
      continue;
    }
    if (Buffer.concat(chunks).indexOf(n) !== -1) hits.push(`${bucket}/${name}`);
  }
  return hits;
}
