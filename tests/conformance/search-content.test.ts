// Search that reads the documents (issue 9): text extracted from uploads is searched (with typo
// tolerance) and shown as a marked snippet; facets, filters and cursors; the view page shows the
// extraction; statistics do not move. Runs against embedded, distributed and compose alike.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  encryptedPdf, makeCsv, makeDocx, makeHtml, makeMarkdown, makeOdt, makePdf, makePptx,
} from '@docshare/extract/testing';
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

/** Extraction runs in a child process after the upload is acknowledged: give it room on a busy machine. */
const EXTRACTED = { timeoutMs: 60_000, intervalMs: 200 };

/** One letter changed in the middle of a word. */
const typo = (word: string): string => {
  const i = Math.floor(word.length / 2);
  return word.slice(0, i) + (word[i] === 'q' ? 'z' : 'q') + word.slice(i + 1);
};

const paragraphs = (word: string): string[] => [
  'The committee met on Tuesday to review the quarterly figures and the plans for next year.',
  `Among the findings, the ${word} measurements stood out as the most promising result of the study.`,
  'Further work will extend the analysis to the remaining regions before the end of the season.',
];

const FORMATS: { name: string; file: (word: string) => Promise<Uint8Array> | Uint8Array; fileName: string; contentType: string }[] = [
  { name: 'PDF', file: (w) => makePdf(paragraphs(w)), fileName: 'report.pdf', contentType: 'application/pdf' },
  { name: 'DOCX', file: (w) => makeDocx(paragraphs(w)), fileName: 'report.docx', contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' },
  { name: 'ODT', file: (w) => makeOdt(paragraphs(w)), fileName: 'report.odt', contentType: 'application/vnd.oasis.opendocument.text' },
  { name: 'PPTX', file: (w) => makePptx([['Quarterly review'], paragraphs(w)]), fileName: 'slides.pptx', contentType: 'application/vnd.openxmlformats-officedocument.presentationml.presentation' },
  { name: 'HTML', file: (w) => makeHtml(paragraphs(w)), fileName: 'page.html', contentType: 'text/html' },
  { name: 'Markdown', file: (w) => makeMarkdown(paragraphs(w)), fileName: 'notes.md', contentType: 'text/markdown' },
  { name: 'CSV', file: (w) => makeCsv([['region', 'note'], ['north', `${w} measurements`], ['south', 'steady']]), fileName: 'data.csv', contentType: 'text/csv' },
];

const searchBody = async (token: string, body: Record<string, unknown>) => expectSuccess(await fx.c.search(token, body), 200);

describe('search inside documents', () => {
  for (const format of FORMATS) {
    it(`finds a word that only the ${format.name} file's content holds, with a marked snippet, and through a one-letter typo`, async () => {
      const { c } = fx;
      const word = randomWord(11);
      const { fileId } = await c.uploadOk(owner.token, { title: 'Quarterly review', description: 'Minutes of the meeting' },
        await format.file(word), format.fileName, format.contentType);
      const item = await eventually(async () => {
        const body = await searchBody(reader.token, { search: word });
        const found = (body.results as Item[]).find((r) => r.id === fileId);
        assert.ok(found, `${word} not found yet`);
        return found;
      }, EXTRACTED);
      assertKeys(item, ['id', 'title', 'link', 'description', 'category', 'tag', 'snippet'], 'search item');
      assert.match(item.snippet, new RegExp(`<mark>${word}</mark>`, 'i'), item.snippet);
      const viaTypo = await searchBody(reader.token, { search: typo(word) });
      assert.ok((viaTypo.results as Item[]).some((r) => r.id === fileId), `typo ${typo(word)} of ${word}`);
    });
  }

  it('ranks a title match above a match in the content', async () => {
    const { c } = fx;
    const word = randomWord(11);
    const { fileId: inContent } = await c.uploadOk(owner.token, { title: 'Plain title', description: 'Plain description' },
      await makePdf(paragraphs(word)), 'a.pdf', 'application/pdf');
    await eventually(async () => assert.equal((await searchBody(reader.token, { search: word })).total, 1), EXTRACTED);
    const { fileId: inTitle } = await c.uploadOk(owner.token, { title: `About ${word}` });
    const order = await eventually(async () => {
      const body = await searchBody(reader.token, { search: word });
      assert.equal(body.total, 2);
      return (body.results as Item[]).map((r) => r.id);
    });
    assert.deepEqual(order, [inTitle, inContent]);
  });

  it('escapes the snippet: markup in the document comes back as text', async () => {
    const { c } = fx;
    const word = randomWord(11);
    const text = new TextEncoder().encode(`Danger <script>alert(1)</script> & ${word} "quoted"`);
    const { fileId } = await c.uploadOk(owner.token, { title: 'Plain', description: 'Plain' }, text, 'x.txt', 'text/plain');
    const item = await eventually(async () => {
      const found = ((await searchBody(reader.token, { search: word })).results as Item[]).find((r) => r.id === fileId);
      assert.ok(found);
      return found;
    }, EXTRACTED);
    assert.ok(!item.snippet.includes('<script>'), item.snippet);
    assert.match(item.snippet, /&lt;script&gt;/);
    assert.match(item.snippet, new RegExp(`<mark>${word}</mark>`));
  });

  it('the view page shows the extraction status and the first lines of the text', async () => {
    const { c } = fx;
    const word = randomWord(11);
    const { fileId } = await c.uploadOk(owner.token, {}, makeDocx(paragraphs(word)), 'v.docx',
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document');
    const page = await eventually(async () => {
      const res = await c.view(fileId);
      assert.equal(res.status, 200);
      assert.match(res.text, /Status: <strong>extracted<\/strong>/);
      return res.text;
    }, EXTRACTED);
    assert.ok(page.includes(word), 'the first lines of the text');
    assert.ok(page.includes('The committee met on Tuesday'));
  });

  it('records a failed extraction without failing the upload: encrypted PDF, unsupported type', async () => {
    const { c } = fx;
    const { fileId: encrypted, res } = await c.uploadOk(owner.token, {}, await encryptedPdf(), 'secret.pdf', 'application/pdf');
    assert.equal(res.status, 201);
    const { fileId: binary } = await c.uploadOk(owner.token, {}, new Uint8Array([0, 1, 2, 3, 255]), 'blob.bin', 'application/octet-stream');
    for (const [fileId, reason] of [[encrypted, /encrypted/], [binary, /not read for search/]] as const) {
      await eventually(async () => {
        const page = await c.view(fileId);
        assert.match(page.text, /Status: <strong>failed<\/strong>/);
        assert.match(page.text, reason);
      }, EXTRACTED);
    }
    // The file itself is served as before.
    expectSuccess(await c.download(reader.token, encrypted), 200);
  });

  it('the extractor\'s internal route is not reachable through the gateway', async () => {
    const { c } = fx;
    const { fileId } = await c.uploadOk(owner.token, {});
    expectError(await c.json('GET', `/internal/V1/files/${fileId}/extraction`, owner.token), 404, 'Not found');
    const forged = { blobKey: 'x', report: { ok: true, format: 'text', extractor: 'x', text: 'forged', truncated: false, language: null, durationMs: 1 } };
    expectError(await c.json('POST', `/internal/V1/files/${fileId}/extraction`, owner.token, forged), 404, 'Not found');
  });

  it('statistics count files, not extractions', async () => {
    const { c } = fx;
    const solo = await c.register();
    const word = randomWord(11);
    await c.uploadOk(solo.token, { title: 'Solo', description: 'Solo' }, makeMarkdown(paragraphs(word)), 's.md', 'text/markdown');
    await eventually(async () => assert.equal((await searchBody(reader.token, { search: word })).total, 1), EXTRACTED);
    const stats = expectSuccess(await c.stats(solo.token), 200);
    assert.deepEqual(stats.data, { total_comments: 0, total_files: 1, total_views: 0, total_downloads: 0, total_sales: 0 });
  });
});

describe('search: facets, filters and cursors', () => {
  /** Five files sharing a word: two categories, three licences, overlapping tags. */
  const corpus = async () => {
    const { c } = fx;
    const word = randomWord(12);
    const [catA, catB] = [`Alpha${randomWord(8)}`, `Beta${randomWord(8)}`];
    const specs = [
      { cat: catA, license: 'CC BY', tags: 'red,blue' },
      { cat: catA, license: 'CC BY', tags: 'red' },
      { cat: catA, license: 'CC0', tags: 'Red,green' },
      { cat: catB, license: 'CC BY-SA', tags: 'blue' },
      { cat: catB, license: 'CC BY', tags: 'green' },
    ];
    const files: { fileId: string; categoryId: string }[] = [];
    for (const [i, spec] of specs.entries()) {
      const { fileId, res } = await c.uploadOk(owner.token, {
        title: `Item ${i} ${word}`, new_category_name: spec.cat, cc_license: spec.license, tags: spec.tags,
      });
      files.push({ fileId, categoryId: String(res.body.category_id) });
    }
    await eventually(async () => assert.equal((await searchBody(reader.token, { search: word })).total, 5));
    return { word, files, catA, catB, idA: files[0]!.categoryId, idB: files[3]!.categoryId };
  };

  it('facets count categories, licences and tags over every match, not only the page', async () => {
    const { word, catA, catB, idA, idB } = await corpus();
    const body = await searchBody(reader.token, { search: word, facets: true, per_page: 2 });
    assert.equal(body.results.length, 2);
    assertKeys(body.facets, ['category', 'license', 'tag'], 'facets');
    assert.deepEqual(body.facets.category, [{ id: idA, name: catA, count: 3 }, { id: idB, name: catB, count: 2 }]);
    assert.deepEqual(body.facets.license, [{ value: 'CC BY', count: 3 }, { value: 'CC BY-SA', count: 1 }, { value: 'CC0', count: 1 }]);
    assert.deepEqual(body.facets.tag, [{ value: 'red', count: 3 }, { value: 'blue', count: 2 }, { value: 'green', count: 2 }]);
    // Not asked: not there.
    assert.equal('facets' in (await searchBody(reader.token, { search: word })), false);
  });

  it('filters narrow the results by category, licence and tags (every tag listed)', async () => {
    const { word, files, idA } = await corpus();
    const idsOf = async (filters: Record<string, unknown>) =>
      ((await searchBody(reader.token, { search: word, filters })).results as Item[]).map((r) => r.id).sort();
    const [f0, f1, f2, f3, f4] = files.map((f) => f.fileId);
    assert.deepEqual(await idsOf({ category_id: idA }), [f0, f1, f2].sort());
    assert.deepEqual(await idsOf({ category_id: Number(idA) }), [f0, f1, f2].sort());
    assert.deepEqual(await idsOf({ license: 'CC BY' }), [f0, f1, f4].sort());
    assert.deepEqual(await idsOf({ tags: ['RED'] }), [f0, f1, f2].sort());
    assert.deepEqual(await idsOf({ tags: ['red', 'blue'] }), [f0]);
    assert.deepEqual(await idsOf({ category_id: idA, license: 'CC BY', tags: ['red'] }), [f0, f1].sort());
    assert.deepEqual(await idsOf({ tags: ['blue'], license: 'CC BY-SA' }), [f3]);
    const facets = (await searchBody(reader.token, { search: word, filters: { license: 'CC BY' }, facets: true })).facets;
    assert.deepEqual(facets.license, [{ value: 'CC BY', count: 3 }]);
    expectError(await fx.c.search(reader.token, { search: word, filters: { license: 'CC0', tags: ['blue'] } }), 404, 'No results found');
  });

  it('refuses malformed facets, filters and cursors with clear messages', async () => {
    const { c } = fx;
    const word = randomWord(12);
    for (const filters of ['red', ['red'], { category_id: 'abc' }, { category_id: 0 }, { license: 'GPL' }, { tags: 'x'.repeat(2000) }, { tags: [1] }]) {
      expectError(await c.search(reader.token, { search: word, filters }), 400, 'Invalid filters');
    }
    for (const facets of ['yes', 1, {}]) expectError(await c.search(reader.token, { search: word, facets }), 400, 'facets must be a boolean');
    for (const cursor of ['not-a-cursor', 'x'.repeat(5000), 42]) {
      expectError(await c.search(reader.token, { search: word, cursor }), 400, 'Invalid or expired cursor');
    }
  });

  it('walks every result with next_cursor: no duplicates, no gaps, pages numbered, the last without a cursor', async () => {
    const { word, files } = await corpus();
    const seen: string[] = [];
    let body = await searchBody(reader.token, { search: word, per_page: 2 });
    const pages: number[] = [];
    for (;;) {
      seen.push(...(body.results as Item[]).map((r) => r.id));
      pages.push(body.page);
      assert.equal(body.total, 5);
      if (body.next_cursor === undefined) break;
      assert.equal(typeof body.next_cursor, 'string');
      body = await searchBody(reader.token, { search: word, per_page: 2, cursor: body.next_cursor });
    }
    assert.deepEqual(pages, [1, 2, 3]);
    assert.deepEqual([...seen].sort(), files.map((f) => f.fileId).sort());
    // A cursor belongs to its search.
    const first = await searchBody(reader.token, { search: word, per_page: 2 });
    expectError(await fx.c.search(reader.token, { search: randomWord(12), cursor: first.next_cursor }), 400, 'Invalid or expired cursor');
  });

  it('a cursor walk keeps to the files of its first page, and leaves out at once a file deleted or disabled meanwhile', async () => {
    const { c } = fx;
    const { word, files } = await corpus();
    const first = await searchBody(reader.token, { search: word, per_page: 2 });
    const firstIds = (first.results as Item[]).map((r) => r.id);
    // After the first page: a new file matching better than any; a file of a later page deleted, another disabled.
    await c.uploadOk(owner.token, { title: `${word} ${word} ${word}`, description: word, tags: word });
    const [deleted, disabled] = files.map((f) => f.fileId).filter((id) => !firstIds.includes(id)) as [string, string];
    expectSuccess(await c.del(owner.token, deleted), 200);
    expectSuccess(await c.update(owner.token, { id: disabled, enabled: false }), 200);
    await eventually(async () => assert.equal((await searchBody(reader.token, { search: word })).total, 4));
    const seen = [...firstIds];
    let body = first;
    while (body.next_cursor !== undefined) {
      body = await searchBody(reader.token, { search: word, per_page: 2, cursor: body.next_cursor });
      assert.equal(body.total, 5, 'the total as of the first page');
      seen.push(...(body.results as Item[]).map((r) => r.id));
    }
    // The files of the first page's snapshot, without the two nobody may see any more (nor their title or text).
    assert.deepEqual([...seen].sort(), files.map((f) => f.fileId).filter((id) => id !== deleted && id !== disabled).sort());
  });
});
