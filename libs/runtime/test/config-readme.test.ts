/**
 * The README's configuration tables against the schemas (issue 20 item 5): every variable a
 * concern reads has a row in a `| variable | default | ... |` table, and the row's default is the
 * schema's (or the one its concern applies itself, `Concern.defaults`). A variable added to a
 * schema without a row, or a default changed on one side only, fails here.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ALL_CONCERNS } from '../src/config.ts';

const README = readFileSync(join(import.meta.dirname, '..', '..', '..', 'README.md'), 'utf8');

/** Each variable of every concern, with its default as the README writes it (undefined: none, or not a constant). */
const schemaDefaults = (): Map<string, string | undefined> => {
  const defaults = new Map<string, string | undefined>();
  for (const concern of Object.values(ALL_CONCERNS)) {
    for (const [name, schema] of Object.entries(concern.vars)) {
      const documented = concern.defaults?.[name];
      const parsed = z.safeParse(schema, undefined);
      const value = documented ?? (parsed.success ? parsed.data : undefined);
      defaults.set(name, typeof value === 'number' || (typeof value === 'string' && value !== '') ? String(value) : undefined);
    }
  }
  return defaults;
};

/** Rows of the tables whose header starts `| variable | default |`: each variable named in a first cell, with its default cell. */
export const readmeRows = (markdown: string): Map<string, string> => {
  const rows = new Map<string, string>();
  let inTable = false;
  for (const line of markdown.split('\n')) {
    if (!line.startsWith('|')) {
      inTable = false;
      continue;
    }
    const cells = line.split('|').slice(1, -1).map((cell) => cell.trim());
    if (/^variable$/i.test(cells[0] ?? '') && /^default$/i.test(cells[1] ?? '')) {
      inTable = true;
      continue;
    }
    if (!inTable || /^-+$/.test(cells[0] ?? '')) continue;
    const names = [...(cells[0] ?? '').matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((match) => match[1]!);
    // `A` / `B` | `1` / `2`: one default each, in order.
    const defaults = (cells[1] ?? '').split(' / ');
    names.forEach((name, i) => rows.set(name, names.length > 1 && defaults.length === names.length ? defaults[i]! : cells[1] ?? ''));
  }
  return rows;
};

describe('the README configuration tables', () => {
  const rows = readmeRows(README);
  const defaults = schemaDefaults();

  it('read their rows (the check below is not vacuous)', () => {
    assert.ok(rows.size > 40, `only ${rows.size} rows read`);
    assert.equal(rows.get('JWT_TTL_SECONDS'), '`86400`');
    assert.ok(defaults.size > 60, `only ${defaults.size} variables in the schemas`);
  });

  it('have a row for every variable of the schemas', () => {
    const missing = [...defaults.keys()].filter((name) => !rows.has(name)).sort();
    assert.deepEqual(missing, [], `variables without a row in the README's configuration tables: ${missing.join(', ')}`);
  });

  it('give each variable the default of its schema', () => {
    const wrong = [...defaults].flatMap(([name, value]) => {
      const cell = rows.get(name);
      if (value === undefined || cell === undefined) return [];
      return cell.includes(`\`${value}\``) ? [] : [`${name}: README says ${cell}, the schema ${value}`];
    });
    assert.deepEqual(wrong, []);
  });

  it('name no variable the schemas do not read', () => {
    const known = new Set([...defaults.keys(), ...README_ONLY]);
    const unknown = [...rows.keys()].filter((name) => !known.has(name)).sort();
    assert.deepEqual(unknown, [], `README rows for variables no concern reads: ${unknown.join(', ')}`);
  });
});

/**
 * Rows the README has for variables that are not a runtime concern's: the gateway's upstream URLs
 * come from the services registry (DOCS_COMMAND_URL is also the text extractor's, so a concern's).
 */
const README_ONLY = ['STATS_URL', 'FILES_URL', 'SEARCH_URL'];
