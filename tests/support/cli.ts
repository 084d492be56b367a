// The npm bin `docshare` run as a user runs it: in a working directory of its own, with a HOME and
// config directory of its own (so the saved token is the test's), against one server.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from './server.ts';

export const CLI_BIN = path.join(REPO_ROOT, 'libs', 'cli', 'bin', 'docshare.js');

export interface CliRun { code: number; stdout: string; stderr: string }

export interface CliSandbox {
  /** The home directory (its `config/docshare/config.json` holds the saved servers and tokens). */
  home: string;
  /** The working directory, holding `files`. */
  work: string;
  env: NodeJS.ProcessEnv;
  /** Runs docshare with `args` (no terminal: pipes); `more` is merged over the environment; `input` goes to stdin. */
  run(args: string[], more?: NodeJS.ProcessEnv, input?: string): Promise<CliRun>;
  remove(): Promise<void>;
}

/** A sandbox for the CLI against `baseUrl`, its working directory holding `files` (name → bytes). */
export const cliSandbox = async (prefix: string, baseUrl: string, files: Record<string, Buffer> = {}): Promise<CliSandbox> => {
  const home = await mkdtemp(path.join(os.tmpdir(), prefix));
  const work = path.join(home, 'work');
  await mkdir(work);
  for (const [name, bytes] of Object.entries(files)) await writeFile(path.join(work, name), bytes);
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, 'config'), DOCSHARE_URL: baseUrl };
  for (const k of ['DOCSHARE_TOKEN', 'DOCSHARE_PASSWORD', 'NODE_TEST_CONTEXT']) delete env[k];
  return {
    home, work, env,
    run: (args, more = {}, input) => new Promise((resolve) => {
      const child = execFile(process.execPath, [CLI_BIN, ...args], { cwd: work, env: { ...env, ...more }, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
      });
      if (input !== undefined) child.stdin?.end(input);
      else child.stdin?.end();
    }),
    remove: () => rm(home, { recursive: true, force: true }),
  };
};

/** `r`, asserted to have exited 0 (its output in the message when not). */
export const cliOk = (r: CliRun, what: string): CliRun => {
  assert.equal(r.code, 0, `${what}: exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return r;
};
