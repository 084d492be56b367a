// `npm run migrate -- encrypt-personal-data` on an embedded DATA_DIR written by the previous
// version (v0.2.0: plain events through the raw file event store, account claims keyed by the
// plain e-mail): afterwards no personal value is left in clear in any file, the events open back
// to what they were, the account is found by the e-mail's blind index, and a second run changes
// nothing. Also: a failure mid-way leaves the old log as it was; --keep-backup keeps it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { verifyPassword } from '@docshare/auth';
import { openFileClaimStore } from '@docshare/claim-store';
import { openFileEventLog } from '@docshare/event-store';
import { openFileIdempotencyStore } from '@docshare/idempotency-store';
import { generateKekText, makePersonalData, openFileKeyStore, parseKek } from '@docshare/personal-data';
import { DATA_DIR_LAYOUT, migrateDataDir, sealDataDir } from '../migrate/embedded.ts';
import { backupOf } from '../migrate/rewrite-log.ts';
import { ACCOUNT_NAME_AAD } from '../migrate/sealer.ts';
import { writeV020Data, type V020Data } from '../migrate/v020-fixture.ts';
import { nextGeneration } from '../migrate/distributed.ts';
import { startServer } from '../../tests/support/server.ts';
import { api } from '../../tests/support/client.ts';

const run = promisify(execFile);
const CLI = join(import.meta.dirname, '..', 'migrate.ts');

const ROOT = '/tmp/migrate';
const PASSWORD = 'correct horse battery';
const DAY = 24 * 3_600_000;

const freshDir = async (): Promise<string> => {
  const dir = join(ROOT, `data-${process.pid}-${randomBytes(4).toString('hex')}`);
  await mkdir(dir, { recursive: true });
  return dir;
};

/** A DATA_DIR as v0.2.0 wrote it (migrate/v020-fixture.ts): plain events through the raw file event store, plain account claims. */
const writeV020DataDir = async (dir: string): Promise<V020Data> => {
  const log = await openFileEventLog(join(dir, DATA_DIR_LAYOUT.events));
  const claims = await openFileClaimStore(join(dir, DATA_DIR_LAYOUT.claims));
  let written: V020Data;
  try {
    written = await writeV020Data(log, claims, PASSWORD);
  } finally {
    await log.close();
    await claims.close();
  }
  // A stored answer naming the file, expired (dropped by the migration), and a live one without personal data (kept).
  const answers = await openFileIdempotencyStore(join(dir, DATA_DIR_LAYOUT.idempotency));
  try {
    const longAgo = Date.now() - 3 * DAY;
    const store = async (key: string, at: number, body: string): Promise<void> => {
      const begun = await answers.begin(key, at, 60_000);
      assert.equal(begun.state, 'started');
      await answers.complete(key, begun.token, { fingerprint: 'f', answer: { status: 201, headers: {}, body }, expiresAt: at + DAY });
    };
    await store(`${written.userId}/upload-1`, longAgo, JSON.stringify({ status: 'success', title: `Title ${written.marker}` }));
    await store(`${written.userId}/live-1`, Date.now(), JSON.stringify({ status: 'success', file_id: '7' }));
  } finally {
    await answers.close();
  }
  return written;
};

const filesUnder = async (dir: string): Promise<string[]> => {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(path)));
    else out.push(path);
  }
  return out.sort();
};

/** The files of `dir` holding `marker`, in any form a file could hold it in clear. */
const filesHolding = async (dir: string, marker: string): Promise<string[]> => {
  const holding: string[] = [];
  for (const file of await filesUnder(dir)) {
    if ((await readFile(file)).includes(marker)) holding.push(file);
  }
  return holding;
};

/** Every file's SHA-256, by path: what "changes nothing" is checked against. */
const snapshot = async (dir: string): Promise<Map<string, string>> => {
  const out = new Map<string, string>();
  for (const file of await filesUnder(dir)) out.set(file, createHash('sha256').update(await readFile(file)).digest('hex'));
  return out;
};

/** The personal-data module on the migrated DATA_DIR's keys (opened after the migration released them). */
const withPersonalData = async <T>(dir: string, kekText: string, use: (pd: ReturnType<typeof makePersonalData>) => Promise<T>): Promise<T> => {
  const store = await openFileKeyStore(join(dir, DATA_DIR_LAYOUT.keys));
  try {
    return await use(makePersonalData({ store, kek: parseKek(kekText) }));
  } finally {
    await store.close();
  }
};

describe('npm run migrate -- encrypt-personal-data (embedded)', () => {
  it('seals every personal field of a v0.2.0 data dir; the events open back; the account is found by its blind index; twice changes nothing', async () => {
    const dir = await freshDir();
    try {
      const written = await writeV020DataDir(dir);
      assert.ok((await filesHolding(dir, written.marker)).length >= 2, 'the plain data dir holds the marker (events and claims)');
      const kekText = generateKekText();

      const first = await migrateDataDir(dir, { kekText, keepBackup: false });
      assert.equal(first.events.replaced, true);
      assert.equal(first.events.changed, 4, 'the four records with personal fields');
      assert.equal(first.claims.changed, 2, 'the two account claim records');
      assert.equal(first.idempotency.changed, 1, 'the expired stored answer dropped');
      const answers = await openFileIdempotencyStore(join(dir, DATA_DIR_LAYOUT.idempotency));
      const live = await answers.begin(`${written.userId}/live-1`, Date.now(), 60_000);
      await answers.close();
      assert.equal(live.state, 'done', 'the live stored answer kept');
      assert.deepEqual(await filesHolding(dir, written.marker), [], 'no file under the data dir holds the marker');
      assert.deepEqual(await filesHolding(dir, 'bob@example.com'), []);

      // Same positions, ids, subjects, versions; every value opens back; ids go on after the reserved blocks.
      const log = await openFileEventLog(join(dir, DATA_DIR_LAYOUT.events));
      const sealed = await log.readAll(0, 1_000);
      const nextUser = await log.nextId('user');
      await log.close();
      assert.ok(nextUser > written.userId + 1, 'the id reservations are kept');
      assert.deepEqual(sealed.map((r) => [r.position, r.event.id, r.event.subject, r.event.streamversion]),
        written.events.map((r) => [r.position, r.event.id, r.event.subject, r.event.streamversion]));
      assert.ok(sealed.filter((r) => r.event.type !== 'docs.file.viewed.v2').every((r) => r.event.personaldata === 'v1'));
      await withPersonalData(dir, kekText, async (pd) => {
        const opened = await pd.open(sealed.map((r) => ({ position: r.position, event: structuredClone(r.event) })));
        assert.deepEqual(opened, written.events);

        // Login's lookup: the claim under the e-mail's blind index, the password checks, the name opens.
        const claims = await openFileClaimStore(join(dir, DATA_DIR_LAYOUT.claims));
        try {
          assert.equal(await claims.get('account', written.email), null, 'the plain e-mail key is gone');
          const account = await claims.get<{ userId: number; name: string; passwordHash: string; sealed?: true }>('account', await pd.emailIndex(written.email));
          assert.ok(account);
          assert.equal(account.userId, written.userId);
          assert.equal(account.sealed, true, 'marked sealed: login opens the name');
          assert.ok(await verifyPassword(PASSWORD, account.passwordHash));
          assert.equal(await pd.openValue(written.userId, account.name, ACCOUNT_NAME_AAD), `Ann ${written.marker}`);
        } finally {
          await claims.close();
        }
      });

      const before = await snapshot(dir);
      const second = await migrateDataDir(dir, { kekText, keepBackup: false });
      assert.equal(second.events.replaced, false);
      assert.equal(second.claims.replaced, false);
      assert.equal(second.idempotency.replaced, false);
      assert.deepEqual(await snapshot(dir), before, 'a second run changes no file');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('generates the KEK into DATA_DIR/secrets/data-kek when none is given, and uses it the next time', async () => {
    const dir = await freshDir();
    try {
      const written = await writeV020DataDir(dir);
      await migrateDataDir(dir, { keepBackup: false });
      const kekText = (await readFile(join(dir, DATA_DIR_LAYOUT.kek), 'utf8')).trim();
      await withPersonalData(dir, kekText, async (pd) => {
        const log = await openFileEventLog(join(dir, DATA_DIR_LAYOUT.events));
        const opened = await pd.open(await log.readAll(0, 1_000));
        await log.close();
        assert.deepEqual(opened, written.events);
      });
      assert.equal((await migrateDataDir(dir, { keepBackup: false })).events.replaced, false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('keeps the plain log as a backup only with --keep-backup', async () => {
    const dir = await freshDir();
    try {
      const written = await writeV020DataDir(dir);
      const done = await migrateDataDir(dir, { kekText: generateKekText(), keepBackup: true });
      const logFile = join(dir, DATA_DIR_LAYOUT.events, 'events.log');
      assert.equal(done.events.backup, backupOf(logFile));
      assert.deepEqual(await filesHolding(dir, written.marker), [
        backupOf(join(dir, DATA_DIR_LAYOUT.claims, 'claims.log')), backupOf(logFile), backupOf(join(dir, DATA_DIR_LAYOUT.idempotency, 'idempotency.log')),
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('leaves the old log as it was when the rewrite fails mid-way, and a later run completes', async () => {
    const dir = await freshDir();
    try {
      const written = await writeV020DataDir(dir);
      const before = await snapshot(dir);
      const kekText = generateKekText();
      await withPersonalData(dir, kekText, async (pd) => {
        let calls = 0;
        const failing = {
          ...pd,
          // Dies on the second claim record, after the events were sealed: the claims stay as they were.
          emailIndex: async (email: string) => (++calls > 1 ? Promise.reject(new Error('crash')) : pd.emailIndex(email)),
        };
        await assert.rejects(sealDataDir(dir, failing, false), /crash/);
      });
      const after = await snapshot(dir);
      const claimsLog = join(dir, DATA_DIR_LAYOUT.claims, 'claims.log');
      assert.equal(after.get(claimsLog), before.get(claimsLog), 'claims.log untouched');
      assert.ok(![...after.keys()].some((file) => file.includes('.migrating')), 'nothing left of the failed rewrite');
      assert.deepEqual(await filesHolding(dir, written.marker), [claimsLog, join(dir, DATA_DIR_LAYOUT.idempotency, 'idempotency.log')]);
      const again = await migrateDataDir(dir, { kekText, keepBackup: false });
      assert.equal(again.events.replaced, false, 'the events were sealed by the first run');
      assert.equal(again.claims.changed, 2);
      assert.deepEqual(await filesHolding(dir, written.marker), []);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses a data dir in use by a running process', async () => {
    const dir = await freshDir();
    const holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      await writeV020DataDir(dir);
      await writeFile(join(dir, DATA_DIR_LAYOUT.lock), `${holder.pid}\n`);
      await assert.rejects(migrateDataDir(dir, { kekText: generateKekText(), keepBackup: false }), /in use by process/);
      assert.equal((await stat(join(dir, DATA_DIR_LAYOUT.events, 'events.log.migrating')).catch(() => null)), null);
    } finally {
      holder.kill();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('runs from the command line: --data-dir, the KEK from DATA_KEK, a report of what it did', async () => {
    const dir = await freshDir();
    try {
      const written = await writeV020DataDir(dir);
      const kekText = generateKekText();
      const env = { ...process.env, DATA_KEK: kekText, MONGO_URL: '' };
      const first = await run(process.execPath, [CLI, 'encrypt-personal-data', '--data-dir', dir], { env });
      assert.match(first.stdout, /events\.log: 4 of 7 records rewritten/);
      assert.match(first.stdout, /claims\.log: 2 of 2 records rewritten/);
      assert.deepEqual(await filesHolding(dir, written.marker), []);
      await assert.rejects(readFile(join(dir, DATA_DIR_LAYOUT.kek)), /ENOENT/, 'DATA_KEK given: none generated');
      const second = await run(process.execPath, [CLI, 'encrypt-personal-data', '--data-dir', dir], { env });
      assert.match(second.stdout, /events\.log: 7 records, already sealed, unchanged/);
      await assert.rejects(run(process.execPath, [CLI, 'encrypt-everything'], { env }), (error: { code?: number; stderr?: string }) =>
        error.code === 2 && /usage: npm run migrate/.test(error.stderr ?? ''));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('npm start on a migrated data dir', () => {
  it('logs the user in through the re-keyed claim and answers with the opened values; new ids follow the reserved ones', { timeout: 120_000 }, async () => {
    const dir = await freshDir();
    const kekText = generateKekText();
    try {
      const written = await writeV020DataDir(dir);
      await migrateDataDir(dir, { kekText, keepBackup: false });
      const server = await startServer({ DATA_DIR: dir, DATA_KEK: kekText });
      try {
        const c = api(server);
        const login = await c.login(written.email, PASSWORD);
        assert.equal(login.status, 200, login.text);
        const { user_id: userId, token } = login.body as { user_id: number; token: string };
        assert.equal(userId, written.userId);
        const files = await c.files(token);
        assert.equal(files.status, 200, files.text);
        assert.ok(files.text.includes(`New ${written.marker}`), `the title opened: ${files.text}`);
        const newcomer = await c.register();
        assert.ok(newcomer.userId > written.userId + 1, 'a new user id comes after the reserved block');
      } finally {
        await server.stop();
      }
      assert.deepEqual(await filesHolding(dir, written.marker), [], 'nothing the server wrote holds the marker either');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the Kafka topic generation a distributed migration copies into', () => {
  it('is the next free .g<N> of the topic without its generation', () => {
    assert.equal(nextGeneration('docshare.events', ['docshare.events', 'docshare.events.dlq']), 'docshare.events.g1');
    assert.equal(nextGeneration('docshare.events', ['docshare.events', 'docshare.events.g1', 'docshare.events.g3']), 'docshare.events.g4');
    assert.equal(nextGeneration('docshare.events.g4', ['docshare.events.g4', 'other.g9']), 'docshare.events.g5');
  });
});
