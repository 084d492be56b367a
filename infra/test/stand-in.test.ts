import assert from 'node:assert/strict';
import { test } from 'node:test';
import { standInProblems } from '../stack/stand-in.ts';

const powered = { msg: 'Powered by FerretDB v2.5.0 and DocumentDB 0.106.0 (PostgreSQL 15.20).', s: 'I' };
const star = { msg: 'Please star 🌟 us on GitHub: https://github.com/FerretDB/FerretDB.', s: 'I' };

test('MongoDB itself (its buildInfo names no FerretDB) has no stand-in problems', () => {
  assert.deepEqual(standInProblems({ version: '7.0.40' }, [{ msg: 'Access control is not enabled for the database.' }]), []);
});

test('the expected FerretDB 2 + DocumentDB, with only its usual startup lines, passes', () => {
  assert.deepEqual(standInProblems({ version: '7.0.77', ferretdb: { version: 'v2.5.0', package: 'unknown' } }, [powered, star]), []);
});

test('a DocumentDB version mismatch that FerretDB only logs as a startup warning fails the check', () => {
  const problems = standInProblems({ ferretdb: { version: 'v2.5.0' } }, [
    powered,
    { msg: 'This version of FerretDB requires DocumentDB 0.106.0 gitref: HEAD sha:beb9d25d98 buildId:0; found 0.106.0 gitref: unknown sha:unknown buildId:unknown', s: 'W' },
  ]);
  assert.equal(problems.length, 1);
  assert.match(problems[0] ?? '', /startup warning: .*requires DocumentDB/);
});

test('another DocumentDB release, or FerretDB 1.x, fails the check', () => {
  assert.match(standInProblems({ ferretdb: { version: 'v2.5.0' } }, [{ msg: 'Powered by FerretDB v2.5.0 and DocumentDB 0.107.0 (PostgreSQL 15.20).' }]).join(), /DocumentDB 0\.107\.0 .*expected 0\.106\.0/);
  assert.match(standInProblems({ ferretdbVersion: 'v1.24.2' }, []).join(), /FerretDB 1\.24\.2 answers/);
});
