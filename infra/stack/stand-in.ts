/**
 * What answers on MONGO_URL, and whether it is the stand-in docshare tests on: MongoDB itself, or
 * FerretDB 2 on PostgreSQL with the DocumentDB extension version that FerretDB release expects.
 * FerretDB compares the extension's version string exactly, but a mismatch is only a line in
 * `getLog startupWarnings` (a tarball build reports "unknown" git fields, for one): this check
 * turns it into a failure before any suite runs (infra/with-stack.ts, the chaos suite, bench:stack).
 */
import { MongoClient } from 'mongodb';

/** The FerretDB and DocumentDB releases infra/local/lib/common.sh provisions. */
export const STAND_IN = { ferretdb: '2.5.0', documentdb: '0.106.0' } as const;

export interface LogLine { msg?: unknown; s?: unknown }

/** Startup lines FerretDB 2 always logs, which say nothing is wrong. */
const BENIGN = [/^Powered by FerretDB v\S+ and DocumentDB \S+ \(PostgreSQL [^)]*\)\.$/, /^Please star .* us on GitHub/];

/** FerretDB's version from `buildInfo` (2.x: `ferretdb.version`; 1.x: `ferretdbVersion`), or null for MongoDB. */
export const ferretdbVersion = (buildInfo: Record<string, unknown>): string | null => {
  const nested = buildInfo['ferretdb'];
  const version = typeof nested === 'object' && nested !== null ? (nested as Record<string, unknown>)['version'] : buildInfo['ferretdbVersion'];
  return typeof version === 'string' ? version : null;
};

/**
 * The problems with a server, given its `buildInfo` and `getLog startupWarnings` lines: empty for
 * MongoDB and for the expected stand-in. Pure, so that the rule is unit-tested.
 */
export const standInProblems = (buildInfo: Record<string, unknown>, startupWarnings: readonly LogLine[]): string[] => {
  const ferret = ferretdbVersion(buildInfo);
  if (ferret === null) return [];
  const problems: string[] = [];
  const version = ferret.replace(/^v/, '');
  if (version !== STAND_IN.ferretdb) problems.push(`FerretDB ${version} answers; docshare tests on FerretDB ${STAND_IN.ferretdb} (infra/local/provision.sh ferretdb)`);
  const messages = startupWarnings.map((line) => String(line.msg ?? ''));
  const powered = messages.find((m) => m.startsWith('Powered by FerretDB'));
  const documentdb = /and DocumentDB (\S+)/.exec(powered ?? '')?.[1];
  if (documentdb !== STAND_IN.documentdb) problems.push(`DocumentDB ${documentdb ?? '(not reported)'} behind FerretDB; expected ${STAND_IN.documentdb}`);
  for (const message of messages) {
    if (!BENIGN.some((re) => re.test(message))) problems.push(`FerretDB startup warning: ${message}`);
  }
  return problems;
};

/** Connects to `url`, describes the server, and throws when it is a stand-in with a problem. */
export const checkMongoServer = async (url: string): Promise<string> => {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 30_000 });
  try {
    const admin = client.db('admin');
    const info = await admin.command({ buildInfo: 1 });
    const ferret = ferretdbVersion(info) !== null;
    const log = ferret ? await admin.command({ getLog: 'startupWarnings' }) : { log: [] };
    const lines = (log['log'] as unknown[] ?? []).map((l): LogLine => (typeof l === 'string' ? JSON.parse(l) as LogLine : l as LogLine));
    const problems = standInProblems(info, lines);
    if (problems.length > 0) throw new Error(`the MongoDB stand-in is not the expected one:\n  ${problems.join('\n  ')}`);
    return ferret
      ? `FerretDB ${String(ferretdbVersion(info))} + DocumentDB ${STAND_IN.documentdb} standing in for MongoDB ${String(info['version'])}`
      : `MongoDB ${String(info['version'])}`;
  } finally {
    await client.close();
  }
};
