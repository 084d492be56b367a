// What the command path reads from its stores: a comment on a known file by a known author, and an
// upload into a category this process has seen, read nothing before they append.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { openFileEventLog } from '@docshare/event-store';
import { openFileClaimStore } from '@docshare/claim-store';
import { makeFsBlobStore } from '@docshare/blob-store';
import { makeTokens, makeUrlSigner } from '@docshare/auth';
import { makeLogger } from '@docshare/http';
import { makeDocsCommands } from '../src/commands/docs-commands.ts';

const dirs: string[] = [];
after(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));
const meta = { requestId: 'req' };

const setUp = async () => {
  const dir = await mkdtemp(join(tmpdir(), 'docs-store-reads-'));
  dirs.push(dir);
  const events = await openFileEventLog(join(dir, 'events'));
  const claims = await openFileClaimStore(join(dir, 'claims'));
  const reads = { streams: 0, claims: 0 };
  const readStream = events.readStream.bind(events);
  events.readStream = (...args: Parameters<typeof readStream>) => {
    reads.streams++;
    return readStream(...args);
  };
  const get = claims.get.bind(claims);
  claims.get = <T>(scope: string, key: string): Promise<T | null> => {
    reads.claims++;
    return get<T>(scope, key);
  };
  const commands = makeDocsCommands({
    events, claims, blobs: await makeFsBlobStore(join(dir, 'blobs')), logger: makeLogger('store-reads-test', 'silent'),
    tokens: makeTokens('x'.repeat(48), 3600), signer: makeUrlSigner('y'.repeat(48)),
    publicBaseUrl: 'http://docshare.example', downloadUrlTtlSeconds: 900, passwordCost: 1024,
  });
  const { userId } = await commands.register({ name: 'Ada', email: 'ada@example.com', password: 'correct horse' }, meta);
  const upload = async (category: string) => {
    const stored = await commands.uploadSink.store(Readable.from([Buffer.from('the bytes')]), 'text/plain', 1024);
    return (await commands.upload(userId, { ...stored, fileName: 'a.txt', contentType: 'text/plain' }, {
      title: 'T', description: 'D', tags: ['a'], license: 'CC BY', category: { kind: 'new', name: category, description: '', tags: [] }, videoUrl: null,
    }, meta)).fileId;
  };
  return { commands, userId, upload, reads, close: () => Promise.all([events.close(), claims.close()]) };
};

describe('docs-command store reads', () => {
  it('a comment by a known author on a known file reads no stream', async () => {
    const { commands, userId, upload, reads, close } = await setUp();
    const fileId = await upload('Cat');
    await commands.comment(userId, fileId, 'first', meta);
    const before = reads.streams;
    await commands.comment(userId, fileId, 'second', meta);
    await commands.comment(userId, fileId, 'third', meta);
    assert.equal(reads.streams, before);
    await close();
  });

  it('an upload into a category this process has seen looks its name up no more', async () => {
    const { upload, reads, close } = await setUp();
    await upload('Cat');
    const before = reads.claims;
    await upload('cat');
    await upload('CAT');
    assert.equal(reads.claims, before);
    await upload('Dog');
    assert.equal(reads.claims, before + 1, 'a new name is looked up');
    await close();
  });
});
