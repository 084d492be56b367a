// docshare_store_commands_total: the driver's commandStarted events, counted by command and collection.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { collectionOf, countStoreCommands, STORE_COMMANDS_METRIC, type StartedCommand } from '../src/store-commands.ts';

const samples = async (registry: Registry): Promise<Map<string, number>> => {
  const metric = registry.getSingleMetric(STORE_COMMANDS_METRIC);
  assert.ok(metric, 'the counter is registered');
  const { values } = await metric.get();
  return new Map(values.map((v) => [`${String(v.labels.command)} ${String(v.labels.collection)}`, v.value]));
};

describe('store command counter', () => {
  it('counts each started command by name and collection', async () => {
    const client = new EventEmitter();
    const registry = new Registry();
    countStoreCommands(client, registry);
    const started = (event: StartedCommand): boolean => client.emit('commandStarted', event);
    started({ commandName: 'insert', command: { insert: 'events', documents: [{ _id: 'x', secret: 's3cr3t' }] } });
    started({ commandName: 'insert', command: { insert: 'events', documents: [] } });
    started({ commandName: 'update', command: { update: 'projection_checkpoints', updates: [{ q: { _id: 'files/1' } }] } });
    started({ commandName: 'getMore', command: { getMore: 12345n, collection: 'events' } });
    started({ commandName: 'aggregate', command: { aggregate: 1, pipeline: [] } });
    started({ commandName: 'ping', command: { ping: 1 } });
    assert.deepEqual(Object.fromEntries(await samples(registry)), {
      'insert events': 2,
      'update projection_checkpoints': 1,
      'getMore events': 1,
      'aggregate ': 1,
      'ping ': 1,
    });
  });

  it('never labels with a value: only names that look like collection and command names', async () => {
    assert.equal(collectionOf({ commandName: 'find', command: { find: 'files_files', filter: { owner: 'u' } } }), 'files_files');
    assert.equal(collectionOf({ commandName: 'find', command: { find: 'a name\nwith a newline' } }), '');
    assert.equal(collectionOf({ commandName: 'find', command: { find: 'x'.repeat(121) } }), '');
    assert.equal(collectionOf({ commandName: 'hello', command: { hello: true } }), '');
    const client = new EventEmitter();
    const registry = new Registry();
    countStoreCommands(client, registry);
    client.emit('commandStarted', { commandName: 'weird name!', command: {} });
    const text = await registry.metrics();
    assert.match(text, /docshare_store_commands_total\{command="other",collection=""\} 1/);
    assert.doesNotMatch(text, /weird/);
  });

  it('a second client counts into the same counter of a registry', async () => {
    const registry = new Registry();
    const [a, b] = [new EventEmitter(), new EventEmitter()];
    const first = countStoreCommands(a, registry);
    const second = countStoreCommands(b, registry);
    assert.equal(first, second);
    a.emit('commandStarted', { commandName: 'find', command: { find: 'leases' } });
    b.emit('commandStarted', { commandName: 'find', command: { find: 'leases' } });
    assert.equal((await samples(registry)).get('find leases'), 2);
  });
});
