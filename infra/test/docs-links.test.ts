/**
 * The documents link only to what the repository holds: every relative link of README.md,
 * CONTRIBUTING.md, SECURITY.md and docs/*.md resolves to a file or directory inside the repository
 * (anchors are not checked). And docs/spec/ is the contract verbatim: when ../shared/spec sits
 * beside the repository (as on the machines the project is built on), its files equal the copies.
 */
import assert from 'node:assert/strict';
import { existsSync, globSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = join(import.meta.dirname, '..', '..');
const DOCUMENTS = ['README.md', 'CONTRIBUTING.md', 'SECURITY.md', ...globSync('docs/*.md', { cwd: ROOT }).sort()];

/** The link targets of a Markdown text outside code: inline links and images, and reference definitions. */
export const linkTargets = (markdown: string): string[] => {
  const prose = markdown
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '')
    .replace(/(`+)[\s\S]*?\1/g, '');
  const targets: string[] = [];
  for (const match of prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) targets.push(match[1] as string);
  for (const match of prose.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)) targets.push(match[1] as string);
  return targets;
};

/** Where a relative link of `file` points, or undefined for an absolute URL or a bare anchor. */
const localPath = (file: string, target: string): string | undefined => {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#') || target.startsWith('//')) return undefined;
  const path = decodeURIComponent(target.replace(/[#?].*$/, ''));
  return isAbsolute(path) ? path : resolve(ROOT, dirname(file), path);
};

const outside = (path: string): boolean => {
  const rel = relative(ROOT, path);
  return rel.startsWith('..') || isAbsolute(rel);
};

describe('the documents link only to what the repository holds', () => {
  it('reads links the way Markdown renders them', () => {
    const text = [
      'See [ops](docs/ops.md#sizing), ![shot](docs/images/a.png "A"), [site](https://example.com), [top](#tests).',
      '`[not a link](nowhere.md)`',
      '```sh',
      'echo "[not either](nowhere.md)"',
      '```',
      '[ref]: ../shared/spec/api-spec.md',
    ].join('\n');
    assert.deepEqual(linkTargets(text), ['docs/ops.md#sizing', 'docs/images/a.png', 'https://example.com', '#tests', '../shared/spec/api-spec.md']);
    assert.equal(localPath('README.md', 'https://example.com'), undefined);
    assert.ok(outside(localPath('README.md', '../shared/spec/api-spec.md') as string), 'a link beside the repository is outside it');
    assert.ok(!outside(localPath('docs/ops.md', '../README.md#tests') as string));
  });

  it('every relative link resolves to a file inside the repository', () => {
    const broken: string[] = [];
    for (const file of DOCUMENTS) {
      assert.ok(existsSync(join(ROOT, file)), `${file} exists`);
      for (const target of linkTargets(readFileSync(join(ROOT, file), 'utf8'))) {
        const path = localPath(file, target);
        if (path === undefined) continue;
        if (outside(path)) broken.push(`${file}: ${target} (outside the repository)`);
        else if (!existsSync(path)) broken.push(`${file}: ${target} (no such file)`);
      }
    }
    assert.deepEqual(broken, []);
  });
});

describe('docs/spec is the contract, verbatim', () => {
  const shared = join(ROOT, '..', 'shared', 'spec');
  for (const name of ['api-spec.md', 'decisions.md']) {
    it(`docs/spec/${name} is in the repository${existsSync(shared) ? ` and equals ../shared/spec/${name}` : ''}`, () => {
      const copy = readFileSync(join(ROOT, 'docs', 'spec', name), 'utf8');
      assert.ok(copy.length > 0);
      // Beside the repository only where the project is built; a clone elsewhere has the copy alone.
      if (existsSync(shared)) assert.ok(copy === readFileSync(join(shared, name), 'utf8'), `docs/spec/${name} differs from ../shared/spec/${name}: copy it again`);
    });
  }
});
