import { createServer } from 'node:net';
import { MongoClient } from 'mongodb';
import { Client as Es } from '@elastic/elasticsearch';
import { Client as Minio } from 'minio';
import { isTransient } from '../libs/http/src/errors.ts';

const frozen = createServer(() => {}); // accepts, never answers
await new Promise<void>((r) => frozen.listen(0, '127.0.0.1', r));
const fport = (frozen.address() as { port: number }).port;
const closed = 1; // nothing listens
const show = async (label: string, f: () => Promise<unknown>) => {
  const t = Date.now();
  try { await f(); console.log(label, 'ok?'); } catch (e) {
    const x = e as any;
    console.log(label, Date.now() - t, 'ms', x?.name, x?.code, x?.constructor?.name, JSON.stringify(x?.message)?.slice(0, 120), 'transient=', isTransient(e), 'cause', x?.cause?.name, x?.cause?.code);
  }
};
for (const port of [closed, fport]) {
  const m = new MongoClient(`mongodb://127.0.0.1:${port}/`, { serverSelectionTimeoutMS: 2000, connectTimeoutMS: 2000, socketTimeoutMS: 3000 });
  await show(`mongo ${port}`, () => m.db('x').command({ ping: 1 }));
  await m.close().catch(() => {});
  const es = new Es({ node: `http://127.0.0.1:${port}`, requestTimeout: 2000, maxRetries: 1 });
  await show(`es ${port}`, () => es.search({ index: 'x' }));
  const mc = new Minio({ endPoint: '127.0.0.1', port, useSSL: false, accessKey: 'a', secretKey: 'bbbbbbbb', region: 'us-east-1' });
  (mc as any).setRequestOptions?.({ timeout: 2000 });
  await show(`minio stat ${port}`, () => mc.statObject('bucket1', 'k'));
  await show(`minio get ${port}`, () => mc.getObject('bucket1', 'k'));
}
frozen.close(); process.exit(0);
