/**
 * Every outside program a test or a test harness starts is installed by the project's own
 * provisioning, in the tier that uses it: never by a tier that happened to run before, nor by hand.
 *
 * A fresh machine once failed `test:containers` with `spawn redis-server ENOENT`: only `test:real`,
 * later in `npm test`, installed redis-server, and every developer machine had kept it from an
 * earlier run. This check reads the source instead of the machine, so it fails on a warm machine
 * too: each program started by name (spawn/exec/execFile and their Sync forms, or an absolute
 * /usr/bin path such as a browser's executablePath) must be either part of the machine (PROGRAMS
 * says which Debian package of the base image has it) or have a provisioner, and every file that
 * starts it must either run that provisioner itself (or through a project module it imports) or be
 * run only by npm scripts that run it first.
 */
import assert from 'node:assert/strict';
import { globSync, readFileSync } from 'node:fs';
import { dirname, join, matchesGlob, relative } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = join(import.meta.dirname, '..', '..');

/**
 * What installs each program. `machine`: the base image of these machines has it (the package is
 * named for the record); `provisioner`: text that, found in a file or in the npm script that runs
 * it before the tests, shows the provisioning runs (a script path, or the option that makes
 * infra/with-stack.ts start infra/local, whose start.sh provisions what it starts).
 */
const PROGRAMS: Record<string, { machine: string } | { provisioner: RegExp; by: string }> = {
  bash: { machine: 'bash' },
  sh: { machine: 'dash' },
  script: { machine: 'bsdutils' },
  curl: { machine: 'curl' },
  npm: { machine: 'npm (beside the machine\'s Node.js; the project brings its own Node 24)' },
  npx: { machine: 'npm' },
  'redis-server': { provisioner: /provision\.sh|start\.sh|--provider=local/, by: 'infra/local/provision.sh redis' },
  podman: { provisioner: /images\.sh|engine\.sh/, by: 'infra/containers/engine.sh (from images.sh)' },
  'docker-compose': { provisioner: /images\.sh|engine\.sh/, by: 'infra/containers/engine.sh (from images.sh)' },
  chromium: { provisioner: /infra\/browser\/install\.sh/, by: 'infra/browser/install.sh' },
};

const SPAWN = /\b(?:spawn|spawnSync|execFile|execFileSync|execSync|exec)\(\s*['"`]([^'"`\s]+)/g;
const ABSOLUTE = /['"`]\/usr\/s?bin\/([\w.+-]+)['"`]/g;

/** The programs a source file starts by name. Exported for the test of the check itself. */
export const programsStartedBy = (source: string): string[] => {
  const found = new Set<string>();
  for (const pattern of [SPAWN, ABSOLUTE]) {
    for (const match of source.matchAll(pattern)) found.add((match[1] as string).split('/').pop() as string);
  }
  return [...found].sort();
};

const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

/** The files an npm script runs directly: its quoted globs and its .ts paths. */
const patternsOf = (command: string): string[] => [
  ...[...command.matchAll(/'([^']+)'/g)].map((m) => m[1] as string),
  ...[...command.matchAll(/(?:^|\s)([\w./-]+\.ts)(?=\s|$)/g)].map((m) => m[1] as string),
];

/** Does script `name` run the provisioner before its tests: itself, or every script that calls it before the call? */
const scriptProvides = (name: string, provisioner: RegExp, seen = new Set<string>()): boolean => {
  const own = scripts[name] ?? '';
  if (provisioner.test(own)) return true;
  if (seen.has(name)) return false;
  seen.add(name);
  const callers = Object.entries(scripts).filter(([, command]) => new RegExp(`npm run ${name.replace(/[:.]/g, '\\$&')}(?!\\S)`).test(command));
  if (callers.length === 0) return false;
  return callers.every(([caller, command]) => {
    const before = command.slice(0, command.indexOf(`npm run ${name}`));
    // A tier run earlier in the same chain (`npm test`'s `&&` list) does not count: its provisioning
    // is that tier's, and the check exists because relying on it failed on a fresh machine.
    return (provisioner.test(before) && !/&&/.test(before.slice(before.search(provisioner)))) || scriptProvides(caller, provisioner, seen);
  });
};

/** A file's own text and that of the project modules it imports, transitively (where a harness provisions). */
const withImports = (file: string, seen = new Set<string>()): string => {
  if (seen.has(file)) return '';
  seen.add(file);
  const source = readFileSync(join(ROOT, file), 'utf8');
  const imported = [...source.matchAll(/from\s+['"](\.\.?\/[^'"]+\.ts)['"]/g)]
    .map((m) => relative(ROOT, join(ROOT, dirname(file), m[1] as string)));
  return [source, ...imported.map((dep) => withImports(dep, seen))].join('\n');
};

const sources = globSync(['libs/*/{src,test,scripts}/**/*.ts', 'services/*/{src,test}/**/*.ts', 'tests/**/*.ts', 'infra/**/*.ts', 'bench/**/*.ts'], { cwd: ROOT })
  .filter((file) => !file.includes('node_modules') && !file.endsWith('infra/test/provisioning.test.ts'));

describe('every program the tests start is provisioned by the tier that starts it', () => {
  it('finds programs started by name or by absolute path', () => {
    assert.deepEqual(programsStartedBy(`spawn('redis-server', []); execFileSync("curl", x); const C = '/usr/bin/chromium'; spawn(process.execPath)`),
      ['chromium', 'curl', 'redis-server']);
  });

  it('knows who installs every program the sources start', () => {
    const unknown = sources.flatMap((file) => programsStartedBy(readFileSync(join(ROOT, file), 'utf8'))
      .filter((program) => !(program in PROGRAMS)).map((program) => `${file}: ${program}`));
    assert.deepEqual(unknown, [], 'add each program to PROGRAMS with the script that installs it (or the base package that has it)');
  });

  it('runs the provisioner in every tier that starts a program the machine does not have', () => {
    const missing: string[] = [];
    for (const file of sources) {
      const source = readFileSync(join(ROOT, file), 'utf8');
      for (const program of programsStartedBy(source)) {
        const entry = PROGRAMS[program];
        if (!entry || 'machine' in entry || entry.provisioner.test(withImports(file))) continue;
        const runners = Object.keys(scripts).filter((name) => patternsOf(scripts[name] as string).some((pattern) => matchesGlob(file, pattern)));
        // A file no script runs (a bench, a helper module) must provision for itself.
        if (runners.length === 0) missing.push(`${file}: ${program} (no npm script runs it; it must run ${entry.by} itself)`);
        for (const runner of runners) {
          if (!scriptProvides(runner, entry.provisioner)) missing.push(`${file}: ${program} in npm run ${runner} (needs ${entry.by} first)`);
        }
      }
    }
    assert.deepEqual(missing, []);
  });

  it('catches the fresh-machine failure it was written for', () => {
    // The rate limiter's outage test before it provisioned redis-server: test:containers starts it
    // after nothing but testcontainers, so the check must name it.
    assert.equal(scriptProvides('test:containers', /provision\.sh|start\.sh|--provider=local/), false);
    assert.equal(scriptProvides('test:real:suites', /provision\.sh|start\.sh|--provider=local/), true);
    assert.equal(scriptProvides('test:browser', /infra\/browser\/install\.sh/), true);
  });
});
