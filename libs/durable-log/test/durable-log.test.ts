import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFile, mkdtemp, open, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { decodeRecord, encodeRecord, openDurableLog, type AppendFile, type DurableLogOptions, type ScannedRecord } from '../src/index.ts';

const root = await mkdtemp(path.join(os.tmpdir(), 'docshare-durable-log-'));
after(() => rm(root, { recursive: true, force: true }));
let files = 0;
const freshFile = (): string => path.join(root, `dir-${++files}`, 'test.log');

/** Opens `file`, collecting the payloads found at open. */
async function openCollecting(file: string, options: Partial<DurableLogOptions> = {}) {
  const found: unknown[] = [];
  const warnings: string[] = [];
  const log = await openDurableLog(file, ({ payload }) => found.push(payload), {
    name: 'test log', onWarning: (message) => warnings.push(message), ...options,
  });
  return { log, found, warnings };
}

const lines = async (file: string): Promise<string[]> => (await readFile(file, 'utf8')).split('\n').filter((line) => line !== '');

/** A real file whose writes or syncs fail while `failing.write` / `failing.sync` is set; counts writes. */
function failingFile() {
  const state = { write: false, sync: false, writes: 0 };
  const openAppendFile = async (file: string): Promise<AppendFile> => {
    const handle = await open(file, 'a');
    return {
      write: async (data) => {
        state.writes++;
        if (state.write) {
          await handle.write(data.subarray(0, 5)); // a partial write, as a full disk leaves
          throw new Error('ENOSPC: no space left on device');
        }
        await handle.write(data);
      },
      sync: async () => {
        if (state.sync) throw new Error('EIO: i/o error');
        await handle.datasync();
      },
      close: () => handle.close(),
    };
  };
  return { state, openAppendFile };
}

describe('durable log', () => {
  it('frames each record as `<crc32 hex8> <json>` on its own line and decodes it back', () => {
    const line = encodeRecord('{"a":"é"}');
    assert.equal(line.toString('utf8'), `${line.toString('latin1', 0, 8)} {"a":"é"}\n`);
    assert.deepEqual(decodeRecord(line, 0, line.length - 1), { ok: true, payload: { a: 'é' } });
    const flipped = Buffer.from(line);
    flipped[12] = 0x62;
    assert.deepEqual(decodeRecord(flipped, 0, flipped.length - 1), { ok: false, reason: 'checksum mismatch' });
    assert.deepEqual(decodeRecord(Buffer.from('xyz'), 0, 3), { ok: false, reason: 'bad framing' });
  });

  it('opens one read handle for concurrent first reads, and closes every handle it opened', async () => {
    const openFds = async (): Promise<number> => (await readdir('/proc/self/fd')).length;
    const before = await openFds();
    const file = freshFile();
    const { log } = await openCollecting(file);
    const places = await Promise.all(Array.from({ length: 5 }, (_, i) => log.append(JSON.stringify({ i }))));
    const read = await Promise.all(Array.from({ length: 20 }, (_, i) => log.readRange(places[i % 5]!.offset, places[i % 5]!.length)));
    assert.deepEqual(read.map((bytes) => decodeRecord(bytes, 0, bytes.length - 1)), Array.from({ length: 20 }, (_, i) => ({ ok: true, payload: { i: i % 5 } })));
    await log.close();
    // A handle left to the garbage collector would still be open here.
    assert.equal(await openFds(), before);
  });

  it('keeps every acknowledged record across a reopen, in order, and says where each one is', async () => {
    const file = freshFile();
    const { log, found } = await openCollecting(file);
    assert.deepEqual(found, []);
    const places = await Promise.all(Array.from({ length: 20 }, (_, i) => log.append(JSON.stringify({ i }))));
    await log.append('"last"');
    assert.deepEqual(log.size(), { records: 21, bytes: (await stat(file)).size });
    const bytes = await log.readRange(places[3]!.offset, places[3]!.length);
    assert.deepEqual(decodeRecord(bytes, 0, bytes.length - 1), { ok: true, payload: { i: 3 } });
    await log.close();

    const again = await openCollecting(file);
    assert.deepEqual(again.found, [...Array.from({ length: 20 }, (_, i) => ({ i })), 'last']);
    assert.deepEqual(again.warnings, []);
    assert.equal(again.log.size().records, 21);
    await again.log.close();
  });

  it('group-commits the appends made while a write is in flight, running onDurable before any resolves and afterCommit once a batch', async () => {
    const { state, openAppendFile } = failingFile();
    const events: string[] = [];
    const file = freshFile();
    const log = await openDurableLog(file, () => {}, { name: 'test log', openAppendFile, afterCommit: () => events.push('commit') });
    await Promise.all(Array.from({ length: 50 }, (_, i) => log.append(String(i), () => events.push(`durable ${i}`)).then(() => events.push(`resolved ${i}`))));
    assert.equal(state.writes, 1);
    assert.equal((await lines(file)).length, 50);
    assert.deepEqual(events.slice(0, 51), [...Array.from({ length: 50 }, (_, i) => `durable ${i}`), 'commit']);
    await log.close();
  });

  it('cuts off a torn last line (no newline) with a warning, and appends after the good data', async () => {
    const file = freshFile();
    const { log } = await openCollecting(file);
    await log.append('1');
    await log.close();
    const good = await readFile(file);
    await appendFile(file, '0badc0de {"torn":');
    const again = await openCollecting(file);
    assert.deepEqual(again.found, [1]);
    assert.match(again.warnings.join(), /truncating torn last line 2/);
    assert.deepEqual(await readFile(file), good);
    await again.log.append('2');
    await again.log.close();
    assert.deepEqual((await openCollecting(file)).found, [1, 2]);
  });

  it('cuts off a whole last line whose checksum fails, but refuses to open when a line before the last is bad', async () => {
    const file = freshFile();
    const { log } = await openCollecting(file);
    for (const n of [1, 2, 3]) await log.append(JSON.stringify({ n }));
    await log.close();
    const text = await readFile(file, 'utf8');

    await writeFile(file, text.replace('{"n":3}', '{"n":4}'));
    const cut = await openCollecting(file);
    assert.deepEqual(cut.found, [{ n: 1 }, { n: 2 }]);
    assert.match(cut.warnings.join(), /corrupt last line 3 \(checksum mismatch\)/);
    await cut.log.close();

    const damaged = text.replace('{"n":2}', '{"n":5}');
    await writeFile(file, damaged);
    await assert.rejects(openCollecting(file), (error: Error) => {
      assert.match(error.message, /test log .*test\.log is corrupt at line 2 \(checksum mismatch\); refusing to open it/);
      return true;
    });
    assert.equal(await readFile(file, 'utf8'), damaged, 'a refused open repairs nothing');
    await assert.rejects(openCollecting(file), /corrupt at line 2/, 'and leaves the file free to open again');
  });

  it('refuses to open when its owner refuses a record, naming the line', async () => {
    const file = freshFile();
    const { log } = await openCollecting(file);
    await log.append('{"ok":true}');
    await log.append('{"ok":false}');
    await log.close();
    const refuse = ({ payload, where }: ScannedRecord): void => {
      if (JSON.stringify(payload) === '{"ok":false}') throw new Error(`${where}: not wanted`);
    };
    await assert.rejects(openDurableLog(file, refuse, { name: 'test log' }), /test\.log, line 2: not wanted/);
    await (await openDurableLog(file, () => {}, { name: 'test log' })).close();
  });

  it('opens a file once per process', async () => {
    const file = freshFile();
    const { log } = await openCollecting(file);
    await assert.rejects(openCollecting(file), /already open in this process/);
    await log.close();
    await (await openCollecting(file)).log.close();
  });

  it('is refused while another live process has the file open, and taken over once that process is killed', async () => {
    const file = freshFile();
    const script = fileURLToPath(new URL('./fixtures/hold-open.ts', import.meta.url));
    const child = spawn(process.execPath, [script, file], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const opened = await new Promise<boolean>((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('open')) resolve(true);
      });
      child.on('exit', () => resolve(false));
    });
    assert.ok(opened, `the holder did not open the log: ${stderr}`);
    await assert.rejects(openCollecting(file), new RegExp(`already open in process ${child.pid}`));
    const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
    child.kill('SIGKILL');
    await exited;
    assert.equal(await readFile(`${file}.lock`, 'utf8'), `${child.pid}\n`, 'a killed holder leaves its lock behind');
    const { log } = await openCollecting(file);
    assert.equal(await readFile(`${file}.lock`, 'utf8'), `${process.pid}\n`);
    await log.close();
    await assert.rejects(stat(`${file}.lock`), /ENOENT/, 'close releases the lock');
  });

  it('closes after the appends in flight, then refuses appends and reads', async () => {
    const file = freshFile();
    const { log } = await openCollecting(file);
    const inFlight = log.append('"in flight"');
    await log.close();
    assert.equal((await inFlight).offset, 0);
    await assert.rejects(log.append('"late"'), /closed/);
    await assert.rejects(log.readRange(0, 1), /closed/);
    assert.throws(() => log.assertWritable(), /closed/);
    assert.deepEqual((await openCollecting(file)).found, ['in flight']);
  });

  it('stops after a failed write: the batch and every later append are refused, and nothing of it survives a reopen', async () => {
    const { state, openAppendFile } = failingFile();
    const file = freshFile();
    const { log } = await openCollecting(file, { openAppendFile });
    await log.append('1');
    state.write = true;
    const failed = await Promise.allSettled([log.append('2'), log.append('3')]);
    for (const result of failed) assert.match(String(result.status === 'rejected' && result.reason), /failed to write \(Error: ENOSPC/);
    state.write = false;
    await assert.rejects(log.append('4'), /accepts no more writes until reopened/);
    assert.throws(() => log.assertWritable(), /accepts no more writes/);
    await log.close();
    assert.deepEqual((await openCollecting(file)).found, [1]);
  });

  it('with keepWritingAfterFailure, refuses only the failed batch (cut back) and goes on', async () => {
    const { state, openAppendFile } = failingFile();
    const file = freshFile();
    const { log } = await openCollecting(file, { openAppendFile, keepWritingAfterFailure: true });
    await log.append('1');
    state.sync = true;
    await assert.rejects(log.append('2'), /failed to write \(Error: EIO/);
    state.sync = false;
    await log.append('3');
    await log.close();
    const again = await openCollecting(file);
    assert.deepEqual(again.found, [1, 3]);
    assert.deepEqual(again.warnings, []);
    await again.log.close();
  });

  it('compacts to the live records by an atomic rewrite; appends made meanwhile land in the new file', async () => {
    const file = freshFile();
    const { log } = await openCollecting(file);
    for (let i = 0; i < 10; i++) await log.append(JSON.stringify({ i }));
    const live = new Set([2, 5]);
    const appending = Promise.all([log.append('{"i":10}', () => live.add(10)), log.append('{"i":11}', () => live.add(11))]);
    let during: Promise<unknown> = Promise.resolve();
    const compacting = log.compact(() => {
      // Called once no write is in flight (10 and 11 are durable): an append made now waits for the new file.
      assert.deepEqual([...live], [2, 5, 10, 11]);
      during = log.append('{"i":12}');
      return [...live].map((i) => JSON.stringify({ i }));
    });
    await Promise.all([appending, compacting]);
    await during;
    await log.append('{"i":13}');
    assert.deepEqual((await lines(file)).map((line) => JSON.parse(line.slice(9))), [{ i: 2 }, { i: 5 }, { i: 10 }, { i: 11 }, { i: 12 }, { i: 13 }]);
    assert.deepEqual(log.size(), { records: 6, bytes: (await stat(file)).size });
    const place = await log.append('{"i":14}');
    const bytes = await log.readRange(place.offset, place.length);
    assert.deepEqual(decodeRecord(bytes, 0, bytes.length - 1), { ok: true, payload: { i: 14 } });
    await log.close();
    assert.deepEqual(await readdir(path.dirname(file)), ['test.log'], 'no temporary file left behind');
    assert.equal((await openCollecting(file)).found.length, 7);
  });

  it('loses no acknowledged record and returns nothing torn when the writer is SIGKILLed mid-append', async () => {
    const file = freshFile();
    const script = fileURLToPath(new URL('./fixtures/crash-appender.ts', import.meta.url));
    const acked = new Set<number>();
    for (let round = 0; round < 3; round++) {
      const child = spawn(process.execPath, [script, file], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      let pending = '';
      let roundAcks = 0;
      const target = 300;
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const enough = new Promise<boolean>((resolve) => {
        child.stdout.on('data', (chunk: Buffer) => {
          const got = (pending + chunk.toString()).split('\n');
          pending = got.pop()!;
          for (const line of got) {
            if (!line.startsWith('ack ')) continue;
            acked.add(Number(line.slice(4)));
            if (++roundAcks === target) resolve(true);
          }
        });
        child.on('exit', () => resolve(false));
      });
      const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
      assert.ok(await enough, `crash appender exited early: ${stderr}`);
      child.kill('SIGKILL');
      await closed;
    }
    const found: number[] = [];
    const log = await openDurableLog(file, ({ payload }) => {
      assert.ok(typeof payload === 'object' && payload !== null && 'n' in payload && 'pad' in payload, `a torn record was returned: ${JSON.stringify(payload)}`);
      found.push(Number(payload.n));
    }, { name: 'crash test log', onWarning: () => {} });
    const present = new Set(found);
    assert.equal(present.size, found.length, 'a record returned twice');
    for (const n of acked) assert.ok(present.has(n), `acknowledged record ${n} is missing`);
    await log.close();
  });
});
