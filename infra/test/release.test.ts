/**
 * One version for the product: every workspace (changesets' one `fixed` group), the root
 * package.json (the image tag images.sh builds, the OpenAPI info.version), the lock file's version
 * fields and docker-compose.yml's default image tag name the same release, and the changelogs have
 * its entry. `npm run release:version` makes them so (infra/release/version.ts); this fails when a
 * release, or a hand edit, leaves one behind. `npm run release:tag` runs it before tagging.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { changelogSection, COMPOSE_DEFAULT, entriesOf, ROOT, rootChangelog, workspaceVersions } from '../release/version.ts';

const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');
const root = JSON.parse(read('package.json')) as { version: string };
const version = root.version;

describe('one version for the product', () => {
  it('every workspace has the root package.json version', () => {
    const versions = workspaceVersions();
    assert.ok(versions.size >= 20, `found the workspaces (${versions.size})`);
    const other = [...versions].filter(([, v]) => v !== version).map(([dir, v]) => `${dir} ${v}`);
    assert.deepEqual(other, [], `root is ${version}`);
  });

  it('package-lock.json carries the same version for the root and each workspace', () => {
    const lock = JSON.parse(read('package-lock.json')) as { version: string; packages: Record<string, { version?: string }> };
    assert.equal(lock.version, version);
    const keys = ['', ...workspaceVersions().keys()];
    assert.deepEqual(keys.filter((key) => lock.packages[key]?.version !== version), []);
  });

  it("docker-compose.yml's default image tag is the version", () => {
    const match = COMPOSE_DEFAULT.exec(read('docker-compose.yml'));
    assert.ok(match, 'docker-compose.yml names docshare:${DOCSHARE_VERSION:-...}');
    assert.equal(match[2], version);
  });

  it('CHANGELOG.md has an entry for the version, and so has every workspace', () => {
    const section = changelogSection(read('CHANGELOG.md'), version);
    assert.ok(section !== undefined, `CHANGELOG.md has no "## ${version}"`);
    assert.ok(entriesOf(section).length > 0, `CHANGELOG.md's ${version} lists nothing`);
    const missing = [...workspaceVersions().keys()].filter((dir) => {
      try {
        return changelogSection(read(join(dir, 'CHANGELOG.md')), version) === undefined;
      } catch {
        return true;
      }
    });
    assert.deepEqual(missing, []);
  });

  it('changesets versions every workspace together and tags private ones, offline', () => {
    const config = JSON.parse(read('.changeset/config.json')) as {
      fixed: string[][]; privatePackages: { version: boolean; tag: boolean }; baseBranch: string; changelog: string;
    };
    assert.deepEqual(config.fixed, [['@docshare/*']]);
    const names = [...workspaceVersions().keys()].map((dir) => (JSON.parse(read(join(dir, 'package.json'))) as { name: string }).name);
    assert.deepEqual(names.filter((name) => !name.startsWith('@docshare/')), [], 'the fixed group\'s glob covers every workspace');
    assert.deepEqual(config.privatePackages, { version: true, tag: true });
    assert.equal(config.baseBranch, 'main');
    assert.equal(config.changelog, '@changesets/cli/changelog', 'the changelog generator needs no GitHub token');
  });
});

describe('the root changelog section', () => {
  // Entries as changesets writes them: a commit hash, the summary's continuation lines indented.
  const auth = '### Minor Changes\n\n- abc1234: **Runtime.** Node 24.\n- Updated dependencies\n  - @docshare/x@9.9.9\n';
  const gateway = '### Minor Changes\n\n- abc1234: **Transfers.** Paced.\n- def5678: **API.** One\n  \n  - two\n- abc1234: **Runtime.** Node 24.\n';

  it('reads a section and its entries', () => {
    assert.deepEqual(entriesOf(gateway), ['- abc1234: **Transfers.** Paced.', '- def5678: **API.** One\n  \n  - two', '- abc1234: **Runtime.** Node 24.']);
    assert.deepEqual(entriesOf(auth), ['- abc1234: **Runtime.** Node 24.'], 'no "Updated dependencies": one version for all');
    assert.equal(changelogSection(`# x\n\n## 9.9.9\n\n${auth}\n## 9.9.8\n\n- old\n`, '9.9.9'), auth.trim());
    assert.equal(changelogSection('# x\n\n## 9.9.90\n\n- not this one\n', '9.9.9'), undefined);
  });

  it('takes each entry once, by area (API first, Runtime last), above the earlier releases', () => {
    const text = rootChangelog('# Changelog\n\nIntro.\n\n## 9.9.8\n\n- old\n', '9.9.9', [auth, gateway]);
    assert.equal(text, '# Changelog\n\nIntro.\n\n## 9.9.9\n\n- def5678: **API.** One\n\n  - two\n\n- abc1234: **Transfers.** Paced.\n\n'
      + '- abc1234: **Runtime.** Node 24.\n\n## 9.9.8\n\n- old\n');
    assert.match(rootChangelog('', '9.9.9', []), /^# Changelog\n[\s\S]*## 9\.9\.9\n\n- No user-facing changes\.\n$/);
  });

  it('leaves a changelog that already has the version as it is', () => {
    const current = '# Changelog\n\n## 1.0.0\n\n- done\n';
    assert.equal(rootChangelog(current, '1.0.0', [gateway]), current);
  });
});
