// The committed generated types (src/openapi.ts) must be what the gateway's OpenAPI document gives
// now: `npm run generate:client` after changing services/gateway/src/openapi.ts.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { it } from 'node:test';
import { GENERATED_PATH, renderOpenApiTypes } from '../scripts/openapi-types.ts';

it('libs/client/src/openapi.ts is up to date with the OpenAPI document (else: npm run generate:client)', async () => {
  const committed = await readFile(GENERATED_PATH, 'utf8');
  const fresh = await renderOpenApiTypes();
  if (committed !== fresh) {
    const a = committed.split('\n');
    const b = fresh.split('\n');
    const line = a.findIndex((l, i) => l !== b[i]);
    assert.fail(`libs/client/src/openapi.ts is stale: run \`npm run generate:client\`. First difference at line ${line + 1}:\n`
      + `  committed: ${a[line] ?? '(end of file)'}\n  generated: ${b[line] ?? '(end of file)'}`);
  }
});
