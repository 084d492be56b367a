import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const CHILD = join(import.meta.dirname, 'fixtures', 'last-resort-child.ts');

interface Run {
  /** Resolves with the port once the child listens. */
  ready: Promise<number>;
  /** Resolves with the exit code and the JSON log lines. */
  exited: Promise<{ code: number | null; signal: string | null; logs: Record<string, unknown>[] }>;
}

const run = (mode: string): Run => {
  const child = spawn(process.execPath, [CHILD, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
  const ready = new Promise<number>((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /ready (\d+)/.exec(stderr);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', () => reject(new Error(`child exited before it was ready: ${stderr}`)));
  });
  ready.catch(() => undefined);
  const exited = new Promise<{ code: number | null; signal: string | null; logs: Record<string, unknown>[] }>((resolve) => {
    child.once('exit', (code, signal) => {
      const logs = stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
      resolve({ code, signal, logs });
    });
  });
  return { ready, exited };
};

const messages = (logs: Record<string, unknown>[]): unknown[] => logs.map((l) => l.msg);

describe('last resort', () => {
  it('an uncaught exception is logged as fatal with context, in-flight requests finish, and the process exits 1', async () => {
    const child = run('throw-in-request');
    const port = await child.ready;
    const slow = fetch(`http://127.0.0.1:${port}/slow`).then((res) => res.text());
    // The slow request is in the server before the failure is triggered.
    await fetch(`http://127.0.0.1:${port}/`).then((res) => res.text());
    assert.equal(await fetch(`http://127.0.0.1:${port}/boom`).then((res) => res.text()), 'boom scheduled');
    assert.equal(await slow, 'slow done');
    const { code, logs } = await child.exited;
    assert.equal(code, 1);
    const fatal = logs.find((l) => l.level === 60);
    assert.ok(fatal, `a fatal line in ${JSON.stringify(logs)}`);
    assert.equal(fatal.origin, 'uncaughtException');
    assert.equal(fatal.phase, 'running');
    assert.equal(fatal.mode, 'throw-in-request');
    assert.equal(fatal.service, 'last-resort-child');
    assert.match(String((fatal.err as { message?: string }).message), /thrown from a timer/);
    assert.ok((fatal.err as { stack?: string }).stack, 'the stack is logged');
    // The same steps as SIGTERM, in order.
    const order = messages(logs);
    const at = (msg: string): number => order.indexOf(msg);
    const shown = `log order: ${JSON.stringify(order)}`;
    assert.ok(at('step: close server') > order.indexOf(fatal.msg), shown);
    assert.ok(at('step: close clients') > at('step: close server'), shown);
    assert.ok(at('stopped') > at('step: close clients'), shown);
  });

  it('an unhandled rejection goes the same way', async () => {
    const child = run('reject');
    const port = await child.ready;
    await fetch(`http://127.0.0.1:${port}/boom`).then((res) => res.text());
    const { code, logs } = await child.exited;
    assert.equal(code, 1);
    const fatal = logs.find((l) => l.level === 60);
    assert.equal(fatal?.origin, 'unhandledRejection');
    assert.match(String((fatal?.err as { message?: string }).message), /nobody listens/);
    assert.ok(messages(logs).includes('stopped'));
  });

  it('an error before the graceful exit is installed exits 1 at once, logged as starting', async () => {
    const { code, logs } = await run('throw-at-start').exited;
    assert.equal(code, 1);
    const fatal = logs.find((l) => l.level === 60);
    assert.equal(fatal?.phase, 'starting');
    assert.match(String((fatal?.err as { message?: string }).message), /bad configuration/);
  });

  it('a shutdown step that never ends is cut off by the grace bound, still exit 1', async () => {
    const child = run('hang');
    const port = await child.ready;
    await fetch(`http://127.0.0.1:${port}/boom`).then((res) => res.text());
    const { code, logs } = await child.exited;
    assert.equal(code, 1);
    assert.ok(messages(logs).includes('graceful exit after an uncaught error took too long; exiting'));
    assert.ok(!messages(logs).includes('stopped'));
  });
});
