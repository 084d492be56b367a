/**
 * npm run migrate -- encrypt-personal-data [--data-dir DIR] [--keep-backup] [--delete-topic TOPIC]
 *
 * Seals the personal data of events written before issue 24 under per-person keys (docs/ops.md,
 * "Migrating existing data"). With the services stopped:
 *
 * - embedded (MONGO_URL unset): DATA_DIR (or --data-dir)'s event log is rewritten with every event
 *   sealed, the account claims re-keyed by the e-mail blind index and the expired stored answers
 *   dropped (migrate/embedded.ts); the old files are removed unless --keep-backup. KEK: DATA_KEK /
 *   DATA_KEK_FILE, else DATA_DIR/secrets/data-kek (made if missing, as `npm start` makes it). The
 *   read models rebuild at the next start.
 * - distributed (MONGO_URL set): the MongoDB event store's documents and the claims are rewritten
 *   the same way, then every event is copied into a new Kafka topic generation
 *   `<KAFKA_EVENTS_TOPIC>.g<N>` (migrate/distributed.ts); it prints what to do next. Once every
 *   service reads the new topic, `--delete-topic <old>` deletes the old one.
 *
 * Idempotent: events already sealed are left as they are, so a second run changes nothing.
 *
 * npm run migrate -- rotate-kek [--data-dir DIR]: KEK rotation (docs/ops.md): with the new KEK first
 * in DATA_KEK and the old ones after it, rewraps every data key under the new one (MongoDB's
 * `data_keys` when MONGO_URL is set, while the services run; else DATA_DIR/keys, with `npm start`
 * stopped). Data keys and events do not change.
 */
import { dataDir, loadConfigOrExit, optionalPersonalData } from '@docshare/runtime/config';
import { migrateDataDir } from './migrate/embedded.ts';
import type { RewriteLogResult } from './migrate/rewrite-log.ts';

const USAGE = 'usage: npm run migrate -- encrypt-personal-data [--data-dir DIR] [--keep-backup] [--delete-topic TOPIC]\n'
  + '       npm run migrate -- rotate-kek [--data-dir DIR]';

interface Args { command: string; dataDir?: string; keepBackup: boolean; deleteTopic?: string }

const parseArgs = (argv: readonly string[]): Args | null => {
  const [command, ...rest] = argv;
  if (command !== 'encrypt-personal-data' && command !== 'rotate-kek') return null;
  const args: Args = { command, keepBackup: false };
  for (let i = 0; i < rest.length; i++) {
    const flag = rest[i];
    if (flag === '--keep-backup') args.keepBackup = true;
    else if (flag === '--data-dir' && rest[i + 1] !== undefined) args.dataDir = rest[++i];
    else if (flag === '--delete-topic' && rest[i + 1] !== undefined && command === 'encrypt-personal-data') args.deleteTopic = rest[++i];
    else return null;
  }
  return args;
};

const describe = (what: string, result: RewriteLogResult): string => {
  if (result.records === 0) return `${what}: none`;
  if (!result.replaced) return `${what}: ${result.records} records, already sealed, unchanged`;
  return `${what}: ${result.changed} of ${result.records} records rewritten${result.backup ? `; the plain file kept at ${result.backup}` : ''}`;
};

const args = parseArgs(process.argv.slice(2));
if (args === null) {
  console.error(USAGE);
  process.exit(2);
}

if (args.command === 'rotate-kek') {
  // KEK rotation's second half: the new KEK is DATA_KEK's first line, the old ones follow it.
  const { rotateKek } = await import('./migrate/rotate-kek.ts');
  const env = args.dataDir === undefined ? process.env : { ...process.env, DATA_DIR: args.dataDir };
  const report = await rotateKek(env);
  console.log(`${report.keys} data keys: ${report.rewrapped} rewrapped under the current KEK, ${report.destroyed} destroyed, ${report.raced} changed meanwhile (run again)`);
  console.log('once a run rewraps none and reports none changed meanwhile, the old KEK lines may leave DATA_KEK');
} else if (process.env['MONGO_URL']) {
  const { migrateDistributed } = await import('./migrate/distributed.ts');
  await migrateDistributed(process.env, { deleteTopic: args.deleteTopic, log: (line) => console.log(line) });
} else {
  if (args.deleteTopic !== undefined) {
    console.error('--delete-topic is for the distributed mode (MONGO_URL set)');
    process.exit(2);
  }
  const env = args.dataDir === undefined ? process.env : { ...process.env, DATA_DIR: args.dataDir };
  const config = loadConfigOrExit(env, { dataDir: dataDir(), personalData: optionalPersonalData() });
  const began = performance.now();
  const done = await migrateDataDir(config.dataDir, { kekText: config.personalData.kek, keepBackup: args.keepBackup });
  console.log(describe('events.log', done.events));
  console.log(describe('claims.log', done.claims));
  if (done.idempotency.changed > 0) console.log(`idempotency.log: ${done.idempotency.changed} expired stored answers dropped`);
  console.log(`done in ${((performance.now() - began) / 1000).toFixed(1)} s; the read models are rebuilt from the sealed log at the next \`npm start\``);
}
