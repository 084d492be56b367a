// POST /api/V1/stats/api-search (spec §4.4, decisions §7, docs/api-decisions.md paging).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { randomWord, type RegisteredUser } from '../support/client.ts';
import { assertKeys, expectError, expectSuccess } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';
import { eventually } from '../support/wait.ts';

let owner: RegisteredUser;
let reader: RegisteredUser;
const fx = useServer({}, async () => {
  owner = await fx.c.register();
  reader = await fx.c.register();
});

type Item = { id: string; title: string; link: string; description: string; category: string; tag: string; snippet: string };

async function ids(term: string, extra: Record<string, unknown> = {}): Promise<string[]> {
  const body = expectSuccess(await fx.c.search(reader.token, { search: term, ...extra }), 200);
  return (body.results as Item[]).map((r) => r.id);
}

/** Replace one letter in the middle of a word. */
function typo(word: string): string {
  const i = Math.floor(word.length / 2);
  const ch = word[i] === 'q' ? 'z' : 'q';
  return word.slice(0, i) + ch + word.slice(i + 1);
}

describe('search', () => {
  it('returns 200 with results whose items have exactly id, title, link, description, category, tag, snippet', async () => {
    const { c, server } = fx;
    const word = randomWord(12);
    const cat = `Cat${randomWord(8)}`;
    const { fileId } = await c.uploadOk(owner.token, {
      title: `Findable ${word}`,
      description: 'Some description',
      tags: 'red, Green,,red , blue',
      new_category_name: cat,
    });
    const body = await eventually(async () => {
      const b = expectSuccess(await c.search(reader.token, { search: word }), 200);
      assert.equal(b.results.length, 1);
      return b;
    });
    assertKeys(body, ['status', 'results', 'total', 'page', 'per_page'], 'search body');
    assert.equal(body.total, 1);
    assert.equal(body.page, 1);
    assert.equal(body.per_page, 20);
    const item = body.results[0] as Item;
    assertKeys(item, ['id', 'title', 'link', 'description', 'category', 'tag', 'snippet'], 'search item');
    assert.equal(item.snippet, `Findable <mark>${word}</mark>`);
    assert.equal(item.id, fileId);
    assert.equal(typeof item.id, 'string');
    assert.equal(item.title, `Findable ${word}`);
    assert.equal(item.description, 'Some description');
    assert.equal(item.category, cat);
    assert.equal(item.tag, 'red,Green,blue');
    assert.equal(item.link, `${server.baseUrl}/docs/${fileId}`);
  });

  it('the link opens the view page of the file', async () => {
    const { c } = fx;
    const word = randomWord(12);
    await c.uploadOk(owner.token, { title: `Linked ${word}` });
    const link = await eventually(async () => {
      const b = expectSuccess(await c.search(reader.token, { search: word }), 200);
      return (b.results[0] as Item).link;
    });
    const page = await c.raw('GET', link);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.ok(page.text.includes(`Linked ${word}`));
  });

  it('finds by title, description, tags and category name', async () => {
    const { c } = fx;
    const [t, d, g, k] = [randomWord(11), randomWord(11), randomWord(11), randomWord(11)];
    const { fileId: byTitle } = await c.uploadOk(owner.token, { title: `Title ${t}` });
    const { fileId: byDesc } = await c.uploadOk(owner.token, { description: `A text mentioning ${d} once` });
    const { fileId: byTag } = await c.uploadOk(owner.token, { tags: `one,${g},two` });
    const { fileId: byCat } = await c.uploadOk(owner.token, { new_category_name: `Category ${k}` });
    await eventually(async () => {
      assert.deepEqual(await ids(t), [byTitle]);
      assert.deepEqual(await ids(d), [byDesc]);
      assert.deepEqual(await ids(g), [byTag]);
      assert.deepEqual(await ids(k), [byCat]);
    });
  });

  it('is case-insensitive and tolerates a one-letter typo', async () => {
    const { c } = fx;
    const word = randomWord(10);
    const { fileId } = await c.uploadOk(owner.token, { title: `Typo ${word}`, description: 'nothing else' });
    await eventually(async () => assert.deepEqual(await ids(word.toUpperCase()), [fileId]));
    assert.deepEqual(await ids(typo(word)), [fileId]);
    // Also a typo in a description word.
    const w2 = randomWord(10);
    const { fileId: f2 } = await c.uploadOk(owner.token, { description: `about ${w2} things` });
    await eventually(async () => assert.deepEqual(await ids(typo(w2)), [f2]));
  });

  it('finds other users\' files', async () => {
    const { c } = fx;
    const word = randomWord(12);
    const { fileId } = await c.uploadOk(owner.token, { title: word });
    const stranger = await c.register();
    await eventually(async () => {
      const b = expectSuccess(await c.search(stranger.token, { search: word }), 200);
      assert.deepEqual(b.results.map((r: Item) => r.id), [fileId]);
    });
  });

  it('no hit → 404 "No results found"', async () => {
    expectError(await fx.c.search(reader.token, { search: randomWord(16) }), 404, 'No results found');
  });

  it('a missing, empty, blank or non-string term → 400 "Search term is required"', async () => {
    const { c } = fx;
    for (const body of [{}, { search: '' }, { search: '   ' }, { search: 5 }, { search: null }, { search: ['a'] }, { query: 'x' }]) {
      expectError(await c.search(reader.token, body), 400, 'Search term is required');
    }
    expectError(await c.json('POST', '/api/V1/stats/api-search', reader.token), 400, 'Search term is required');
  });

  it('a term over 200 characters → 400 "Search term is too long"', async () => {
    expectError(await fx.c.search(reader.token, { search: 'a'.repeat(201) }), 400, 'Search term is too long');
    expectError(await fx.c.search(reader.token, { search: 'a'.repeat(200) }), 404, 'No results found');
  });

  it('pages with page and per_page, reporting total, page and per_page', async () => {
    const { c } = fx;
    const word = randomWord(12);
    const all: string[] = [];
    for (let i = 0; i < 5; i += 1) all.push((await c.uploadOk(owner.token, { title: `Paged ${word}`, description: 'same' })).fileId);
    await eventually(async () => assert.equal((await ids(word)).length, 5));
    const seen: string[] = [];
    for (const [page, count] of [[1, 2], [2, 2], [3, 1]] as const) {
      const b = expectSuccess(await c.search(reader.token, { search: word, page, per_page: 2 }), 200);
      assert.equal(b.total, 5);
      assert.equal(b.page, page);
      assert.equal(b.per_page, 2);
      assert.equal(b.results.length, count);
      seen.push(...b.results.map((r: Item) => r.id));
    }
    assert.deepEqual([...seen].sort(), [...all].sort(), 'pages cover every hit once');
    // Equal relevance: newest first.
    assert.deepEqual(seen, [...all].reverse());
    // Past the end: success with an empty list.
    const past = expectSuccess(await c.search(reader.token, { search: word, page: 4, per_page: 2 }), 200);
    assert.deepEqual(past.results, []);
    assert.equal(past.total, 5);
    assert.equal(past.page, 4);
    // per_page 100 is the maximum allowed.
    assert.equal(expectSuccess(await c.search(reader.token, { search: word, per_page: 100 }), 200).per_page, 100);
  });

  it('an invalid page → 400 "Invalid page"; an invalid per_page → 400 "Invalid per_page"', async () => {
    const { c } = fx;
    for (const page of [0, -1, 1.5, 'abc']) {
      expectError(await c.search(reader.token, { search: 'anything', page }), 400, 'Invalid page');
    }
    for (const per_page of [0, 101, -5, 2.5, 'many']) {
      expectError(await c.search(reader.token, { search: 'anything', per_page }), 400, 'Invalid per_page');
    }
  });

  it('disabled files never appear, and come back when enabled again', async () => {
    const { c } = fx;
    const word = randomWord(12);
    const { fileId: hidden } = await c.uploadOk(owner.token, { title: `Hidden ${word}` });
    await eventually(async () => assert.deepEqual(await ids(word), [hidden]));
    expectSuccess(await c.update(owner.token, { id: hidden, enabled: false }), 200);
    await eventually(async () => expectError(await c.search(reader.token, { search: word }), 404, 'No results found'));
    // Not even for the owner.
    expectError(await c.search(owner.token, { search: word }), 404, 'No results found');
    // A file uploaded later proves the index caught up, and the disabled one is still absent.
    const { fileId: marker } = await c.uploadOk(owner.token, { title: `Marker ${word}` });
    await eventually(async () => assert.deepEqual(await ids(word), [marker]));
    expectSuccess(await c.update(owner.token, { id: hidden, enabled: true }), 200);
    await eventually(async () => assert.deepEqual((await ids(word)).sort(), [hidden, marker].sort()));
  });

  it('a file disabled before it is ever searched never appears', async () => {
    const { c } = fx;
    const word = randomWord(12);
    const { fileId: hidden } = await c.uploadOk(owner.token, { title: `Hidden ${word}` });
    expectSuccess(await c.update(owner.token, { id: hidden, enabled: false }), 200);
    const { fileId: marker } = await c.uploadOk(owner.token, { title: `Marker ${word}` });
    await eventually(async () => assert.ok((await ids(word)).includes(marker)));
    assert.deepEqual(await ids(word), [marker]);
  });

  it('deleted files never appear', async () => {
    const { c } = fx;
    const word = randomWord(12);
    const { fileId: gone } = await c.uploadOk(owner.token, { title: `Gone ${word}` });
    expectSuccess(await c.del(owner.token, gone), 200);
    const { fileId: marker } = await c.uploadOk(owner.token, { title: `Marker ${word}` });
    await eventually(async () => assert.ok((await ids(word)).includes(marker)));
    assert.deepEqual(await ids(word), [marker]);
  });

  it('an updated title is searchable and the old one no longer matches', async () => {
    const { c } = fx;
    const [oldWord, newWord] = [randomWord(12), randomWord(12)];
    const { fileId } = await c.uploadOk(owner.token, { title: `Old ${oldWord}` });
    await eventually(async () => assert.deepEqual(await ids(oldWord), [fileId]));
    expectSuccess(await c.update(owner.token, { id: fileId, title: `New ${newWord}` }), 200);
    await eventually(async () => {
      const b = expectSuccess(await c.search(reader.token, { search: newWord }), 200);
      assert.deepEqual(b.results.map((r: Item) => [r.id, r.title]), [[fileId, `New ${newWord}`]]);
      expectError(await c.search(reader.token, { search: oldWord }), 404, 'No results found');
    });
  });

  it('malformed JSON → 400 "Malformed JSON"', async () => {
    const res = await fx.c.json('POST', '/api/V1/stats/api-search', reader.token, undefined, { raw: '{search:', headers: { 'Content-Type': 'application/json' } });
    expectError(res, 400, 'Malformed JSON');
  });

  it('another method → 405 "Invalid request method"', async () => {
    expectError(await fx.c.json('GET', '/api/V1/stats/api-search', reader.token), 405, 'Invalid request method');
    expectError(await fx.c.json('DELETE', '/api/V1/stats/api-search', reader.token), 405, 'Invalid request method');
  });
});
