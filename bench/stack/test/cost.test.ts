/**
 * bench:stack's sizing arithmetic: process trees (a PostgreSQL backend calls setsid(), so a
 * server is its process tree, not its process group), the store-command counter's scrape, and
 * CPU-s per 1,000 operations net of idle.
 *   npm exec -- node --test --test-reporter=spec bench/stack/test/cost.test.ts
 */
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { groupMembers } from '../../../infra/chaos/servers.ts';
import { parseStat, readProcTable, treeCpuSeconds, treeOf } from '../../../infra/stack/procs.ts';
import { parseStoreCommands, storeCommandsUsed } from '../metrics.ts';
import { commandsPerOp, cpuPerThousand, renderCpuTable, type PhaseCost, type SpanCost } from '../cost.ts';

test('a process tree holds a descendant that left its parent\'s process group (setsid, as a PostgreSQL backend does)', async () => {
  // The grandchild prints its own pid from inside its new session (after setsid), then becomes
  // `sleep`: read earlier (`$!`), it could still be in the parent's group on a slow machine.
  const child = spawn('bash', ['-c', "setsid bash -c 'echo $$; exec sleep 60' & wait"], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
  let grandchild = 0;
  try {
    const line = await new Promise<string>((resolve, reject) => {
      child.stdout.once('data', (c: Buffer) => resolve(c.toString().trim()));
      child.once('error', reject);
    });
    grandchild = Number(line);
    assert.ok(Number.isSafeInteger(grandchild) && grandchild > 1, line);
    const table = await readProcTable();
    assert.ok(treeOf(table, child.pid!).some((e) => e.pid === grandchild), 'the setsid grandchild is in the tree');
    // what the bench summed before: the group misses it
    assert.ok(!(await groupMembers(child.pid!)).includes(grandchild));
    assert.ok(Number.isFinite(treeCpuSeconds(table, child.pid!)));
    assert.ok(Number.isNaN(treeCpuSeconds(table, 2 ** 22 + 12345)), 'no such process: NaN');
  } finally {
    // the group does not hold the grandchild: each by its pid
    if (grandchild > 1) try { process.kill(grandchild, 'SIGKILL'); } catch { /* gone */ }
    try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ }
  }
});

test('CPU of a process counts its reaped children (cutime + cstime)', () => {
  // pid (comm with ) and spaces) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime ...
  const stat = '4242 (post gres) x) S 100 4242 4242 0 -1 4194560 10 0 0 0 150 50 700 100 20 0 1 0 123 0 0';
  const entry = parseStat(4242, stat);
  assert.deepEqual(entry, { pid: 4242, ppid: 100, state: 'S', cpuSeconds: 10 });
  assert.equal(parseStat(1, 'garbage'), null);
});

test('the store-command counter: summed over its series, per command; absent → null', () => {
  const text = [
    '# HELP docshare_store_commands_total Commands sent to MongoDB',
    '# TYPE docshare_store_commands_total counter',
    'docshare_store_commands_total{command="insert",collection="events"} 12',
    'docshare_store_commands_total{command="find",collection="outbox_checkpoints"} 30',
    'docshare_store_commands_total{collection="x",command="insert"} 3',
    'docshare_store_commands_total_other{command="insert"} 1000',
    'docshare_http_requests_total{route="/x"} 5',
  ].join('\n');
  assert.deepEqual(parseStoreCommands(text), { total: 45, byCommand: { insert: 15, find: 30 } });
  assert.equal(parseStoreCommands('docshare_http_requests_total 5\n'), null);
  const used = storeCommandsUsed(
    { a: { total: 10, byCommand: { find: 10 } }, b: null, c: { total: 50, byCommand: {} } },
    { a: { total: 25, byCommand: { find: 12, insert: 13 } }, b: { total: 1, byCommand: {} }, c: { total: 5, byCommand: {} } },
  );
  assert.deepEqual(used, { a: { total: 15, byCommand: { find: 2, insert: 13 } }, b: null, c: null });
});

test('CPU-s per 1,000 ops and store commands per op take the idle rate over the same span off', () => {
  const idle: SpanCost = {
    seconds: 10,
    cpu: { 'docs-command': 0.5, ferretdb: 1, gateway: 0 },
    commands: { 'docs-command': { total: 100, byCommand: { find: 100 } }, gateway: null },
  };
  const phase: PhaseCost = {
    operation: 'upload', ok: 500, errors: 0, rate: 25, seconds: 20,
    cpu: { 'docs-command': 6, ferretdb: 7, gateway: 2 },
    commands: { 'docs-command': { total: 3200, byCommand: { find: 700, insert: 2500 } }, gateway: null },
  };
  const cpu = cpuPerThousand(phase, idle);
  assert.equal(cpu['docs-command'], ((6 - 1) / 500) * 1000); // 10
  assert.equal(cpu.ferretdb, ((7 - 2) / 500) * 1000); // 10
  assert.equal(cpu.gateway, 4);
  assert.ok(Number.isNaN(cpu.kafka!), 'not measured: NaN');
  assert.equal(cpu.all, 24);
  const per = commandsPerOp(phase, idle);
  assert.equal(per['docs-command'], (3200 - 200) / 500); // 6
  assert.equal(per.gateway, null);
  const table = renderCpuTable([phase], idle);
  assert.match(table, /\| upload +\| 500 \(25\.0\/s\) +\| 4\.00 +\| 10\.0 /);
  assert.match(table, /ferretdb\(\+postgres\)/);
});
