// README.md's fenced blocks, as the tests that run them read them: a snippet edited in the README is
// the snippet tested, never a copy typed into a test.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const REPO_ROOT = join(import.meta.dirname, '..', '..');
export const README = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');

/** The fenced block of `lang` that follows `marker` in `text`. */
export const blockAfter = (text: string, marker: string, lang: string): string => {
  const at = text.indexOf(marker);
  assert.ok(at >= 0, `README.md has no "${marker}"`);
  const fence = text.indexOf('```' + lang + '\n', at);
  assert.ok(fence >= 0, `README.md has no ${lang} block after "${marker}"`);
  const start = fence + lang.length + 4;
  return text.slice(start, text.indexOf('\n```', start) + 1);
};

/**
 * The commands of every `sh` block, one per logical line: continuation lines joined, comments and
 * the aligned comment lines after a command dropped.
 */
export const shCommands = (text: string): string[] => {
  const commands: string[] = [];
  for (const block of text.matchAll(/```sh\n([\s\S]*?)\n```/g)) {
    let pending = '';
    for (const line of (block[1] as string).split('\n')) {
      const code = line.replace(/\s+#\s.*$/, '').trimEnd();
      if (!pending && (code.trim() === '' || code.trimStart().startsWith('#'))) continue;
      pending += (pending ? ' ' : '') + code.replace(/\\$/, '').trim();
      if (!code.endsWith('\\')) {
        commands.push(pending);
        pending = '';
      }
    }
  }
  return commands;
};

/** The command a README line gives after `npm ci && ` (the tests run from the installed tree). */
export const afterInstall = (line: string): string => line.replace(/\s+#\s.*$/, '').trim().replace(/^npm ci && /, '');

/** Runs a README command as a user types it: bash at the repository root; its output, both streams. */
export const typed = (command: string, env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; out: string }> =>
  new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', command], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { out += chunk.toString(); });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, out }));
  });
