import { randomBytes } from 'node:crypto';
import { link, mkdir, open, readFile, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fsyncDir } from '@docshare/durable-log';

/**
 * The secret kept at `path`, made on first start (256 random bits, file mode 0600) so a restart
 * keeps issued tokens valid and no secret ever lives in the repository. The file appears whole or
 * not at all (written and fsynced under a temporary name, then hard-linked into place), so a crash
 * mid-write cannot leave an empty secret that stops every later start.
 */
export const loadOrCreateSecret = async (path: string): Promise<string> => {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const dir = dirname(path);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const secret = randomBytes(32).toString('base64url');
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    const handle = await open(temporary, 'wx', 0o600);
    await handle.writeFile(`${secret}\n`);
    await handle.sync();
    await handle.close();
    // link() fails if the secret exists: a concurrent first start won, and its secret is used.
    await link(temporary, path);
    await fsyncDir(dir);
    return secret;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return (await readFile(path, 'utf8')).trim();
    throw error;
  } finally {
    await rm(temporary, { force: true });
  }
};
