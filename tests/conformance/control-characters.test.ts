// No control characters in stored text (issue 17, finding 4): every free-text field refuses C0/C1
// controls and bidi embeddings, overrides and isolates with a 400 naming the field; one-line fields
// turn tabs and line breaks into spaces, multi-line fields keep `\n` and `\t` (`\r\n` becomes `\n`).
// docs/api-decisions.md, "Text without control characters".
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_UPLOAD, unique, type RegisteredUser } from '../support/client.ts';
import { expectError, expectSuccess } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';

/** What another user could make a victim's terminal do, and text that reads other than it is stored. */
const HOSTILE: Record<string, string> = {
  'OSC window title': 'a\u001b]0;pwned\u0007b',
  'clear screen': '\u001b[2J\u001b[Hgone',
  'OSC 52 clipboard': 'copy\u001b]52;c;cm0gLXJmIH4=\u0007',
  'C1 CSI': 'x\u009b31my',
  'C1 NEL': 'x\u0085y',
  NUL: 'x\u0000y',
  DEL: 'x\u007fy',
  'backspace': 'safe\u0008\u0008\u0008\u0008evil',
  'bidi override': 'invoice\u202egnp.exe',
  'bidi isolate': 'a\u2066b\u2069c',
};
/** JSON can carry a lone surrogate (`"\ud800"`); a multipart form sends U+FFFD in its place. */
const HOSTILE_JSON: Record<string, string> = { ...HOSTILE, 'lone surrogate': 'x\ud800y' };

let owner: RegisteredUser;
let fan: RegisteredUser;
let fileId: string;
const fx = useServer({}, async () => {
  owner = await fx.c.register();
  fan = await fx.c.register();
  ({ fileId } = await fx.c.uploadOk(owner.token));
});

/** The owner's file list entry of `id` (title, description as stored). */
const listed = async (token: string, id: string): Promise<{ title: string; description: string }> => {
  const body = expectSuccess(await fx.c.files(token, 'per_page=100'), 200);
  const file = (body.files as Array<{ file_id: number; title: string; description: string }>).find((f) => String(f.file_id) === id);
  assert.ok(file, `file ${id} is listed`);
  return file;
};

describe('text fields refuse control characters and bidi overrides', () => {
  it('register: name → 400 "Name contains invalid characters"; email → 400 "Invalid email"', async () => {
    for (const [what, bad] of Object.entries(HOSTILE_JSON)) {
      const name = await fx.c.request('POST', '/api/V1/users/api-register', undefined, { name: `Eve ${bad}`, email: `${unique('eve')}@example.com`, password: 'password123' });
      expectError(name, 400, 'Name contains invalid characters');
      const email = await fx.c.request('POST', '/api/V1/users/api-register', undefined, { name: 'Eve', email: `eve${bad}@example.com`, password: 'password123' });
      assert.equal(email.status, 400, what);
      assert.equal(email.body.message, 'Invalid email', what);
    }
  });

  it('upload: every text field answers its own 400 and stores nothing', async () => {
    const cases: Array<[string, string]> = [
      ['title', 'Title contains invalid characters'],
      ['description', 'Description contains invalid characters'],
      ['tags', 'Tags contain invalid characters'],
      ['new_category_name', 'Category name contains invalid characters'],
      ['category_description', 'Category description contains invalid characters'],
      ['category_tags', 'Category tags contain invalid characters'],
    ];
    const before = expectSuccess(await fx.c.files(owner.token), 200).total as number;
    for (const [field, message] of cases) {
      for (const [what, bad] of Object.entries(HOSTILE)) {
        const res = await fx.c.upload(owner.token, { ...DEFAULT_UPLOAD, [field]: `ok ${bad}` });
        assert.equal(res.status, 400, `${field}, ${what}: ${res.text}`);
        assert.equal(res.body.message, message, `${field}, ${what}`);
      }
    }
    assert.equal(expectSuccess(await fx.c.files(owner.token), 200).total, before, 'no refused upload was stored');
  });

  it('update: title, description and tags → their 400', async () => {
    for (const bad of Object.values(HOSTILE_JSON)) {
      expectError(await fx.c.update(owner.token, { id: fileId, title: `t ${bad}` }), 400, 'Title contains invalid characters');
      expectError(await fx.c.update(owner.token, { id: fileId, description: `d ${bad}` }), 400, 'Description contains invalid characters');
      expectError(await fx.c.update(owner.token, { id: fileId, tags: `a,${bad}` }), 400, 'Tags contain invalid characters');
    }
    const stored = await listed(owner.token, fileId);
    assert.equal(stored.title, DEFAULT_UPLOAD['title']);
  });

  it('comment → 400 "Comment contains invalid characters"', async () => {
    for (const bad of Object.values(HOSTILE_JSON)) {
      expectError(await fx.c.comment(fan.token, { file_id: fileId, comment: `nice ${bad}` }), 400, 'Comment contains invalid characters');
    }
  });

  it('messages of the spec still come first: a missing or too long field is told as before', async () => {
    expectError(await fx.c.upload(owner.token, { ...DEFAULT_UPLOAD, title: '  ' }), 400, 'Title is required');
    expectError(await fx.c.upload(owner.token, { ...DEFAULT_UPLOAD, title: `${'t'.repeat(256)}\u001b` }), 400, 'Title is too long');
    expectError(await fx.c.comment(fan.token, { file_id: fileId, comment: '\u0000'.repeat(5001) }), 400, 'Comment is too long');
  });
});

describe('line breaks: kept where a field has lines, spaces elsewhere', () => {
  it('a title, a name, tags and a category name get spaces for tabs and line breaks', async () => {
    const user = await fx.c.register({ name: 'Ada\tof\r\nLovelace' });
    const { fileId: id, res } = await fx.c.uploadOk(user.token, { title: 'Two\nlines\tand a tab', tags: 'one\ttag,two\ntag', new_category_name: `Cat\n${user.userId}` });
    assert.equal(res.body.category_name, `Cat ${user.userId}`);
    const body = expectSuccess(await fx.c.files(user.token), 200);
    assert.equal(body.user.name, 'Ada of Lovelace');
    assert.equal((await listed(user.token, id)).title, 'Two lines and a tab');
    expectSuccess(await fx.c.update(user.token, { id, title: 'New\r\ntitle' }), 200);
    assert.equal((await listed(user.token, id)).title, 'New title');
  });

  it('a description and a comment keep \\n and \\t; \\r\\n and \\r become \\n', async () => {
    const { fileId: id } = await fx.c.uploadOk(owner.token, { description: 'line one\r\n\tindented\rline three' });
    assert.equal((await listed(owner.token, id)).description, 'line one\n\tindented\nline three');
    const comment = 'first\r\n\tsecond';
    expectSuccess(await fx.c.comment(fan.token, { file_id: id, comment }), 201);
    const received = expectSuccess(await fx.c.comments(owner.token), 200).data as Array<{ comment: string }>;
    assert.ok(received.some((c) => c.comment === 'first\n\tsecond'), JSON.stringify(received));
  });

  it('right-to-left text keeps its marks (U+200E, U+200F, U+061C)', async () => {
    const title = 'שלום\u200f 2024 \u200eabc \u061cمرحبا';
    const { fileId: id } = await fx.c.uploadOk(owner.token, { title });
    assert.equal((await listed(owner.token, id)).title, title);
  });

  it('a file name loses its bidi overrides (control characters too; a raw one in a part header is a malformed body)', async () => {
    const { fileId: id } = await fx.c.uploadOk(owner.token, {}, new TextEncoder().encode('x'), 'invoice\u202egnp\u2066.exe');
    const body = expectSuccess(await fx.c.download(owner.token, id), 200);
    assert.equal(body.original_file_name, 'invoicegnp.exe');
  });
});
