import { open, readFile, rm } from 'node:fs/promises';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Makes this process the only one using a data dir: two writers on one event log would corrupt it.
 * A lock left by a process that died (kill -9) is taken over. Returns the release function.
 */
export const lockDataDir = async (path: string): Promise<() => Promise<void>> => {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await open(path, 'wx', 0o600);
      await handle.writeFile(String(process.pid));
      await handle.close();
      return () => rm(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number((await readFile(path, 'utf8').catch(() => '')).trim());
      if (Number.isSafeInteger(holder) && holder > 0 && holder !== process.pid && alive(holder)) {
        throw new Error(`data dir is in use by process ${holder} (${path}); stop it or use another DATA_DIR`);
      }
      await rm(path, { force: true });
    }
  }
  throw new Error(`could not lock ${path}`);
};
