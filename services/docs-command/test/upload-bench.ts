// Upload benchmark (not a test): a multipart upload received by docs-command's readUploadForm and
// stored in MinIO, against minio-js putting the same file directly.
//
//   set -a; . <data>/stack.env; set +a
//   node services/docs-command/test/upload-bench.ts
//
// Env: MINIO_ENDPOINT, MINIO_ACCESS_KEY, MINIO_SECRET_KEY (required); BENCH_MIB (512); BENCH_RUNS (3).
// Steps (median MiB/s of the runs; memory is measured per step, in fresh processes, by
// libs/blob-store/test/transfer-bench.ts):
//   direct put   minio-js putObject(file stream, size): the ceiling
//   streamed     HTTP multipart POST → readUploadForm → the file part straight into the blob store
//                (size unknown, maxBytes = the file's size): what docs-command does now
//   spooled      the same POST → the file part written to a spool file, then read again and put
//                with its size: what docs-command did before
// The HTTP client is curl, another process (as the gateway is for docs-command).
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Request } from 'express';
import { Client } from 'minio';
import { makeMinioBlobStore, parseEndPoint } from '@docshare/blob-store/minio';
import { readUploadForm, type FileSink } from '../src/http/upload-form.ts';

const MiB = 1024 * 1024;
const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (a running MinIO: MINIO_ENDPOINT, MINIO_ACCESS_KEY, MINIO_SECRET_KEY)`);
  return value;
};
const endPoint = env('MINIO_ENDPOINT');
const accessKey = env('MINIO_ACCESS_KEY');
const secretKey = env('MINIO_SECRET_KEY');
const mib = Number(process.env.BENCH_MIB || 512);
const runs = Number(process.env.BENCH_RUNS || 3);
const size = mib * MiB;

const direct = new Client({ ...parseEndPoint(endPoint), accessKey, secretKey });
const bucket = `docshare-bench-${randomUUID().slice(0, 12)}`;
const dir = await mkdtemp(join(tmpdir(), 'upload-bench-'));
const file = join(dir, 'source.bin');

const measure = async (step: () => Promise<number>): Promise<number> => {
  const started = performance.now();
  const bytes = await step();
  const seconds = (performance.now() - started) / 1000;
  if (bytes !== size) throw new Error(`stored ${bytes} bytes, expected ${size}`);
  return bytes / MiB / seconds;
};

try {
  const block = randomBytes(MiB);
  await pipeline(Readable.from((function* () { for (let i = 0; i < mib; i++) yield block; })()), createWriteStream(file));
  await direct.makeBucket(bucket);
  const store = await makeMinioBlobStore({ endPoint, accessKey, secretKey, bucket });

  let n = 0;
  const streamed: FileSink<{ key: string; size: number }> = {
    async store(body, contentType, maxBytes) {
      const key = `streamed-${++n}`;
      return { key, size: await store.put(key, body, undefined, contentType, { maxBytes }) };
    },
    async discard({ key }) { await store.remove(key); },
  };
  // The earlier design: spool the part, then read the spool file again into the store.
  const spooled: FileSink<{ key: string; size: number }> = {
    async store(body, contentType) {
      const key = `spooled-${++n}`;
      const spool = join(dir, `${key}.spool`);
      await pipeline(body, createWriteStream(spool));
      const { size: length } = await stat(spool);
      await store.put(key, createReadStream(spool), length, contentType);
      await rm(spool);
      return { key, size: length };
    },
    async discard({ key }) { await store.remove(key); },
  };
  let sink = streamed;
  const server = http.createServer((req, res) => {
    const request = Object.assign(req, { get: (name: string) => req.headers[name.toLowerCase()] }) as unknown as Request;
    readUploadForm(request, sink, size).then(async (form) => {
      res.end(String(form.file?.size ?? -1));
      await form.discard();
    }, (error: unknown) => { res.statusCode = 500; res.end(String(error)); });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const post = (): Promise<number> => new Promise<number>((resolve, reject) => {
    const curl = spawn('curl', ['-sS', '-F', 'title=Bench', '-F', `file=@${file};type=application/octet-stream`, `http://127.0.0.1:${port}/`]);
    let out = '';
    curl.stdout.setEncoding('utf8');
    curl.stdout.on('data', (chunk: string) => { out += chunk; });
    curl.stderr.pipe(process.stderr);
    curl.on('error', reject);
    curl.on('close', (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`curl exited ${code}: ${out}`))));
  });

  const steps: Array<[string, () => Promise<number>]> = [
    ['direct put', async () => {
      await direct.putObject(bucket, 'direct', createReadStream(file), size);
      return (await direct.statObject(bucket, 'direct')).size;
    }],
    ['streamed', () => { sink = streamed; return post(); }],
    ['spooled', () => { sink = spooled; return post(); }],
  ];
  const results = new Map<string, number[]>();
  for (let run = 1; run <= runs; run++) {
    for (const [name, step] of steps) {
      const speed = await measure(step);
      results.set(name, [...results.get(name) ?? [], speed]);
      console.log(`run ${run} ${name.padEnd(10)} ${speed.toFixed(0).padStart(5)} MiB/s`);
    }
  }
  server.close();
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const ceiling = median(results.get('direct put')!);
  console.log(`\n${mib} MiB, ${runs} runs (median)`);
  for (const [name] of steps) {
    const speed = median(results.get(name)!);
    console.log(`${name.padEnd(10)} ${speed.toFixed(0).padStart(5)} MiB/s  ${(speed / ceiling).toFixed(2)}× direct put`);
  }
} finally {
  const names: string[] = [];
  for await (const item of direct.listObjectsV2(bucket, '', true)) if (typeof item.name === 'string') names.push(item.name);
  await direct.removeObjects(bucket, names).catch(() => {});
  await direct.removeBucket(bucket).catch(() => {});
  await rm(dir, { recursive: true, force: true });
}
