// @docshare/client and @docshare/cli as someone outside this repository gets them: both built and
// packed by the README's own command (read from README.md and run as written), installed with the
// README's install command (its `<version>` filled in) from the two tarballs into an empty directory
// under the system's temporary directory (no node_modules or package.json above it), then used from
// there against a started server: `npx docshare`, and a plain .mjs script importing the SDK.
//
// The commands run with the machine's own `node` and `npm` (this repository's node_modules/.bin
// taken off PATH), no NODE_OPTIONS (so no `--conditions=@docshare/source`, which makes this
// repository run the TypeScript sources) and no npm_* variables of the npm that started the test:
// what an outside user has. The SDK script also runs on this project's Node 24.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { randomWord } from '../support/client.ts';
import { useServer } from '../support/fixture.ts';
import { REPO_ROOT } from '../support/server.ts';

const PACKAGES = [
  { name: '@docshare/client', dir: path.join(REPO_ROOT, 'libs', 'client') },
  { name: '@docshare/cli', dir: path.join(REPO_ROOT, 'libs', 'cli') },
] as const;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** The environment of a user outside the repository: the machine's PATH, no NODE_OPTIONS, no npm_* of ours. */
const outsideEnv = (more: NodeJS.ProcessEnv): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^npm_/i.test(k) || k === 'NODE_OPTIONS' || k === 'NODE_TEST_CONTEXT' || k === 'INIT_CWD' || /^DOCSHARE_/.test(k)) continue;
    env[k] = v;
  }
  env['PATH'] = (process.env['PATH'] ?? '').split(path.delimiter)
    .filter((dir) => dir !== '' && !path.resolve(dir).startsWith(REPO_ROOT + path.sep) && !dir.includes(`${path.sep}node-gyp-bin`))
    .join(path.delimiter);
  return { ...env, ...more };
};

const run = (file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Run> => new Promise((resolve) => {
  const child = execFile(file, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
    const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
    resolve({ code, stdout, stderr });
  });
  child.stdin?.end();
});

const ok = (r: Run, what: string): Run => {
  assert.equal(r.code, 0, `${what}: exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return r;
};

interface PackResult {
  name: string;
  version: string;
  filename: string;
  files: { path: string }[];
}

/** The README's commands for the SDK and the CLI elsewhere ("make their tarballs here with `…`"). */
const readmeCommand = async (pattern: RegExp): Promise<string> => {
  const readme = await readFile(path.join(REPO_ROOT, 'README.md'), 'utf8');
  const found = pattern.exec(readme.replace(/\s*\n\s*/g, ' '))?.[1];
  assert.ok(found !== undefined, `README.md shows the command ${String(pattern)}`);
  return found;
};
const PACK_COMMAND = /make their tarballs here with `([^`]+)`/;
const INSTALL_COMMAND = /install both in your project: `([^`]+)`/;

describe('the SDK and the CLI installed outside the repository from their npm tarballs', { timeout: 900_000 }, () => {
  const fx = useServer();
  let tmp = '';
  let packs = '';
  let project = '';
  let env: NodeJS.ProcessEnv = {};
  let packed: PackResult[] = [];
  const email = `${randomWord(12)}@example.com`;
  const password = 'correct horse battery';
  const content = randomBytes(256 * 1024 + 7);

  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'docshare-packages-'));
    packs = path.join(tmp, 'packs');
    project = path.join(tmp, 'project');
    await mkdir(packs);
    await mkdir(project);
    env = outsideEnv({ XDG_CONFIG_HOME: path.join(tmp, 'config') });
  });
  after(async () => {
    if (tmp !== '') await rm(tmp, { recursive: true, force: true });
  });

  it('the README\'s command builds both packages and packs them: JavaScript and .d.ts, README, LICENSE; no TypeScript sources, no tests', async () => {
    const command = await readmeCommand(PACK_COMMAND);
    // As written; it leaves the tarballs where it says (the README's --pack-destination).
    const destination = /--pack-destination (\S+)/.exec(command)?.[1] ?? '.';
    const before = new Date();
    ok(await run('bash', ['-c', command], REPO_ROOT, env), command);
    packed = [];
    for (const p of PACKAGES) {
      const manifest = JSON.parse(await readFile(path.join(p.dir, 'package.json'), 'utf8')) as { version: string };
      const filename = `${p.name.slice(1).replace('/', '-')}-${manifest.version}.tgz`;
      const tarball = path.join(destination, filename);
      assert.ok((await stat(tarball)).mtime >= new Date(before.getTime() - 1000), `${tarball} made by this run`);
      await copyFile(tarball, path.join(packs, filename));
      const listing = ok(await run('tar', ['-tzf', tarball], tmp, env), 'tar -t').stdout.split('\n').filter((f) => f !== '');
      packed.push({ name: p.name, version: manifest.version, filename, files: listing.map((f) => ({ path: f.replace(/^package\//, '') })) });
    }
    const license = await readFile(path.join(REPO_ROOT, 'LICENSE'), 'utf8');
    for (const p of packed) {
      const files = p.files.map((f) => f.path).sort();
      const sources = files.filter((f) => /\.(c|m)?ts$/.test(f) && !/\.d\.(c|m)?ts$/.test(f));
      assert.deepEqual(sources, [], `${p.name}: TypeScript sources in the tarball`);
      assert.deepEqual(files.filter((f) => /(^|\/)(test|tests|scripts)\//.test(f) || /\.test\./.test(f)), [], `${p.name}: tests in the tarball`);
      for (const f of ['package.json', 'README.md', 'LICENSE', 'dist/index.js', 'dist/index.d.ts']) {
        if (p.name === '@docshare/cli' && f.startsWith('dist/index')) continue;
        assert.ok(files.includes(f), `${p.name}: ${f} in the tarball (${files.join(', ')})`);
      }
      // The packed manifest as npm publishes it.
      const unpacked = path.join(tmp, 'unpacked', p.name);
      await mkdir(unpacked, { recursive: true });
      ok(await run('tar', ['-xzf', path.join(packs, p.filename), '-C', unpacked], tmp, env), 'tar');
      const manifest = JSON.parse(await readFile(path.join(unpacked, 'package', 'package.json'), 'utf8')) as Record<string, unknown>;
      assert.equal(manifest['private'], undefined, `${p.name} is publishable`);
      assert.deepEqual(manifest['publishConfig'], { access: 'public' });
      assert.equal(await readFile(path.join(unpacked, 'package', 'LICENSE'), 'utf8'), license, `${p.name}: the repository's LICENSE`);
      if (p.name === '@docshare/cli') {
        const client = packed.find((c) => c.name === '@docshare/client');
        const deps = manifest['dependencies'] as Record<string, string>;
        assert.equal(deps['@docshare/client'], `^${client?.version}`, 'the CLI depends on the SDK of its release');
        assert.ok(files.includes('bin/docshare.js') && files.includes('dist/main.js'), files.join(', '));
      }
    }
  });

  it('installs both tarballs into an empty directory outside the repository', async () => {
    assert.equal(packed.length, 2, 'packed');
    for (let dir = path.dirname(project); ; dir = path.dirname(dir)) {
      assert.ok(!existsSync(path.join(dir, 'node_modules')) && !existsSync(path.join(dir, 'package.json')), `nothing to resolve from above: ${dir}`);
      if (path.dirname(dir) === dir) break;
    }
    assert.deepEqual(await readdir(project), []);
    // The README's install command, its <version> filled in, its tarballs as packed above.
    const install = (await readmeCommand(INSTALL_COMMAND)).replaceAll('<version>', packed[0]?.version ?? '');
    assert.match(install, /^npm i \S+\.tgz \S+\.tgz$/);
    ok(await run('bash', ['-c', `${install} --no-audit --no-fund`], project, env), install);
    const installed = JSON.parse(await readFile(path.join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    assert.deepEqual(Object.keys(installed.dependencies).sort(), ['@docshare/cli', '@docshare/client']);
  });

  it('its type declarations type a TypeScript user of the SDK (tsc, nodenext resolution, no conditions)', async () => {
    await writeFile(path.join(project, 'check.mts'), [
      "import { createClient, DocshareApiError, type DocshareClient, type UploadInput } from '@docshare/client';",
      "const client: DocshareClient = createClient({ baseUrl: 'http://localhost:8080' });",
      "const input: UploadInput = { file: 'a.txt', title: 't', description: 'd', tags: ['x'], cc_license: 'CC BY', new_category_name: 'c' };",
      'const { file_id } = await client.upload(input);',
      'const title: string = (await client.files()).files[0]?.title ?? String(file_id);',
      'console.log(title, DocshareApiError.name);',
      '// @ts-expect-error: the client is typed, not any',
      'await client.noSuchOperation();',
      '',
    ].join('\n'));
    const tsc = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const r = await run(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'es2023', '--module', 'nodenext', '--moduleResolution', 'nodenext',
      '--typeRoots', path.join(REPO_ROOT, 'node_modules', '@types'), '--types', 'node', 'check.mts'], project, env);
    ok(r, 'tsc check.mts');
  });

  it('npx docshare --help and --version work there', async () => {
    const help = ok(await run('npx', ['docshare', '--help'], project, env), 'npx docshare --help');
    assert.match(help.stdout, /^Usage: docshare <command>/m);
    const version = ok(await run('npx', ['docshare', '--version'], project, env), 'npx docshare --version');
    const v = (name: string): string | undefined => packed.find((p) => p.name === name)?.version;
    assert.equal(version.stdout.split(' (')[0], `docshare ${v('@docshare/cli')}`);
    assert.match(version.stdout, new RegExp(`client ${v('@docshare/client')?.replace(/\./g, '\\.')}, node `));
    // The machine's node ran it (whatever version that is, at least `engines`' 20), not this project's.
    const machineNode = ok(await run('node', ['--version'], project, env), 'node --version').stdout.trim();
    assert.equal(version.stdout.trim().split('node ')[1], `${machineNode.slice(1)})`);
  });

  it('npx docshare registers, uploads and downloads the same bytes, DOCSHARE_URL naming the server', async () => {
    const withServer = { ...env, DOCSHARE_URL: fx.server.baseUrl, DOCSHARE_PASSWORD: password };
    await writeFile(path.join(project, 'report.bin'), content);
    ok(await run('npx', ['docshare', 'register', '--name', 'Outside', '--email', email], project, withServer), 'register');
    const upload = ok(await run('npx', ['docshare', 'upload', 'report.bin', '--title', 'Installed elsewhere', '--description', 'From the packed CLI',
      '--tags', 'packages', '--license', 'CC BY', '--new-category', 'Packages', '-q'], project, withServer), 'upload');
    const id = upload.stdout.trim();
    assert.match(id, /^\S+$/);
    ok(await run('npx', ['docshare', 'download', id, '-o', 'copy.bin'], project, withServer), 'download');
    assert.equal(sha(await readFile(path.join(project, 'copy.bin'))), sha(content));
  });

  it('a .mjs script imports @docshare/client from there: logs in, uploads, lists', async () => {
    await writeFile(path.join(project, 'try.mjs'), [
      "import { createClient, DocshareApiError } from '@docshare/client';",
      'const client = createClient({ baseUrl: process.env.DOCSHARE_URL });',
      `await client.login({ email: ${JSON.stringify(email)}, password: ${JSON.stringify(password)} });`,
      "const { file_id } = await client.upload({ file: new TextEncoder().encode(process.argv[2]), fileName: 'note.txt', title: process.argv[2],",
      "  description: 'From the packed SDK', tags: ['packages'], cc_license: 'CC BY', new_category_name: 'Packages' });",
      'const { files } = await client.files();',
      'const missing = await client.download(`${file_id}0`, { to: "nowhere.bin" }).catch((e) => e instanceof DocshareApiError);',
      'console.log(JSON.stringify({ file_id, titles: files.map((f) => f.title), missing }));',
      '',
    ].join('\n'));
    for (const [node, title] of [['node', `machine node ${randomWord(8)}`], [process.execPath, `project node ${randomWord(8)}`]] as const) {
      const r = ok(await run(node, ['try.mjs', title], project, { ...env, DOCSHARE_URL: fx.server.baseUrl }), `${node} try.mjs`);
      const out = JSON.parse(r.stdout) as { file_id: string; titles: string[]; missing: boolean };
      assert.ok(out.titles.includes(title), r.stdout);
      assert.ok(out.titles.includes('Installed elsewhere'), r.stdout);
      assert.equal(out.missing, true, r.stdout);
    }
  });
});
