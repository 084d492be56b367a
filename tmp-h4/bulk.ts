import { MongoClient } from 'mongodb';
const m = new MongoClient(`mongodb://127.0.0.1:1/`, { serverSelectionTimeoutMS: 500 });
try { await m.db('x').collection('y').insertMany([{ a: 1 }], { ordered: true }); } catch (e) {
  const x = e as any; console.log(x.name, Object.keys(x), x.beforeHandshake, x.cause?.name, x.errorResponse?.name, x.message);
}
process.exit(0);
