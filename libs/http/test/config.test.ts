import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, intVar, listVar, optionalVar, readConfig, stringVar } from '../src/config.ts';

const SHAPE = {
  PORT: intVar(8080),
  RATE: intVar(30, 1),
  URL: stringVar(),
  NAME: stringVar('docshare'),
  EXTRA: optionalVar(),
  BROKERS: listVar(),
};

describe('readConfig', () => {
  it('reads each variable, with its default when absent or empty', () => {
    assert.deepEqual(readConfig(SHAPE, { URL: 'mongodb://x', RATE: ' ', BROKERS: 'a:1, b:2,', UNRELATED: 'ignored' }), {
      PORT: 8080, RATE: 30, URL: 'mongodb://x', NAME: 'docshare', BROKERS: ['a:1', 'b:2'],
    });
    assert.equal(readConfig(SHAPE, { URL: 'u', BROKERS: 'b', PORT: '0', EXTRA: '' }).PORT, 0);
  });

  it('names every bad or missing variable in one error', () => {
    assert.throws(() => readConfig(SHAPE, { PORT: 'abc', RATE: '0', BROKERS: ' , ' }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.deepEqual(error.problems, [
        'PORT must be an integer >= 0, got "abc"',
        'RATE must be an integer >= 1, got "0"',
        'URL is required',
        'BROKERS is required (a comma-separated list)',
      ]);
      return true;
    });
    assert.throws(() => readConfig({ N: intVar(1) }, { N: '1.5' }), /N must be an integer >= 0, got "1.5"/);
    assert.throws(() => readConfig({ N: intVar(1) }, { N: '9007199254740993' }), /N must be an integer/);
  });

  it('reads a variable from the file its _FILE names (compose secrets), the variable itself winning', () => {
    const dir = mkdtempSync(join(tmpdir(), 'config-file-'));
    writeFileSync(join(dir, 'url'), 'mongodb://from-file\n');
    writeFileSync(join(dir, 'rate'), '7');
    const read = readConfig(SHAPE, { URL_FILE: join(dir, 'url'), RATE_FILE: join(dir, 'rate'), BROKERS: 'b' });
    assert.equal(read.URL, 'mongodb://from-file');
    assert.equal(read.RATE, 7);
    assert.equal(readConfig(SHAPE, { URL: 'explicit', URL_FILE: join(dir, 'url'), BROKERS: 'b' }).URL, 'explicit');
    // A shape that declares X_FILE itself keeps it as a plain variable.
    assert.deepEqual(readConfig({ S: optionalVar(), S_FILE: optionalVar() }, { S_FILE: join(dir, 'missing') }), { S_FILE: join(dir, 'missing') });
  });

  it('names a secret file that cannot be read, beside the other problems', () => {
    assert.throws(() => readConfig(SHAPE, { URL_FILE: '/nonexistent/secret', PORT: 'x', BROKERS: 'b' }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.deepEqual(error.problems, [
        'URL_FILE cannot be read (ENOENT: /nonexistent/secret)',
        'PORT must be an integer >= 0, got "x"',
        'URL is required',
      ]);
      return true;
    });
  });
});
