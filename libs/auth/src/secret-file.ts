import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * The secret kept at `path`, made on first start (256 random bits, file mode 0600) so a restart
 * keeps issued tokens valid and no secret ever lives in the repository.
 */
export const loadOrCreateSecret = async (path: string): Promise<string> => {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const secret = randomBytes(32).toString('base64url');
  try {
    const handle = await open(path, 'wx', 0o600);
    await handle.writeFile(`${secret}\n`);
    await handle.sync();
    await handle.close();
    return secret;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return (await readFile(path, 'utf8')).trim();
    throw error;
  }
};
