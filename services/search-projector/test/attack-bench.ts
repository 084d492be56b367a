// The search attack of issue 17 (finding 1) replayed against `npm start` (embedded, one process):
// 4 accounts upload 25 text files each of random six-letter words over "abcdef" (~99 KB each),
// then one api-search of 28 such words with per_page 100 while another user asks for api-stats.
// Prints the search's time and how long the other user's api-stats and /healthz took meanwhile.
//   node services/search-projector/test/attack-bench.ts [repeats, default 3]
// Before the bound (issue 17): the search took 23-25 s here and the other user's stats waited as
// long; after: ~0.3 s, the stats answered in 5-74 ms (a shared two-core machine at load ~12).
import { randomInt } from 'node:crypto';
import { api } from '../../../tests/support/client.ts';
import { startServer } from '../../../tests/support/server.ts';
import { TEST_JWT_SECRET } from '../../../tests/support/jwt.ts';

const six = (): string => Array.from({ length: 6 }, () => 'abcdef'[randomInt(6)]).join('');
// No rate limit in the way of 100 uploads.
const server = await startServer({ JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_POINTS: '100000' });
try {
  const c = api(server);
  const attackers = await Promise.all([1, 2, 3, 4].map(() => c.register()));
  const victim = await c.register();
  let t = performance.now();
  for (let i = 0; i < 25; i++) {
    await Promise.all(attackers.map((a) => c.uploadOk(a.token, { title: `Random ${i}` }, new TextEncoder().encode(Array.from({ length: 14_140 }, six).join(' ')), 'r.txt', 'text/plain')));
  }
  console.log(`uploaded 100 files in ${Math.round(performance.now() - t)} ms`);
  const term = Array.from({ length: 28 }, six).join(' ');
  t = performance.now();
  // Every file extracted and indexed: the query's words reach all of them (typos of two letters).
  for (let waited = 0; ; waited++) {
    const res = await c.search(victim.token, { search: term, per_page: 1 });
    if (res.body?.total === 100) break;
    if (waited === 600) throw new Error(`only ${res.body?.total} of 100 files found after 5 minutes`);
    await new Promise((r) => setTimeout(r, 500));
  }
  console.log(`extracted and indexed in ${Math.round(performance.now() - t)} ms`);
  for (let k = 0; k < Number(process.argv[2] ?? 3); k++) {
    const q = Array.from({ length: 28 }, six).join(' ');
    const began = performance.now();
    const attack = c.search(attackers[0]!.token, { search: q, per_page: 100 }).then((res) => ({ res, ms: performance.now() - began }));
    await new Promise((r) => setTimeout(r, 50));
    const s0 = performance.now();
    const stats = await c.stats(victim.token);
    const statsMs = performance.now() - s0;
    const h0 = performance.now();
    await fetch(`${server.baseUrl}/healthz`);
    const healthMs = performance.now() - h0;
    const { res, ms } = await attack;
    console.log(`search ${res.status} ${res.body?.results?.length} results in ${Math.round(ms)} ms; another user's api-stats ${stats.status} in ${Math.round(statsMs)} ms, /healthz ${Math.round(healthMs)} ms`);
  }
} finally {
  await server.dispose();
}
