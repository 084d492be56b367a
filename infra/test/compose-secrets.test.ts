import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureSecrets, ROOT, SECRETS } from '../compose/compose.ts';

describe('compose secrets (npm run compose:secrets)', () => {
  it('makes exactly the secret files docker-compose.yml names, once, in a private directory', async () => {
    const compose = await readFile(join(ROOT, 'docker-compose.yml'), 'utf8');
    const named = [...compose.matchAll(/^ {2}([a-z_]+): \{ file: "\$\{SECRETS_DIR:-\.\/\.secrets\}\/\1" \}$/gm)].map((m) => m[1]).sort();
    assert.deepEqual(Object.keys(SECRETS).sort(), named);
    const dir = join(await mkdtemp(join(tmpdir(), 'compose-secrets-')), 'secrets');
    try {
      assert.deepEqual((await ensureSecrets(dir)).sort(), named);
      assert.equal((await stat(dir)).mode & 0o777, 0o700);
      const first = await Promise.all(named.map((name) => readFile(join(dir, name!), 'utf8')));
      for (const [i, value] of first.entries()) {
        // Never a leading "-" (mongosh, mc and redis-cli would read an option) nor URL escapes.
        assert.match(value, /^(?:[0-9a-f]{48,}|docshare-[a-z]+)\n$/, `${named[i]}: ${JSON.stringify(value)}`);
      }
      assert.deepEqual(await ensureSecrets(dir), [], 'existing secrets are kept');
      assert.deepEqual(await Promise.all(named.map((name) => readFile(join(dir, name!), 'utf8'))), first);
      assert.deepEqual((await readdir(dir)).sort(), named);
    } finally {
      await rm(join(dir, '..'), { recursive: true, force: true });
    }
  });
});
