// .env.example lists every variable docker-compose.yml and docker-compose.local.yml read, with the
// default each takes when unset, and nothing else (but compose's own COMPOSE_* settings).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

/** Each `${VAR}`, `${VAR:-default}` or `${VAR-default}` a compose file reads: name → defaults seen. */
export const composeVariables = (text: string): Map<string, Set<string>> => {
  const found = new Map<string, Set<string>>();
  // `$${...}` is an escaped dollar (the container's shell expands it), not compose's.
  for (const m of text.matchAll(/(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}/g)) {
    const defaults = found.get(m[1]!) ?? new Set<string>();
    defaults.add(m[2] ?? '');
    found.set(m[1]!, defaults);
  }
  return found;
};

/** The variables .env.example documents: `VAR=value` or `#VAR=value` (commented out: the default), each after a comment line. */
export const exampleVariables = (text: string): Map<string, { value: string; meaning: string }> => {
  const out = new Map<string, { value: string; meaning: string }>();
  const lines = text.split('\n');
  for (const [i, line] of lines.entries()) {
    const m = /^#?([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (!m) continue;
    assert.ok(!out.has(m[1]!), `.env.example names ${m[1]} twice`);
    const above = lines[i - 1] ?? '';
    out.set(m[1]!, { value: m[2]!, meaning: /^# \S/.test(above) ? above.slice(2) : '' });
  }
  return out;
};

/** Set by the release (infra/release/version.ts moves docker-compose.yml's default): documented without a value. */
const RELEASE_SET = new Set(['DOCSHARE_VERSION']);

describe('.env.example', () => {
  const files = ['docker-compose.yml', 'docker-compose.local.yml'];
  const read_ = new Map<string, Set<string>>();
  for (const file of files) for (const [name, defaults] of composeVariables(read(file))) read_.set(name, new Set([...(read_.get(name) ?? []), ...defaults]));
  const example = exampleVariables(read('.env.example'));

  it('finds the variables of a compose text, escaped dollars aside', () => {
    const found = composeVariables('a: ${A:-1}\nb: "${B}"\nc: $${NOT}\nd: ${D-x} ${A:-1}\n');
    assert.deepEqual([...found].map(([k, v]) => [k, [...v]]), [['A', ['1']], ['B', ['']], ['D', ['x']]]);
  });

  it('lists every variable the compose files read, and only those (besides COMPOSE_*)', () => {
    assert.ok(read_.size >= 20, `only ${read_.size} variables found: the pattern is broken`);
    const missing = [...read_.keys()].filter((name) => !example.has(name));
    const extra = [...example.keys()].filter((name) => !read_.has(name) && !name.startsWith('COMPOSE_'));
    assert.deepEqual({ missing, extra }, { missing: [], extra: [] });
  });

  it('gives each the default the compose files use, and a one-line meaning', () => {
    for (const [name, defaults] of read_) {
      assert.equal(defaults.size, 1, `${name} has different defaults in the compose files: ${[...defaults].join(', ')}`);
      const entry = example.get(name)!;
      assert.ok(entry.meaning.length > 10, `${name}: no meaning on the line above it`);
      if (RELEASE_SET.has(name)) assert.equal(entry.value, '', `${name} is the release's: documented without a value`);
      else assert.equal(entry.value, [...defaults][0], `${name}'s default`);
    }
  });

  it('keeps every assignment commented out, so a copy to .env changes nothing until edited', () => {
    const active = read('.env.example').split('\n').filter((line) => /^[A-Z][A-Z0-9_]*=/.test(line));
    assert.deepEqual(active, []);
  });

  it('is not ignored by git (.gitignore ignores .env and .env.*)', () => {
    assert.match(read('.gitignore'), /^!\.env\.example$/m);
  });
});
