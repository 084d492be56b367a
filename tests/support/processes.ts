// What a test of a whole command (npm start, npm run stack) needs to see about processes and
// ports once it signalled that command: Linux's /proc, no other tool.
import { readdir, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';

/** Every live process whose ancestry leads to `root` (Linux's /proc), `root` excluded. */
export const descendants = async (root: number): Promise<number[]> => {
  const parents = new Map<number, number>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (Number.isSafeInteger(ppid)) parents.set(Number(entry), ppid);
  }
  const found: number[] = [];
  const walk = (pid: number): void => {
    for (const [child, parent] of parents) {
      if (parent === pid) {
        found.push(child);
        walk(child);
      }
    }
  };
  walk(root);
  return found;
};

/** A process that runs (an exited one its parent has not reaped yet, a zombie, does not). */
export const running = async (pid: number): Promise<boolean> => {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
};

/** True once nothing listens on the port any more (a listen of our own succeeds). */
export const portFree = (port: number, host = '127.0.0.1'): Promise<boolean> => new Promise((resolve) => {
  const probe = createServer();
  probe.once('error', () => resolve(false));
  probe.listen(port, host, () => probe.close(() => resolve(true)));
});

/** True when the server at `baseUrl` answers /healthz with 200 (false on any failure, within 2 s). */
export const healthy = async (baseUrl: string): Promise<boolean> => {
  try {
    const res = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(2_000) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
};
