// Dependency-free readiness probes (node >= 18, only `net`).
//   node probe.mjs kafka <host> <port>   Kafka Metadata v4 request (Kafka 1.0 .. 4.x); ok when >= 1 broker is listed
//   node probe.mjs mongo <host> <port>   MongoDB OP_MSG {ping: 1}; ok when the reply has ok: 1
// Exit 0 and print a one-line summary on success; exit 1 with the reason otherwise.
import net from 'node:net';

const [kind, host = '127.0.0.1', portArg] = process.argv.slice(2);
const port = Number(portArg);
const TIMEOUT_MS = 3000;

function exchange(request, isComplete) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    const socket = net.connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete reply within ${TIMEOUT_MS} ms`));
    }, TIMEOUT_MS);
    socket.on('connect', () => socket.write(request));
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      const buf = Buffer.concat(chunks);
      if (isComplete(buf)) {
        clearTimeout(timer);
        socket.end();
        resolve(buf);
      }
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      reject(new Error('connection closed before a complete reply'));
    });
  });
}

const int32Framed = (buf) => buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0);

async function kafka() {
  const clientId = Buffer.from('docshare-probe');
  // request header v1 (api_key=3 Metadata, api_version=4, correlation_id, client_id)
  // + body v4: topics = null (all topics), allow_auto_topic_creation = false.
  // v4 is non-flexible and still served by Kafka 4.x (which dropped Metadata v0..v3).
  const body = Buffer.alloc(2 + 2 + 4 + 2 + clientId.length + 4 + 1);
  let o = 0;
  o = body.writeInt16BE(3, o);
  o = body.writeInt16BE(4, o);
  o = body.writeInt32BE(4242, o);
  o = body.writeInt16BE(clientId.length, o);
  o += clientId.copy(body, o);
  o = body.writeInt32BE(-1, o);
  body.writeInt8(0, o);
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length);
  const reply = await exchange(Buffer.concat([size, body]), int32Framed);
  let r = 4;
  const correlation = reply.readInt32BE(r);
  r += 4;
  if (correlation !== 4242) throw new Error(`unexpected correlation id ${correlation}`);
  r += 4; // throttle_time_ms
  const brokers = reply.readInt32BE(r);
  r += 4;
  if (brokers < 1) throw new Error('metadata lists no broker yet');
  const nodeId = reply.readInt32BE(r);
  r += 4;
  const hostLen = reply.readInt16BE(r);
  r += 2;
  const bHost = reply.toString('utf8', r, r + hostLen);
  r += hostLen;
  const bPort = reply.readInt32BE(r);
  return `kafka metadata: ${brokers} broker(s), node ${nodeId} at ${bHost}:${bPort}`;
}

function bsonPing() {
  const parts = [];
  const ping = Buffer.alloc(1 + 5 + 4);
  ping.writeUInt8(0x10, 0);
  ping.write('ping\0', 1, 'latin1');
  ping.writeInt32LE(1, 6);
  parts.push(ping);
  const dbName = Buffer.from('admin\0');
  const db = Buffer.alloc(1 + 4 + 4);
  db.writeUInt8(0x02, 0);
  db.write('$db\0', 1, 'latin1');
  db.writeInt32LE(dbName.length, 5);
  parts.push(db, dbName);
  const elements = Buffer.concat(parts);
  const doc = Buffer.alloc(4 + elements.length + 1);
  doc.writeInt32LE(doc.length, 0);
  elements.copy(doc, 4);
  return doc;
}

// Reads the top-level field `ok` of a BSON document (double, int32, int64 or bool).
function bsonOk(doc) {
  let i = 4;
  const end = doc.readInt32LE(0) - 1;
  while (i < end) {
    const type = doc[i++];
    const nameEnd = doc.indexOf(0, i);
    const name = doc.toString('utf8', i, nameEnd);
    i = nameEnd + 1;
    let value;
    switch (type) {
      case 0x01: value = doc.readDoubleLE(i); i += 8; break;
      case 0x02: i += 4 + doc.readInt32LE(i); break;
      case 0x03: case 0x04: i += doc.readInt32LE(i); break;
      case 0x05: i += 5 + doc.readInt32LE(i); break;
      case 0x07: i += 12; break;
      case 0x08: value = doc[i] === 1 ? 1 : 0; i += 1; break;
      case 0x09: case 0x11: case 0x12: value = Number(doc.readBigInt64LE(i)); i += 8; break;
      case 0x0a: break;
      case 0x10: value = doc.readInt32LE(i); i += 4; break;
      default: throw new Error(`unsupported BSON type 0x${type.toString(16)} in reply`);
    }
    if (name === 'ok') return value;
  }
  return undefined;
}

async function mongo() {
  const doc = bsonPing();
  const header = Buffer.alloc(16 + 4 + 1);
  header.writeInt32LE(header.length + doc.length, 0); // messageLength
  header.writeInt32LE(4242, 4); // requestID
  header.writeInt32LE(0, 8); // responseTo
  header.writeInt32LE(2013, 12); // OP_MSG
  header.writeUInt32LE(0, 16); // flagBits
  header.writeUInt8(0, 20); // section kind 0 (body)
  const reply = await exchange(Buffer.concat([header, doc]), (b) => b.length >= 4 && b.length >= b.readInt32LE(0));
  const opCode = reply.readInt32LE(12);
  if (opCode !== 2013) throw new Error(`unexpected opCode ${opCode}`);
  if (reply.readInt32LE(8) !== 4242) throw new Error('reply is not for our request');
  if (reply[20] !== 0) throw new Error(`unexpected section kind ${reply[20]}`);
  const ok = bsonOk(reply.subarray(21));
  if (ok !== 1) throw new Error(`ping replied ok=${ok}`);
  return 'mongo wire: {ping: 1} -> {ok: 1}';
}

const probes = { kafka, mongo };
if (!probes[kind] || !Number.isInteger(port)) {
  console.error('usage: node probe.mjs kafka|mongo <host> <port>');
  process.exit(2);
}
try {
  console.log(await probes[kind]());
} catch (err) {
  console.error(`${kind} probe ${host}:${port}: ${err.message}`);
  process.exit(1);
}
