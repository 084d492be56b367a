/**
 * Every command the README shows in a shell block is run by a test exactly as written, or says here
 * why CI cannot run it. A command added to the README without a test, or a test that no longer
 * reads the README, fails this check.
 *
 * "Run as written" means the test either holds the command verbatim or takes it from README.md
 * itself through tests/readme/readme.ts (so an edit of the README is what gets tested).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { README, REPO_ROOT, shCommands } from '../../tests/readme/readme.ts';

type Where = { runBy: string } | { notInCi: string };

const TRY_IT = { runBy: 'tests/readme/try-it.readme.ts' };
const BENCH = { notInCi: 'a benchmark: minutes of load whose numbers are read by people, never asserted (README, Benchmarks)' };

/** Each README command, and the test that runs it or why none does. */
const COMMANDS: Record<string, Where> = {
  'npm ci && npm start': TRY_IT,
  'npm test': { runBy: 'package.json' },
  'npm run test:full': { runBy: '.ci/run' },
  "export DOCSHARE_PASSWORD='correct horse battery'": TRY_IT,
  'npx docshare register --name Ada --email ada@example.com || npx docshare login --email ada@example.com': TRY_IT,
  "ID=$(npx docshare upload README.md --title 'Read me' --description 'The front door' --tags docs,intro --license 'CC BY' --new-category Documentation -q)": TRY_IT,
  "npx docshare search 'fornt door'": TRY_IT,
  'npx docshare download "$ID" -o /tmp/readme-copy.md --force': TRY_IT,
  "cmp README.md /tmp/readme-copy.md && echo 'same bytes'": TRY_IT,
  'B=http://localhost:8080': TRY_IT,
  'json() { node -e \'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const b=JSON.parse(s);if(b.status!=="success"){console.error(b.message);process.exit(1)}console.log(b[process.argv[1]])})\' "$1"; }': TRY_IT,
  'curl -s -X POST $B/api/V1/users/api-register -H \'Content-Type: application/json\' -d \'{"name":"Ada","email":"ada@example.com","password":"correct horse battery"}\' >/dev/null': TRY_IT,
  'TOKEN=$(curl -s -X POST $B/api/V1/users/api-login -H \'Content-Type: application/json\' -d \'{"email":"ada@example.com","password":"correct horse battery"}\' | json token)': TRY_IT,
  'ID=$(curl -s -X POST $B/api/V1/docs/api-upload -H "X-Authorization: Bearer $TOKEN" -H "Idempotency-Key: $(node -p \'crypto.randomUUID()\')" -F file=@README.md -F title=\'Read me\' -F description=\'The front door\' -F tags=\'docs,intro\' -F cc_license=\'CC BY\' -F new_category_name=\'Documentation\' | json file_id)': TRY_IT,
  'curl -s -X POST $B/api/V1/stats/api-search -H "X-Authorization: Bearer $TOKEN" -H \'Content-Type: application/json\' -d \'{"search":"fornt door"}\'; echo': TRY_IT,
  'URL=$(curl -s "$B/api/V1/docs/api-download?file_id=$ID" -H "X-Authorization: Bearer $TOKEN" | json download_url)': TRY_IT,
  "curl -s -o /tmp/readme-curl.md \"$URL\" && cmp README.md /tmp/readme-curl.md && echo 'same bytes'": TRY_IT,
  'npm ci && npm run stack': { runBy: 'tests/readme/stack.readme.ts' },
  'npm run rebuild -- stats': { runBy: 'tests/readme/stack.readme.ts' },
  'npm run compose:up': { runBy: 'infra/compose/compose.e2e.ts' },
  'npm run compose:secrets && docker compose up --build -d': { notInCi: 'needs a Docker engine and an image registry; these machines have neither (the compose tier runs the same file on podman through npm run compose:up)' },
  'docker compose up -d --scale stats-projector=2 --scale search-projector=2': { notInCi: 'needs a Docker engine; the compose tier scales the same two projectors to 2 on podman (infra/compose/compose.e2e.ts)' },
  'docker compose --profile observability up -d': { notInCi: 'needs a Docker engine and a registry (Grafana has no local image: its AGPL code is not used here); the compose tier starts the same profile\'s prometheus on podman and checks every target is up (infra/compose/compose.e2e.ts)' },
  'npm run test:fuzz': { runBy: 'package.json' },
  'FUZZ_SEED=1234 npx node --test tests/fuzz/http.test.ts': { notInCi: 'replays the whole 20,000-request sequence that npm run test:fuzz already sends' },
  'FUZZ_SEED=1234 FUZZ_REPLAY=677 npx node --test tests/fuzz/http.test.ts': { runBy: 'tests/readme/commands.readme.ts' },
  'FUZZ_REQUESTS=200000 npx node --test tests/fuzz/http.test.ts': { notInCi: 'ten times the fuzz run CI makes (npm run test:fuzz), for a long night' },
  'DOCSHARE_TARGET=distributed node infra/with-stack.ts -- node --test tests/fuzz/http.test.ts': { notInCi: 'npm run test:real runs the same file against distributed instances on the same servers (test:real:suites)' },
  'npm run bench': BENCH,
  'npm run bench:stack': BENCH,
  'BENCH_STACK_FILES=300 BENCH_STACK_WRITE_SECONDS=30 BENCH_STACK_READ_SECONDS=5 BENCH_STACK_BIG_MIB=64 npm run bench:stack': BENCH,
  'npm run bench:extract': BENCH,
  'npm run bench:extract-visible': BENCH,
  'BENCH_VISIBLE_FILES=20 BENCH_VISIBLE_CLIENTS=4 npm run bench:extract-visible': BENCH,
  'npm run bench:idempotency': BENCH,
  'BENCH_IDEM_N=500 DOCSHARE_TARGET=distributed npm run bench:idempotency': BENCH,
  'node libs/idempotency-store/test/mongo-bench.ts 0,1000,3000': BENCH,
};

describe('every command the README shows is run by a test as written', () => {
  const commands = shCommands(README);

  it('lists every README command, and only those', () => {
    assert.deepEqual(commands.filter((command) => !(command in COMMANDS)), [], 'a README command with no test: run it in one, or say why CI cannot');
    assert.deepEqual(Object.keys(COMMANDS).filter((command) => !commands.includes(command)), [], 'no longer in the README');
  });

  it('runs each one verbatim or from README.md itself', () => {
    const loose: string[] = [];
    for (const [command, where] of Object.entries(COMMANDS)) {
      if (!('runBy' in where)) continue;
      const test = readFileSync(join(REPO_ROOT, where.runBy), 'utf8');
      const fromReadme = /from '\.\/readme\.ts'|tests\/readme\/readme\.ts/.test(test);
      const bare = command.replace(/^npm ci && /, '');
      if (!fromReadme && !test.includes(bare)) loose.push(`${where.runBy} does not run: ${command}`);
    }
    assert.deepEqual(loose, []);
  });
});
