import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The default spool directory of a docs-command process: keyed by its port, not its pid, so a
 * restarted instance (same port) finds the directory of the one that died and `prepareSpool`
 * empties it. Per pid, a kill -9 mid-upload left the partial spool file on disk for good. Two
 * processes never share one: they cannot listen on the same port.
 */
export const defaultSpoolDir = (port: number, base = tmpdir()): string => join(base, `docshare-spool-${port}`);
