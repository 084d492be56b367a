/**
 * The Elasticsearch index of files (mapping, settings, query fields), and a CLI for ops:
 *   node infra/elasticsearch/mapping.ts                 # prints the body of PUT <alias>-<timestamp>
 *   set -a; . ~/.cache/docshare/data/stack.env; set +a
 *   node infra/elasticsearch/mapping.ts status [alias]  # alias -> index, counts, leftovers, mapping check
 * The data lives in libs/search-index/src/elasticsearch-mapping.ts, which the adapter imports (the
 * service images hold libs/ and services/ only); this file re-exports it so that ops find it here.
 * Explained in docs/elasticsearch.md.
 */
import { fileURLToPath } from 'node:url';
import { Client } from '@elastic/elasticsearch';
import {
  DEFAULT_INDEX_SETTINGS, MAX_QUERY_WORDS, MAX_RESULT_WINDOW, SEARCH_FIELDS, SEARCH_INDEX_MAPPINGS, TEXT_ANALYZER,
  searchIndexSettings,
} from '../../libs/search-index/src/elasticsearch-mapping.ts';

export {
  DEFAULT_INDEX_SETTINGS, MAX_QUERY_WORDS, MAX_RESULT_WINDOW, SEARCH_FIELDS, SEARCH_INDEX_MAPPINGS, TEXT_ANALYZER,
  searchIndexSettings,
};

const DEFAULT_ALIAS = 'docshare-files';

/** "field:type:analyzer" per field, sorted (Elasticsearch lists fields alphabetically). */
function fieldTypes(properties: Record<string, { type?: string; analyzer?: string }>): string[] {
  return Object.entries(properties).map(([field, spec]) => `${field}:${spec.type}:${spec.analyzer ?? ''}`).sort();
}

async function status(node: string, alias: string): Promise<number> {
  const client = new Client({ node, maxRetries: 0, requestTimeout: 10_000 });
  try {
    const behind = Object.keys(await client.indices.getAlias({ name: alias }, { ignore: [404] }))
      .filter((key) => key !== 'error' && key !== 'status');
    const named = Object.keys(await client.indices.get({ index: `${alias}-*`, expand_wildcards: 'all' }));
    console.log(`alias ${alias} -> ${behind.length > 0 ? behind.join(', ') : '(missing: the search projector creates it at start)'}`);
    let problems = behind.length > 1 ? 1 : 0;
    if (behind.length > 1) console.error('PROBLEM: more than one index behind the alias (writes through it fail)');
    const planned = JSON.stringify(fieldTypes(SEARCH_INDEX_MAPPINGS.properties));
    for (const index of named.sort()) {
      const [{ count }, mapping, settings] = await Promise.all([
        client.count({ index }),
        client.indices.getMapping({ index }),
        client.indices.getSettings({ index }),
      ]);
      const mappings = mapping[index]?.mappings;
      const live = JSON.stringify(fieldTypes((mappings?.properties ?? {})));
      const refresh = settings[index]?.settings?.index?.refresh_interval ?? '(default)';
      const role = behind.includes(index) ? 'live' : 'not behind the alias (a rebuild running, or left by an interrupted one)';
      const same = mappings?.dynamic === 'strict' && live === planned;
      if (!same) problems++;
      console.log(`${index}\tdocs=${count}\trefresh_interval=${refresh}\tmapping=${same ? 'as planned' : 'DIFFERS'}\t${role}`);
    }
    return problems > 0 ? 1 : 0;
  } finally {
    await client.close();
  }
}

async function main(): Promise<number> {
  const [command, alias = process.env.ELASTICSEARCH_ALIAS ?? DEFAULT_ALIAS] = process.argv.slice(2);
  if (command === undefined) {
    const body = { settings: searchIndexSettings(), mappings: SEARCH_INDEX_MAPPINGS };
    console.log(JSON.stringify(body, null, 2));
    console.error(`query: per word (first ${MAX_QUERY_WORDS}), multi_match best_fields fuzziness AUTO over ${SEARCH_FIELDS.join(', ')}`);
    return 0;
  }
  if (command !== 'status') {
    console.error('usage: node infra/elasticsearch/mapping.ts [status [alias]]');
    return 2;
  }
  const node = process.env.ELASTICSEARCH_URL;
  if (!node) {
    console.error('ELASTICSEARCH_URL is not set; e.g. set -a; . ~/.cache/docshare/data/stack.env; set +a');
    return 2;
  }
  return status(node, alias);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main();
