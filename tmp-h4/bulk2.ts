import { MongoClient } from 'mongodb';
import { startFaultProxy } from '../libs/projection/test/fault-proxy.ts';
const proxy = await startFaultProxy({ host: '127.0.0.1', port: 27018 });
const m = new MongoClient(`mongodb://${proxy.address}/`, { serverSelectionTimeoutMS: 500, retryWrites: false });
await m.db('x').command({ ping: 1 });
proxy.set('down');
await m.db('x').command({ ping: 1 }).catch((e) => console.log('ping', e.name, e.message));
try { await m.db('x').collection('y').insertMany([{ a: 1 }], { ordered: true }); } catch (e) {
  const x = e as any; console.log(x.name, Object.getOwnPropertyNames(x), x.beforeHandshake, x.cause?.name, x.cause?.beforeHandshake, x.errorResponse, x.message);
}
process.exit(0);
