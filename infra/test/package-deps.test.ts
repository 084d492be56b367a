// Every workspace package declares what its code imports: other docshare packages and outside
// libraries in `dependencies` (its src/), or `devDependencies` (only its tests, and the fixture
// modules it exports for other packages' tests under `./testing`). So a package's package.json
// says what it needs, and an import that nobody declared fails here.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');
const BUILTINS = new Set(builtinModules);

const filesUnder = (dir: string): string[] => {
  let out: string[] = [];
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  for (const entry of entries) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out = [...out, ...filesUnder(path)];
    else if (path.endsWith('.ts')) out.push(path);
  }
  return out;
};

/** The packages a file imports (bare specifiers, reduced to the package name; node builtins left out). */
export const importedPackages = (source: string): Set<string> => {
  const found = new Set<string>();
  const specifiers = [...source.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"`;]*?from\s+['"]([^'"]+)['"]/g), ...source.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)]
    .map((m) => m[1] as string);
  for (const specifier of specifiers) {
    if (specifier.startsWith('.') || specifier.startsWith('node:') || BUILTINS.has(specifier.split('/')[0] as string)) continue;
    const parts = specifier.split('/');
    found.add(specifier.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0] as string);
  }
  return found;
};

const packages = ['libs', 'services'].flatMap((top) => readdirSync(join(ROOT, top)).map((name) => join(ROOT, top, name)))
  .filter((dir) => {
    try {
      return statSync(join(dir, 'package.json')).isFile();
    } catch {
      return false;
    }
  });

describe('workspace package dependencies', () => {
  it('reads import specifiers as package names', () => {
    const found = importedPackages(`import a from 'kafkajs';\nimport type { B } from '@docshare/contracts/testing';\nimport { c } from './c.ts';\nimport { d } from 'node:fs';\nexport * from '@docshare/http';\nconst e = await import('testcontainers');\nimport { f } from 'stream';`);
    assert.deepEqual([...found].sort(), ['@docshare/contracts', '@docshare/http', 'kafkajs', 'testcontainers']);
  });

  for (const dir of packages) {
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
      name: string; dependencies?: Record<string, string>; devDependencies?: Record<string, string>;
      exports?: Record<string, unknown>;
    };
    /** The files of the package's `./testing` exports: test fixtures, held to the tests' rule. */
    const testing = new Set(Object.entries(manifest.exports ?? {})
      .filter(([subpath, target]) => /^\.\/testing(\/|$)/.test(subpath) && typeof target === 'string')
      .map(([, target]) => join(dir, target as string)));
    it(`${manifest.name} declares what it imports`, () => {
      const deps = new Set(Object.keys(manifest.dependencies ?? {}));
      const dev = new Set(Object.keys(manifest.devDependencies ?? {}));
      const used = (files: string[]): Set<string> => {
        const all = new Set<string>();
        for (const file of files) for (const name of importedPackages(readFileSync(file, 'utf8'))) all.add(name);
        all.delete(manifest.name);
        return all;
      };
      const src = filesUnder(join(dir, 'src'));
      const production = src.filter((file) => !testing.has(file));
      const missing = [...used(production)].filter((name) => !deps.has(name)).sort();
      assert.deepEqual(missing, [], `${manifest.name}: src imports packages its dependencies do not list`);
      const testFiles = [...filesUnder(join(dir, 'test')), ...src.filter((file) => testing.has(file))];
      const missingInTests = [...used(testFiles)].filter((name) => !deps.has(name) && !dev.has(name)).sort();
      assert.deepEqual(missingInTests, [], `${manifest.name}: tests import packages neither dependencies nor devDependencies list`);
    });
  }
});
