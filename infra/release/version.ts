/**
 * The second half of `npm run release:version`, after `changeset version` has given every workspace
 * its new version (one `fixed` group: one version for the product) and written their CHANGELOG.md:
 * carries that version to what is not a workspace and still names it.
 *
 * - the root package.json's "version" (the app image's tag, infra/containers/images.sh; the
 *   OpenAPI document's info.version);
 * - package-lock.json's version fields of the root and of each workspace (what `npm install`
 *   would write; nothing else of the lock file is touched);
 * - docker-compose.yml's default image tag, `docshare:${DOCSHARE_VERSION:-<version>}`;
 * - the root CHANGELOG.md: a section for the version made of every entry the workspaces'
 *   changelogs have for it, each once (a changeset naming several packages is in each of theirs).
 *
 * Run again on a released tree, it changes nothing. Exits 1 when the workspaces disagree.
 */
import { globSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');
const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

/** Each workspace's package.json path and version, from the root's "workspaces" globs. */
export const workspaceVersions = (): Map<string, string> => {
  const globs = (JSON.parse(read('package.json')) as { workspaces: string[] }).workspaces;
  const found = new Map<string, string>();
  for (const file of globSync(globs.map((glob) => `${glob}/package.json`), { cwd: ROOT }).sort()) {
    found.set(dirname(file), (JSON.parse(read(file)) as { version: string }).version);
  }
  return found;
};

/** The one version every workspace has; throws naming them when they differ. */
export const productVersion = (): string => {
  const versions = workspaceVersions();
  const distinct = new Set(versions.values());
  if (distinct.size !== 1) {
    throw new Error(`the workspaces do not share one version: ${[...versions].map(([dir, v]) => `${dir} ${v}`).join(', ')}`);
  }
  return [...distinct][0] as string;
};

/** The default tag in docker-compose.yml's `docshare:${DOCSHARE_VERSION:-x.y.z}`. */
export const COMPOSE_DEFAULT = /(docshare:\$\{DOCSHARE_VERSION:-)([^}]+)(\})/;

/** The text of `## <version>` up to the next `## ` heading, or undefined. */
export const changelogSection = (text: string, version: string): string | undefined => {
  const heading = new RegExp(`^## ${version.replace(/\./g, '\\.')}\\s*$`, 'm').exec(text);
  if (!heading) return undefined;
  const rest = text.slice(heading.index + heading[0].length);
  const next = /^## /m.exec(rest);
  return rest.slice(0, next ? next.index : undefined).trim();
};

/** A changelog section's entries: each top-level `- ` item with its indented continuation lines. */
export const entriesOf = (section: string): string[] => {
  const entries: string[] = [];
  for (const line of section.split('\n')) {
    if (line.startsWith('- ')) entries.push(line);
    else if (entries.length > 0 && (line.startsWith('  ') || line.trim() === '')) entries[entries.length - 1] += `\n${line}`;
  }
  // An entry "- Updated dependencies" lists other packages' versions; the product has one version.
  return entries.map((entry) => entry.trimEnd()).filter((entry) => !entry.startsWith('- Updated dependencies'));
};

/**
 * The areas a changeset's summary starts with, in bold (`**API.** ...`; CONTRIBUTING.md), in the
 * order the root changelog lists them; an entry of no known area comes last.
 */
export const AREAS = ['API', 'Search', 'Transfers', 'Compose and operations', 'SDK and CLI', 'Runtime'];
const areaRank = (entry: string): number => {
  const area = /^- (?:[0-9a-f]{7,40}: )?\*\*([^*]+?)\.?\*\*/.exec(entry)?.[1];
  const at = area === undefined ? -1 : AREAS.indexOf(area);
  return at === -1 ? AREAS.length : at;
};

const ROOT_CHANGELOG_HEAD = `# Changelog

Every package of docshare (the service, the SDK \`@docshare/client\`, the CLI \`@docshare/cli\`) is
released together under one version; the app image is tagged \`docshare:<version>\`. Each package's
own CHANGELOG.md lists the entries that concern it; this file lists all of them. Written by
\`npm run release:version\` from the changesets in \`.changeset/\` (CONTRIBUTING.md, Releases).
`;

/**
 * The root CHANGELOG.md with a section for `version` made of the entries of `sections` (the
 * workspaces' changelog sections for it), each once; unchanged if it has that section already.
 */
export const rootChangelog = (current: string, version: string, sections: string[]): string => {
  const base = current.trim() === '' ? ROOT_CHANGELOG_HEAD : current;
  if (changelogSection(base, version) !== undefined) return base;
  const seen = new Set<string>();
  const entries: string[] = [];
  for (const entry of sections.flatMap(entriesOf)) {
    // The same changeset in several packages' changelogs: compared without its commit hash prefix.
    const key = entry.replace(/^- [0-9a-f]{7,40}: /, '- ');
    if (seen.has(key)) continue;
    seen.add(key);
    entries.push(entry);
  }
  const sorted = entries.map((entry, at) => ({ entry, at, area: areaRank(entry) }))
    .sort((a, b) => a.area - b.area || a.at - b.at)
    .map(({ entry }) => entry.replace(/[ \t]+$/gm, ''));
  const section = `## ${version}\n\n${sorted.length ? sorted.join('\n\n') : '- No user-facing changes.'}\n`;
  const firstRelease = /^## /m.exec(base);
  return firstRelease
    ? `${base.slice(0, firstRelease.index)}${section}\n${base.slice(firstRelease.index)}`
    : `${base.trimEnd()}\n\n${section}`;
};

const writeIfChanged = (file: string, text: string): void => {
  if (read(file) === text) return;
  writeFileSync(join(ROOT, file), text);
  console.log(`release: ${file}`);
};

const main = (): void => {
  const version = productVersion();
  const workspaces = [...workspaceVersions().keys()];

  writeIfChanged('package.json', read('package.json').replace(/^(\s{2}"version":\s*")[^"]*(")/m, `$1${version}$2`));

  const lock = JSON.parse(read('package-lock.json')) as { version?: string; packages: Record<string, { version?: string }> };
  lock.version = version;
  for (const key of ['', ...workspaces]) {
    const entry = lock.packages[key];
    if (entry) entry.version = version;
  }
  writeIfChanged('package-lock.json', `${JSON.stringify(lock, null, 2)}\n`);

  const compose = read('docker-compose.yml');
  if (!COMPOSE_DEFAULT.test(compose)) throw new Error('docker-compose.yml has no docshare:${DOCSHARE_VERSION:-...} image');
  writeIfChanged('docker-compose.yml', compose.replace(COMPOSE_DEFAULT, `$1${version}$3`));

  const changelogPath = join(ROOT, 'CHANGELOG.md');
  if (!existsSync(changelogPath)) writeFileSync(changelogPath, '');
  const sections = workspaces
    .map((dir) => join(ROOT, dir, 'CHANGELOG.md'))
    .filter((file) => existsSync(file))
    .map((file) => changelogSection(readFileSync(file, 'utf8'), version) ?? '');
  writeIfChanged('CHANGELOG.md', rootChangelog(read('CHANGELOG.md'), version, sections));

  console.log(`release: docshare ${version}; next: commit, then npm run release:tag (CONTRIBUTING.md, Releases)`);
};

if (import.meta.main) {
  try {
    main();
  } catch (error) {
    console.error(`release: ${(error as Error).message}`);
    process.exit(1);
  }
}
