// Sales that mean something (issue 17, item 9): an owner cannot buy their own file, a buyer buys a
// file once, also when two purchases arrive at once (decided on the file's stream, at its version),
// and a buyer's signed link opens what was bought, for as long as it is valid, whatever the sale.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { DocshareError, M, type FileUploaded } from '@docshare/contracts';
import { openFileEventLog, type EventStore } from '@docshare/event-store';
import { openFileClaimStore } from '@docshare/claim-store';
import { makeFsBlobStore, type BlobStore } from '@docshare/blob-store';
import { makeTokens, makeUrlSigner } from '@docshare/auth';
import { makeLogger } from '@docshare/http';
import { makeCommandHandler, type Decider } from '../src/commands/command-handler.ts';
import { makeDocsCommands, type DocsCommands } from '../src/commands/docs-commands.ts';
import {
  decideFile, evolveFile, initialFileState, saleTo, type FileCommand, type FileEventBody, type FileState,
} from '../src/commands/domain/file.ts';

const NOW = '2026-11-20T10:00:00.000Z';
const OWNER = 1;
const BUYER = 2;
const OTHER = 3;

const uploaded: FileUploaded = {
  fileId: 7, ownerId: OWNER, ownerName: 'Ada', title: 'Notes', description: 'Lecture notes', tags: ['math'],
  categoryId: 3, categoryName: 'Science', license: 'CC BY', videoUrl: null, originalFileName: 'notes.pdf',
  contentType: 'application/pdf', size: 10, blobKey: 'f7-x', uploadedAt: NOW,
};
const upload: FileEventBody = { type: 'docs.file.uploaded.v1', data: uploaded };
const update = (changes: Record<string, unknown>): FileEventBody =>
  ({ type: 'docs.file.updated.v1', data: { fileId: 7, ownerId: OWNER, changes, updatedAt: NOW } });
const forSale = update({ forSale: true, price: 5 });
const sold = (saleId: number, buyerId: number, purchasedAt = NOW): FileEventBody =>
  ({ type: 'docs.file.purchased.v1', data: { fileId: 7, ownerId: OWNER, saleId, buyerId, price: 5, purchasedAt } });
const purchase = (actorId: number, saleId = 9): FileCommand => ({ type: 'PurchaseFile', fileId: 7, actorId, saleId, now: NOW });

/** given past events, when a command, then events or a refusal. */
const given = (events: FileEventBody[]) => {
  const state: FileState = events.reduce(evolveFile, initialFileState());
  return {
    state,
    when: (command: FileCommand) => ({
      then: (expected: FileEventBody[]) => assert.deepEqual(decideFile(command, state), expected),
      thenThrows: (kind: DocshareError['kind'], message: string) =>
        assert.throws(() => decideFile(command, state), (e: unknown) =>
          e instanceof DocshareError && e.kind === kind && e.message === message),
    }),
  };
};

describe('purchase decider', () => {
  it('records a first purchase', () => given([upload, forSale]).when(purchase(BUYER)).then([sold(9, BUYER)]));

  it('refuses the owner: 403 "You cannot purchase your own file"', () =>
    given([upload, forSale]).when(purchase(OWNER)).thenThrows('forbidden', M.ownFilePurchase));

  it('records nothing for a buyer who bought the file already', () =>
    given([upload, forSale, sold(9, BUYER)]).when(purchase(BUYER, 10)).then([]));

  it('records nothing for an earlier buyer once the file is no longer for sale (not "File is not for sale")', () =>
    given([upload, forSale, sold(9, BUYER), update({ forSale: false })]).when(purchase(BUYER, 10)).then([]));

  it('still records another buyer', () =>
    given([upload, forSale, sold(9, BUYER)]).when(purchase(OTHER, 10)).then([sold(10, OTHER)]));

  it('keeps each buyer\'s first sale, also in a stream recorded before the rule (repeats in it)', () => {
    const { state } = given([upload, forSale, sold(9, BUYER, 'first'), sold(10, OTHER), sold(11, BUYER, 'again')]);
    assert.equal(state.status, 'active');
    if (state.status !== 'active') return;
    assert.deepEqual([saleTo(state.file, BUYER)?.saleId, saleTo(state.file, BUYER)?.purchasedAt], [9, 'first']);
    assert.equal(saleTo(state.file, OTHER)?.saleId, 10);
    assert.equal(saleTo(state.file, OWNER), undefined);
  });

  it('a sale survives updates of the file', () => {
    const { state } = given([upload, forSale, sold(9, BUYER), update({ price: 8, title: 'New' })]);
    assert.ok(state.status === 'active' && saleTo(state.file, BUYER)?.saleId === 9);
  });
});

const fileDecider: Decider<FileCommand, FileState, FileEventBody> = {
  initialState: initialFileState, evolve: evolveFile, decide: decideFile,
};
const meta = { requestId: 'r' };

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});
const tempDir = async (): Promise<string> => {
  const dir = await mkdtemp(join(tmpdir(), 'docshare-purchase-'));
  dirs.push(dir);
  return dir;
};

const purchasesIn = async (store: EventStore): Promise<number> =>
  (await store.readStream('file-7')).filter(({ event }) => event.type === 'docs.file.purchased.v1').length;

describe('purchases at once', () => {
  it('two replicas (each its own cache and queue) deciding on one stream record one sale', async () => {
    const store = await openFileEventLog(join(await tempDir(), 'events'));
    const setup = makeCommandHandler(store);
    await setup.handle(fileDecider, 'file-7', { type: 'UploadFile', file: uploaded }, NOW, meta);
    await setup.handle(fileDecider, 'file-7', { type: 'UpdateFile', fileId: 7, actorId: OWNER, changes: { forSale: true }, now: NOW }, NOW, meta);
    const replicas = Array.from({ length: 4 }, () => makeCommandHandler(store));
    // Each replica folds the stream first, so all of them decide on the same version.
    for (const replica of replicas) await replica.load(fileDecider, 'file-7');
    const results = await Promise.all(replicas.flatMap((replica, i) => [0, 1].map((j) =>
      replica.handle(fileDecider, 'file-7', purchase(BUYER, 100 + 2 * i + j), NOW, meta))));
    assert.equal(await purchasesIn(store), 1);
    assert.equal(results.filter((r) => r.events.length > 0).length, 1, 'one command recorded the sale');
    const saleIds = new Set(results.map((r) => (r.state.status === 'active' ? saleTo(r.state.file, BUYER)?.saleId : undefined)));
    assert.equal(saleIds.size, 1, 'every command ends on the same sale');
    await store.close();
  });
});

interface Service { commands: DocsCommands; store: EventStore; blobs: BlobStore; ownerId: number; buyerId: number; fileId: number }

let now = new Date('2026-11-20T12:00:00Z');
const TTL = 900;

/** docs-command's use cases on a fresh data dir, with a file of the owner's for sale (`replicas`: that many sharing the store). */
const service = async (replicas = 1): Promise<Service & { others: DocsCommands[] }> => {
  const dir = await tempDir();
  const store = await openFileEventLog(join(dir, 'events'));
  const claims = await openFileClaimStore(join(dir, 'claims'));
  const blobs = await makeFsBlobStore(join(dir, 'blobs'));
  const make = (): DocsCommands => makeDocsCommands({
    events: store, claims, blobs, logger: makeLogger('purchase-test', 'silent'),
    tokens: makeTokens('x'.repeat(48), 3600), signer: makeUrlSigner('y'.repeat(48)),
    publicBaseUrl: 'http://docshare.example', downloadUrlTtlSeconds: TTL, now: () => now, passwordCost: 1024,
  });
  const commands = make();
  const { userId: ownerId } = await commands.register({ name: 'Ada', email: 'ada@example.com', password: 'correct horse' }, meta);
  const { userId: buyerId } = await commands.register({ name: 'Bob', email: 'bob@example.com', password: 'correct horse' }, meta);
  const stored = await commands.uploadSink.store(Readable.from([Buffer.from('the bytes')]), 'text/plain', 1024);
  const { fileId } = await commands.upload(ownerId, { ...stored, fileName: 'a.txt', contentType: 'text/plain' }, {
    title: 'T', description: 'D', tags: ['a'], license: 'CC BY', category: { kind: 'new', name: 'Cat', description: '', tags: [] }, videoUrl: null,
  }, meta);
  await commands.update(ownerId, fileId, { forSale: true, price: 3 }, meta);
  return { commands, store, blobs, ownerId, buyerId, fileId, others: Array.from({ length: replicas - 1 }, make) };
};

const linkOf = (url: string) => {
  const u = new URL(url);
  const [, fileId] = /^\/files\/(\d+)\/content$/.exec(u.pathname) ?? [];
  return { fileId: Number(fileId), expires: u.searchParams.get('expires') ?? undefined, signature: u.searchParams.get('signature') ?? undefined, sale: u.searchParams.get('sale') ?? undefined };
};
/** Opens a link's bytes as the content route does; null: a bad or expired link. */
const open = async (commands: DocsCommands, url: string) => {
  const { fileId, expires, signature, sale } = linkOf(url);
  const opened = await commands.openContent(fileId, expires, signature, () => undefined, sale);
  if (opened?.blob) opened.blob.body.destroy();
  return opened;
};
const refusal = async (promise: Promise<unknown>): Promise<string> => {
  try {
    await promise;
    return 'opened';
  } catch (error) {
    if (error instanceof DocshareError) return `${error.kind}: ${error.message}`;
    throw error;
  }
};

describe('purchase use case', () => {
  it('a repeat answers the first sale, and records nothing', async () => {
    const s = await service();
    const first = await s.commands.purchase(s.buyerId, s.fileId, meta);
    assert.equal(first.created, true);
    const again = await s.commands.purchase(s.buyerId, s.fileId, meta);
    assert.deepEqual([again.created, again.saleId], [false, first.saleId]);
    // Also once the owner has taken it off sale.
    await s.commands.update(s.ownerId, s.fileId, { forSale: false }, meta);
    assert.equal((await s.commands.purchase(s.buyerId, s.fileId, meta)).saleId, first.saleId);
    assert.equal((await s.store.readStream(`file-${s.fileId}`)).filter(({ event }) => event.type === 'docs.file.purchased.v1').length, 1);
    await s.store.close();
  });

  it('parallel purchases by one buyer through three replicas: one sale, every answer names it', async () => {
    const s = await service(3);
    const all = [s.commands, ...s.others];
    const answers = await Promise.all(Array.from({ length: 9 }, (_, i) => all[i % 3]!.purchase(s.buyerId, s.fileId, meta)));
    assert.equal(new Set(answers.map((a) => a.saleId)).size, 1);
    assert.equal(answers.filter((a) => a.created).length, 1);
    assert.equal((await s.store.readStream(`file-${s.fileId}`)).filter(({ event }) => event.type === 'docs.file.purchased.v1').length, 1);
    await s.store.close();
  });

  it('the owner is refused', async () => {
    const s = await service();
    assert.equal(await refusal(s.commands.purchase(s.ownerId, s.fileId, meta)), `forbidden: ${M.ownFilePurchase}`);
    await s.store.close();
  });

  it('the buyer\'s link opens the bytes of a file for sale while valid; the plain download still refuses', async () => {
    now = new Date('2026-11-20T12:00:00Z');
    const s = await service();
    const { downloadUrl } = await s.commands.purchase(s.buyerId, s.fileId, meta);
    assert.match(downloadUrl, /^http:\/\/docshare\.example\/files\/\d+\/content\?sale=\d+&expires=\d+&signature=[0-9a-f]{64}$/);
    assert.ok((await open(s.commands, downloadUrl))?.blob, 'the bytes');
    assert.equal(await refusal(s.commands.authorizeDownload(s.buyerId, s.fileId, meta)), `forbidden: ${M.notDownloadable}`);
    // The price changes: still the buyer's.
    await s.commands.update(s.ownerId, s.fileId, { price: 99 }, meta);
    assert.ok((await open(s.commands, downloadUrl))?.blob);
    // Another sale's number, or no sale at all, under the same signature: a bad link.
    const link = linkOf(downloadUrl);
    assert.equal(await s.commands.openContent(link.fileId, link.expires, link.signature, () => undefined, String(Number(link.sale) + 1)), null);
    assert.equal(await s.commands.openContent(link.fileId, link.expires, link.signature, () => undefined), null);
    // Disabled: refused while disabled, opens again once enabled.
    await s.commands.update(s.ownerId, s.fileId, { enabled: false }, meta);
    assert.equal(await refusal(open(s.commands, downloadUrl)), `forbidden: ${M.notDownloadable}`);
    await s.commands.update(s.ownerId, s.fileId, { enabled: true }, meta);
    assert.ok((await open(s.commands, downloadUrl))?.blob);
    // Expired: the clock passes the link's expiry.
    now = new Date(now.getTime() + (TTL + 1) * 1000);
    assert.equal(await open(s.commands, downloadUrl), null);
    // A fresh one from a repeat purchase works; a deleted file is gone for its buyers too.
    const fresh = (await s.commands.purchase(s.buyerId, s.fileId, meta)).downloadUrl;
    assert.ok((await open(s.commands, fresh))?.blob);
    await s.commands.remove(s.ownerId, s.fileId, meta);
    assert.equal(await refusal(open(s.commands, fresh)), `not_found: ${M.fileNotFound}`);
    await s.store.close();
  });

  it('a link signed for one sale does not open a file whose sales do not include it', async () => {
    const s = await service();
    const { downloadUrl } = await s.commands.purchase(s.buyerId, s.fileId, meta);
    // The signature covers the file id: moving the link to another file is a bad link.
    const link = linkOf(downloadUrl);
    assert.equal(await s.commands.openContent(link.fileId + 1, link.expires, link.signature, () => undefined, link.sale), null);
    await s.store.close();
  });
});
