/**
 * CPU time and memory of a process and everything it started, from /proc. A server is its whole
 * process tree, not its process group: PostgreSQL's backends each call setsid() (a group and a
 * session of their own), so the `ferretdb` server (bash ferretdb-run.sh → postgres → one backend
 * per connection, and ferretdb) is only found by parent pid. Extraction children of the text
 * extractor are found the same way.
 *
 * CPU counts the process's own time and its reaped children's (cutime + cstime): a backend or an
 * extraction child that exited between two snapshots moved its time into its parent's, so a
 * difference of two snapshots still holds it. A zombie keeps its own time until it is reaped.
 */
import { readFile, readdir } from 'node:fs/promises';

export interface ProcEntry {
  pid: number;
  ppid: number;
  state: string;
  /** utime + stime + cutime + cstime, in seconds */
  cpuSeconds: number;
}

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on Linux). */
const TICKS = 100;

/** One /proc/<pid>/stat line; null when it does not parse. */
export const parseStat = (pid: number, stat: string): ProcEntry | null => {
  const close = stat.lastIndexOf(')');
  if (close < 0) return null;
  // fields[0] is field 3 (state); ppid is field 4, utime 14, stime 15, cutime 16, cstime 17
  const fields = stat.slice(close + 2).split(' ');
  const ppid = Number(fields[1]);
  const ticks = [11, 12, 13, 14].map((i) => Number(fields[i]));
  if (!Number.isInteger(ppid) || ticks.some((t) => !Number.isFinite(t))) return null;
  return { pid, ppid, state: fields[0] ?? '?', cpuSeconds: ticks.reduce((a, b) => a + b, 0) / TICKS };
};

/** Every process of the machine, now. */
export const readProcTable = async (): Promise<Map<number, ProcEntry>> => {
  const out = new Map<number, ProcEntry>();
  await Promise.all((await readdir('/proc')).filter((name) => /^\d+$/.test(name)).map(async (name) => {
    const pid = Number(name);
    const entry = parseStat(pid, await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => ''));
    if (entry) out.set(pid, entry);
  }));
  return out;
};

/** `root` and its descendants in `table` (by parent pid); [] when `root` is not there. */
export const treeOf = (table: ReadonlyMap<number, ProcEntry>, root: number): ProcEntry[] => {
  const rootEntry = table.get(root);
  if (!rootEntry) return [];
  const children = new Map<number, ProcEntry[]>();
  for (const entry of table.values()) {
    const list = children.get(entry.ppid);
    if (list) list.push(entry);
    else children.set(entry.ppid, [entry]);
  }
  const out: ProcEntry[] = [];
  const queue = [rootEntry];
  const seen = new Set<number>();
  while (queue.length > 0) {
    const entry = queue.shift()!;
    if (seen.has(entry.pid)) continue;
    seen.add(entry.pid);
    out.push(entry);
    queue.push(...(children.get(entry.pid) ?? []));
  }
  return out;
};

/** CPU seconds of `root`'s tree (its own, its descendants', and their reaped children's); NaN when `root` is gone. */
export const treeCpuSeconds = (table: ReadonlyMap<number, ProcEntry>, root: number): number => {
  const tree = treeOf(table, root);
  return tree.length === 0 ? NaN : tree.reduce((sum, e) => sum + e.cpuSeconds, 0);
};

/**
 * Memory of `root`'s live tree in MiB: the sum of each process's PSS (/proc/<pid>/smaps_rollup),
 * which shares PostgreSQL's shared buffers among its backends instead of counting them once per
 * backend as RSS would; RSS where PSS is not readable. NaN when `root` is gone.
 */
export const treeMemoryMiB = async (table: ReadonlyMap<number, ProcEntry>, root: number): Promise<number> => {
  const tree = treeOf(table, root).filter((e) => e.state !== 'Z');
  if (tree.length === 0) return NaN;
  const kib = await Promise.all(tree.map(async ({ pid }) => {
    const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
    const pss = /^Pss:\s+(\d+) kB/m.exec(rollup);
    if (pss) return Number(pss[1]);
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  }));
  return kib.reduce((a, b) => a + b, 0) / 1024;
};
