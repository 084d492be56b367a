import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFile, copyFile, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { testEvent, testEvents } from '@docshare/contracts/testing';
import { encodeRecord } from '@docshare/durable-log';
import { eventStoreContract } from '../src/contract.ts';
import { openFileEventLog } from '../src/file-log.ts';
import type { AppendFile, FileEventLog } from '../src/file-log.ts';

const tempDirs: string[] = [];
after(() => Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true }))));

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'docshare-event-log-'));
  tempDirs.push(dir);
  return dir;
}

const logFile = (dir: string): string => path.join(dir, 'events.log');

async function waitFor(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Asserts positions run 1..n without gaps and every stream's versions run 1..k with matching
 * subjects (unversioned events, streamversion 0, are in no stream).
 */
async function assertConsistent(log: FileEventLog): Promise<void> {
  const last = await log.lastPosition();
  const all = await log.readAll(0, Number.MAX_SAFE_INTEGER);
  assert.equal(all.length, last);
  const versions = new Map<string, number>();
  all.forEach((record, i) => {
    assert.equal(record.position, i + 1);
    if (record.event.streamversion === 0) return;
    const version = (versions.get(record.event.subject) ?? 0) + 1;
    assert.equal(record.event.streamversion, version, `${record.event.subject} at position ${record.position}`);
    versions.set(record.event.subject, version);
  });
  for (const [stream, version] of versions) assert.equal((await log.readStream(stream)).length, version);
}

eventStoreContract('file event log', async () => openFileEventLog(await tempDir()));

describe('file event log', () => {
  it('keeps every event and stream version across a reopen', async () => {
    const dir = await tempDir();
    const log = await openFileEventLog(dir);
    const a = testEvents('a', 1, 3);
    const b = testEvents('b', 1, 2);
    await Promise.all([log.append('a', 0, a.slice(0, 2)), log.append('b', 0, b)]);
    await log.append('a', 2, a.slice(2));
    const before = await log.readAll(0, 100);
    await log.close();

    const reopened = await openFileEventLog(dir);
    assert.deepEqual(await reopened.readAll(0, 100), before);
    assert.deepEqual((await reopened.readStream('a')).map((r) => r.event), a);
    assert.equal(await reopened.lastPosition(), 5);
    await assert.rejects(reopened.append('a', 2, testEvents('a', 3, 1)), { name: 'VersionConflict' });
    assert.deepEqual(await reopened.append('a', 3, testEvents('a', 4, 1)), { version: 4, position: 6 });
    await assertConsistent(reopened);
    await reopened.close();
  });

  it('keeps unversioned events across a reopen: in readAll at their positions, in no stream', async () => {
    const dir = await tempDir();
    const log = await openFileEventLog(dir);
    const a = testEvents('file-12', 1, 2);
    const views = [testEvent('file-12', 0, { view: 1 }), testEvent('file-12', 0, { view: 2 })];
    await log.append('file-12', 0, a.slice(0, 1));
    await log.appendUnversioned(views);
    await log.append('file-12', 1, a.slice(1));
    await log.appendUnversioned([testEvent('file-13', 0)]);
    const before = await log.readAll(0, 100);
    await log.close();

    const reopened = await openFileEventLog(dir);
    assert.deepEqual(await reopened.readAll(0, 100), before);
    assert.deepEqual(before.map((r) => r.event.streamversion), [1, 0, 0, 2, 0]);
    assert.equal(await reopened.lastPosition(), 5);
    assert.deepEqual((await reopened.readStream('file-12')).map((r) => r.event), a);
    assert.deepEqual(await reopened.readStream('file-13'), []);
    await assert.rejects(reopened.append('file-12', 1, testEvents('file-12', 2, 1)), { name: 'VersionConflict' });
    assert.deepEqual(await reopened.append('file-12', 2, testEvents('file-12', 3, 1)), { version: 3, position: 6 });
    assert.deepEqual(await reopened.append('file-13', 0, testEvents('file-13', 1, 1)), { version: 1, position: 7 });
    assert.deepEqual(await reopened.appendUnversioned([testEvent('file-13', 0)]), { position: 8 });
    await assertConsistent(reopened);
    await reopened.close();
  });

  it('group-commits concurrent unversioned appends: 1,000 calls, a few fsyncs', async () => {
    const dir = await tempDir();
    let syncs = 0;
    const log = await openFileEventLog(dir, {
      openAppendFile: async (file): Promise<AppendFile> => {
        const handle = await open(file, 'a');
        return {
          write: async (data: Uint8Array) => { await handle.write(data); },
          sync: async () => {
            syncs++;
            await handle.datasync();
          },
          close: () => handle.close(),
        };
      },
    });
    await log.append('file-1', 0, testEvents('file-1', 1, 1));
    syncs = 0;
    const results = await Promise.all([
      ...Array.from({ length: 1_000 }, () => log.appendUnversioned([testEvent('file-1', 0)])),
      log.append('file-1', 1, testEvents('file-1', 2, 1)),
    ]);
    assert.ok(syncs <= 10, `${syncs} fsyncs for 1,001 concurrent appends`);
    assert.deepEqual(results.map((r) => r.position).sort((x, y) => x - y), Array.from({ length: 1_001 }, (_, i) => i + 2));
    assert.equal((await log.readStream('file-1')).length, 2);
    await assertConsistent(log);
    await log.close();
  });

  it('truncates a torn unversioned last line with a warning, keeping what came before', async () => {
    const dir = await tempDir();
    const log = await openFileEventLog(dir);
    await log.append('file-1', 0, testEvents('file-1', 1, 1));
    await log.appendUnversioned([testEvent('file-1', 0)]);
    const before = await log.readAll(0, 100);
    await log.close();
    const intact = await readFile(logFile(dir));
    await appendFile(logFile(dir), '0badc0de {"type":"unversioned","position":3,"ev');

    const warnings: string[] = [];
    const reopened = await openFileEventLog(dir, { onWarning: (message) => warnings.push(message) });
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /torn/);
    assert.deepEqual(await readFile(logFile(dir)), intact);
    assert.deepEqual(await reopened.readAll(0, 100), before);
    assert.deepEqual(await reopened.appendUnversioned([testEvent('file-1', 0)]), { position: 3 });
    await reopened.close();
  });

  it('refuses to open a log whose intact unversioned record holds a versioned event', async () => {
    const dir = await tempDir();
    const log = await openFileEventLog(dir);
    await log.append('file-1', 0, testEvents('file-1', 1, 1));
    await log.close();
    const record = JSON.stringify({ type: 'unversioned', position: 2, events: [testEvent('file-1', 2)] });
    await appendFile(logFile(dir), Buffer.concat([encodeRecord(record), encodeRecord(JSON.stringify({ type: 'ids', kind: 'x', upTo: 1 }))]));
    await assert.rejects(openFileEventLog(dir), /unversioned event of file-1 has streamversion 2/);
  });

  it('numbers positions globally without gaps, also under many concurrent appends', async () => {
    const dir = await tempDir();
    const log = await openFileEventLog(dir);
    const results = await Promise.all(
      Array.from({ length: 300 }, (_, i) => log.append(`s-${i % 30}`, Math.floor(i / 30), [testEvent(`s-${i % 30}`, Math.floor(i / 30) + 1)])),
    );
    assert.deepEqual(results.map((r) => r.position).sort((x, y) => x - y), Array.from({ length: 300 }, (_, i) => i + 1));
    await assertConsistent(log);
    await log.close();
    const reopened = await openFileEventLog(dir);
    await assertConsistent(reopened);
    assert.equal(await reopened.lastPosition(), 300);
    await reopened.close();
  });

  it('truncates a torn last line with a warning and stays usable', async () => {
    const dir = await tempDir();
    const log = await openFileEventLog(dir);
    const events = testEvents('torn', 1, 3);
    await log.append('torn', 0, events);
    await log.close();
    const intact = await readFile(logFile(dir));
    await appendFile(logFile(dir), '0badc0de {"type":"append","position":4,"stream":"torn","ev');

    const warnings: string[] = [];
    const reopened = await openFileEventLog(dir, { onWarning: (message) => warnings.push(message) });
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /torn/);
    assert.deepEqual(await readFile(logFile(dir)), intact);
    assert.deepEqual((await reopened.readStream('torn')).map((r) => r.event), events);
    await reopened.append('torn', 3, testEvents('torn', 4, 1));
    await reopened.close();

    const again = await openFileEventLog(dir, { onWarning: (message) => warnings.push(message) });
    assert.equal(warnings.length, 1);
    assert.equal((await again.readStream('torn')).length, 4);
    await assertConsistent(again);
    await again.close();
  });

  it('reopens a log whose records are larger than one read, and recovers a torn tail after them', async () => {
    const dir = await tempDir();
    const log = await openFileEventLog(dir);
    // Over the 1 MiB the open reads per step, in one record of two events.
    const big = [testEvent('big', 1, { text: 'a'.repeat(900_000) }), testEvent('big', 2, { text: 'é'.repeat(400_000) })];
    await log.append('big', 0, big);
    const small = testEvents('small', 1, 3);
    for (const [i, event] of small.entries()) await log.append('small', i, [event]);
    await log.append('big', 2, [testEvent('big', 3, { text: 'z'.repeat(1_500_000) })]);
    await log.close();
    await appendFile(logFile(dir), '0badc0de {"type":"append","position":7,"stream":"small","ev');

    const warnings: string[] = [];
    const reopened = await openFileEventLog(dir, { onWarning: (message) => warnings.push(message) });
    assert.match(warnings.join(), /torn last line 6/);
    assert.equal(await reopened.lastPosition(), 6);
    assert.deepEqual((await reopened.readStream('big')).map((r) => r.event).slice(0, 2), big);
    assert.equal(((await reopened.readStream('big', 2))[0]?.event.data as { text: string }).text.length, 1_500_000);
    assert.deepEqual((await reopened.readStream('small')).map((r) => [r.position, r.event]), small.map((event, i) => [i + 3, event]));
    await assertConsistent(reopened);
    await reopened.close();
  });

  it('gives readers events they cannot alter, the same whether read back from the file or kept', async () => {
    const dir = await tempDir();
    const log = await openFileEventLog(dir);
    const events = [testEvent('frozen', 1, { nested: { list: [1, 2] } }), testEvent('frozen', 2)];
    await log.append('frozen', 0, events);
    const fresh = await log.readStream('frozen');
    assert.throws(() => { (fresh[0]!.event.data as { nested: { list: number[] } }).nested.list.push(3); }, TypeError);
    assert.throws(() => { (fresh[0]!.event as { type: string }).type = 'altered'; }, TypeError);
    await log.close();
    const reopened = await openFileEventLog(dir);
    const fromFile = await reopened.readAll(0, 10);
    assert.deepEqual(fromFile.map((r) => r.event), events);
    assert.deepEqual(fromFile, fresh);
    assert.throws(() => { (fromFile[1]!.event.data as { n: number }).n = 9; }, TypeError);
    assert.deepEqual((await reopened.readStream('frozen')).map((r) => r.event), events);
    await reopened.close();
  });

  it('refuses to serve a record whose bytes changed on disk after the open, and reads nothing once closed', async () => {
    const dir = await tempDir();
    const log = await openFileEventLog(dir);
    await log.append('flip', 0, testEvents('flip', 1, 2));
    // Records read or appended lately are kept decoded (2 MiB of them): push this one out.
    for (let v = 0; v < 3; v++) await log.append('filler', v, [testEvent('filler', v + 1, { text: 'f'.repeat(1_000_000) })]);
    const text = await readFile(logFile(dir), 'utf8');
    await writeFile(logFile(dir), text.replace('"n":2', '"n":3'));
    await assert.rejects(log.readStream('flip'), /changed under the process .*checksum mismatch/);
    await log.close();
    await assert.rejects(log.readAll(0, 10), /closed/);
  });

  it('truncates a complete last line whose checksum does not match', async () => {
    const dir = await tempDir();
    const log = await openFileEventLog(dir);
    await log.append('crc', 0, testEvents('crc', 1, 1));
    await log.append('crc', 1, testEvents('crc', 2, 1));
    await log.close();
    const lines = (await readFile(logFile(dir), 'utf8')).split('\n');
    lines[1] = lines[1]!.replace('"n":2', '"n":3');
    await writeFile(logFile(dir), lines.join('\n'));

    const warnings: string[] = [];
    const reopened = await openFileEventLog(dir, { onWarning: (message) => warnings.push(message) });
    assert.match(warnings.join(), /corrupt last line 2 \(checksum mismatch\)/);
    assert.equal(await reopened.lastPosition(), 1);
    await reopened.append('crc', 1, testEvents('crc', 2, 1));
    await reopened.close();
  });

  it('refuses to open a log that is corrupt before its last line, naming file and line', async () => {
    const dir = await tempDir();
    const log = await openFileEventLog(dir);
    for (let v = 0; v < 3; v++) await log.append('bad', v, testEvents('bad', v + 1, 1));
    await log.close();
    const lines = (await readFile(logFile(dir), 'utf8')).split('\n');
    lines[1] = lines[1]!.replace('"n":2', '"n":9');
    await writeFile(logFile(dir), lines.join('\n'));

    await assert.rejects(openFileEventLog(dir), (error: Error) => {
      assert.ok(error.message.includes(logFile(dir)), error.message);
      assert.match(error.message, /line 2\b/);
      return true;
    });
    // A failed open must not leave the log marked as open.
    await assert.rejects(openFileEventLog(dir), /corrupt/);
  });

  it('opens a log written before libs/durable-log (test fixture written by that version) and goes on appending to it', async () => {
    const dir = await tempDir();
    await copyFile(fileURLToPath(new URL('../../durable-log/test/fixtures/v0/events.v0-log', import.meta.url)), logFile(dir));
    const warnings: string[] = [];
    const log = await openFileEventLog(dir, { idBlockSize: 5, onWarning: (message) => warnings.push(message) });
    assert.deepEqual(warnings, []);
    assert.equal(await log.lastPosition(), 4);
    assert.deepEqual((await log.readStream('file-1')).map((r) => [r.position, r.event.id, r.event.data]), [
      [1, 'file-1-1', { name: 'a.txt' }], [2, 'file-1-2', { text: 'héllo ✓' }], [4, 'file-1-3', { n: 3 }],
    ]);
    assert.deepEqual((await log.readStream('user-1')).map((r) => [r.position, r.event.data]), [[3, { email: 'ann@example.com' }]]);
    // Ids 1-7 of `files` were handed out (a block of 5, then up to 10 reserved): the next is past the reservation.
    assert.equal(await log.nextId('files'), 11);
    await log.append('file-1', 3, testEvents('file-1', 4, 1));
    await log.close();
    const again = await openFileEventLog(dir);
    assert.equal((await again.readStream('file-1')).length, 4);
    await assertConsistent(again);
    await again.close();
  });

  it('never hands out an id twice across reopens', async () => {
    const dir = await tempDir();
    const seen = new Set<number>();
    for (let round = 0; round < 3; round++) {
      const log = await openFileEventLog(dir, { idBlockSize: 7 });
      const ids = await Promise.all(Array.from({ length: 10 }, () => log.nextId('files')));
      for (const id of ids) {
        assert.ok(!seen.has(id), `id ${id} handed out twice`);
        seen.add(id);
      }
      await log.close();
    }
    assert.equal(seen.size, 30);
  });

  it('calls onAppend listeners with the new last position once the append is durable', async () => {
    const dir = await tempDir();
    const log = await openFileEventLog(dir);
    const calls: number[] = [];
    const unsubscribe = log.onAppend((lastPosition) => calls.push(lastPosition));
    const pending = log.append('listen', 0, testEvents('listen', 1, 2));
    assert.deepEqual(calls, []);
    assert.equal(await log.lastPosition(), 0, 'an append is invisible until durable');
    await pending;
    assert.deepEqual(calls, [2]);
    unsubscribe();
    await log.append('listen', 2, testEvents('listen', 3, 1));
    assert.deepEqual(calls, [2]);
    await log.close();
  });

  it('close waits for in-flight appends; later appends and ids are refused', async () => {
    const dir = await tempDir();
    const log = await openFileEventLog(dir);
    const inFlight = log.append('closing', 0, testEvents('closing', 1, 1));
    await log.close();
    assert.deepEqual(await inFlight, { version: 1, position: 1 });
    await assert.rejects(log.append('closing', 1, testEvents('closing', 2, 1)), /closed/);
    await assert.rejects(log.nextId('files'), /closed/);
    const reopened = await openFileEventLog(dir);
    assert.equal(await reopened.lastPosition(), 1);
    await reopened.close();
  });

  it('refuses a second open of the same log within one process', async () => {
    const dir = await tempDir();
    const log = await openFileEventLog(dir);
    await assert.rejects(openFileEventLog(dir), /already open/);
    await log.close();
    await (await openFileEventLog(dir)).close();
  });

  it('rejects the affected and all later appends once a write fails', async () => {
    const dir = await tempDir();
    let failWrites = false;
    const log = await openFileEventLog(dir, {
      // A real file (the log reads its events back from it) whose writes fail on demand.
      openAppendFile: async (file): Promise<AppendFile> => {
        const handle = await open(file, 'a');
        return {
          write: async (data: Uint8Array) => {
            if (failWrites) throw new Error('ENOSPC: no space left on device');
            await handle.write(data);
          },
          sync: () => handle.datasync(),
          close: () => handle.close(),
        };
      },
    });
    await log.append('ok', 0, testEvents('ok', 1, 1));
    failWrites = true;
    const results = await Promise.allSettled([log.append('ok', 1, testEvents('ok', 2, 1)), log.nextId('files')]);
    for (const result of results) {
      assert.equal(result.status, 'rejected');
      assert.match(String((result).reason), /failed to write/);
    }
    failWrites = false;
    await assert.rejects(log.append('other', 0, testEvents('other', 1, 1)), /failed to write/);
    assert.equal(await log.lastPosition(), 1, 'nothing unwritten becomes visible');
    assert.equal((await log.readStream('ok')).length, 1);
    await log.close();
  });

  it('cuts back a write whose fsync failed, so a reopen does not revive an append reported as failed', async () => {
    const dir = await tempDir();
    let failSync = false;
    const log = await openFileEventLog(dir, {
      openAppendFile: async (file): Promise<AppendFile> => {
        const handle = await open(file, 'a');
        return {
          write: async (data: Uint8Array) => { await handle.write(data); },
          sync: async () => {
            if (failSync) throw new Error('EIO: i/o error');
            await handle.datasync();
          },
          close: () => handle.close(),
        };
      },
    });
    await log.append('kept', 0, testEvents('kept', 1, 1));
    failSync = true;
    await assert.rejects(log.append('lost', 0, testEvents('lost', 1, 1)), /failed to write/);
    await log.close();
    const reopened = await openFileEventLog(dir);
    assert.equal(await reopened.lastPosition(), 1);
    assert.deepEqual(await reopened.readStream('lost'), []);
    await reopened.close();
  });

  it('opens a log of 10,000 events of 500 streams', async () => {
    const dir = await tempDir();
    const log = await openFileEventLog(dir);
    const streams = 500;
    for (let version = 0; version < 10_000 / streams; version++) {
      await Promise.all(
        Array.from({ length: streams }, (_, s) => log.append(`file-${s}`, version, [testEvent(`file-${s}`, version + 1)])),
      );
    }
    await log.close();

    // No bound on the time it takes: the machine may be slow (bench the open separately if it matters).
    const reopened = await openFileEventLog(dir);
    assert.equal(await reopened.lastPosition(), 10_000);
    assert.deepEqual((await reopened.readStream('file-7')).map((r) => r.event.streamversion), Array.from({ length: 20 }, (_, i) => i + 1));
    await assertConsistent(reopened);
    await reopened.close();
  });

  it('loses no acknowledged event or id when the writer is SIGKILLed mid-stream', async () => {
    const dir = await tempDir();
    const script = fileURLToPath(new URL('./fixtures/crash-writer.ts', import.meta.url));
    const acks: { stream: string; version: number; position: number; id: string }[] = [];
    const ids: number[] = [];

    for (let round = 0; round < 2; round++) {
      const child = spawn(process.execPath, [script, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      let pending = '';
      let roundAcks = 0;
      let exited = false;
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.stdout.on('data', (chunk: Buffer) => {
        const lines = (pending + chunk.toString()).split('\n');
        pending = lines.pop()!;
        for (const line of lines) {
          const [kind, ...fields] = line.split(' ');
          if (kind === 'ack') {
            acks.push({ stream: fields[0]!, version: Number(fields[1]), position: Number(fields[2]), id: fields[3]! });
            roundAcks++;
          } else if (kind === 'id') {
            ids.push(Number(fields[0]));
          }
        }
      });
      const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
      child.on('exit', () => (exited = true));

      await waitFor(() => roundAcks >= 300 || exited, 20_000, 'the crash writer to acknowledge 300 appends');
      assert.ok(!exited, `crash writer exited early: ${stderr}`);
      child.kill('SIGKILL');
      await closed;
    }

    const log = await openFileEventLog(dir, { onWarning: () => {} });
    await assertConsistent(log);
    for (const ack of acks) {
      const stream = await log.readStream(ack.stream);
      const record = stream[ack.version - 1];
      assert.equal(record?.event.id, ack.id, `acknowledged ${ack.stream} v${ack.version} is missing`);
      assert.equal(record.position, ack.position);
    }
    assert.equal(new Set(ids).size, ids.length, 'an id was handed out twice across the crash');
    const fresh = await Promise.all(Array.from({ length: 50 }, () => log.nextId('crash')));
    for (const id of fresh) assert.ok(!ids.includes(id), `id ${id} handed out again after the crash`);
    await log.close();
  });
});
