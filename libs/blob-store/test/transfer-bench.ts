// Transfer benchmark (not a test): how close the MinIO adapter comes to minio-js used directly.
//
//   set -a; . <data>/stack.env; set +a
//   node libs/blob-store/test/transfer-bench.ts
//
// Env: MINIO_ENDPOINT, MINIO_ACCESS_KEY, MINIO_SECRET_KEY (required); BENCH_MIB (512): file size;
// BENCH_RUNS (3): runs of each step, the median is reported; BENCH_PART_MIB (adapter default),
// BENCH_IN_FLIGHT (adapter default): the adapter's partSize and partsInFlight; BENCH_DIR (tmpdir):
// where the source file is written; BENCH_STEPS (all): the steps to run, comma-separated names
// (the gets need the puts before them).
//
// Steps, each run in a fresh child process (so one step's heap does not hide the next one's),
// timed in MiB/s, with the child's growth over the step of RSS and of live memory (heap and
// ArrayBuffers), sampled every 50 ms right after a forced GC (without it, the growth measured is
// mostly garbage not collected yet: a fresh process with room to spare collects lazily):
//   direct put    minio-js putObject(fs stream, size): the ceiling for a put
//   adapter put   makeMinioBlobStore().put(fs stream, size unknown, maxBytes): what an upload does
//   direct get    minio-js getObject, read to the end: the ceiling for a get
//   adapter get   BlobStore.get, read to the end
//   adapter hop   BlobStore.get piped into an HTTP answer (as docs-command's /files/:id/content
//                 streams it), read by curl (another process, as the gateway or a client is)
//   presigned     curl reading BlobStore.presignGet's URL (a redirected download)
// A fresh random bucket is used and removed afterwards.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Client } from 'minio';
import { makeMinioBlobStore, parseEndPoint } from '../src/minio-blob-store.ts';

const MiB = 1024 * 1024;
const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (a running MinIO: MINIO_ENDPOINT, MINIO_ACCESS_KEY, MINIO_SECRET_KEY)`);
  return value;
};
const num = (name: string, fallback?: number): number | undefined => {
  const value = process.env[name];
  return value === undefined || value === '' ? fallback : Number(value);
};
const endPoint = env('MINIO_ENDPOINT');
const accessKey = env('MINIO_ACCESS_KEY');
const secretKey = env('MINIO_SECRET_KEY');
const mib = num('BENCH_MIB', 512)!;
const runs = num('BENCH_RUNS', 3)!;
const partMib = num('BENCH_PART_MIB');
const partsInFlight = num('BENCH_IN_FLIGHT');
const size = mib * MiB;

const direct = new Client({ ...parseEndPoint(endPoint), accessKey, secretKey });
const bucket = `docshare-bench-${randomUUID().slice(0, 12)}`;

/** Reads a stream to its end without keeping it; resolves with the byte count. */
const drain = async (body: Readable): Promise<number> => {
  let n = 0;
  for await (const chunk of body) n += (chunk as Buffer).length;
  return n;
};

interface Measure { mibPerSecond: number; rssGrowthMib: number; liveGrowthMib: number }

const gc = (globalThis as { gc?: () => void }).gc ?? ((): void => {});
const sample = (): { rss: number; live: number } => {
  gc();
  const { rss, heapUsed, arrayBuffers } = process.memoryUsage();
  return { rss, live: heapUsed + arrayBuffers };
};

/** Runs `step`, timing it and sampling memory growth over it. */
const measure = async (step: () => Promise<number>): Promise<Measure> => {
  const base = sample();
  const peak = { ...base };
  const take = (): void => {
    const now = sample();
    peak.rss = Math.max(peak.rss, now.rss);
    peak.live = Math.max(peak.live, now.live);
  };
  const sampler = setInterval(take, 50);
  const started = performance.now();
  const bytes = await step();
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  take();
  if (bytes !== size) throw new Error(`moved ${bytes} bytes, expected ${size}`);
  return { mibPerSecond: bytes / MiB / seconds, rssGrowthMib: (peak.rss - base.rss) / MiB, liveGrowthMib: (peak.live - base.live) / MiB };
};

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

/** The steps by name; each moves the whole file once. */
const stepsFor = async (file: string, bucketName: string): Promise<Array<[string, () => Promise<number>]>> => {
  const store = await makeMinioBlobStore({
    endPoint, accessKey, secretKey, bucket: bucketName, publicEndPoint: endPoint,
    ...(partMib === undefined ? {} : { partSize: partMib * MiB }),
    ...(partsInFlight === undefined ? {} : { partsInFlight }),
  });
  const httpGet = (target: string): Promise<number> => new Promise((resolve, reject) => {
    const curl = spawn('curl', ['-sS', '-o', '/dev/null', '-w', '%{size_download}', target]);
    let out = '';
    curl.stdout.setEncoding('utf8');
    curl.stdout.on('data', (chunk: string) => { out += chunk; });
    curl.on('error', reject);
    curl.on('close', (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`curl exited ${code}`))));
  });
  const hop = async (): Promise<number> => {
    // What docs-command's content route does: the blob's body piped into the answer.
    const server = http.createServer((_req, res) => {
      void store.get('adapter').then((blob) => {
        if (!blob) return res.writeHead(404).end();
        res.writeHead(200, { 'Content-Length': String(blob.size), 'Content-Type': blob.contentType });
        blob.body.on('error', (err) => res.destroy(err));
        res.on('close', () => blob.body.destroy());
        blob.body.pipe(res);
      }, (err: unknown) => res.destroy(err as Error));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      return await httpGet(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    } finally {
      server.close();
    }
  };
  return [
    ['direct put', async () => {
      await direct.putObject(bucketName, 'direct', createReadStream(file), size, { 'Content-Type': 'application/octet-stream' });
      return (await direct.statObject(bucketName, 'direct')).size;
    }],
    // maxBytes as an upload sets it (MAX_UPLOAD_BYTES, here just the file's size): parts are partSize
    // up to 10 000 × partSize, larger beyond.
    ['adapter put', () => store.put('adapter', createReadStream(file), undefined, 'application/octet-stream', { maxBytes: size })],
    ['direct get', async () => drain(await direct.getObject(bucketName, 'direct'))],
    ['adapter get', async () => drain((await store.get('adapter'))!.body)],
    ['adapter hop', hop],
    ['presigned', async () => httpGet(await store.presignGet!('adapter', { expiresInSeconds: 600 }))],
  ];
};

const child = process.argv[2] === '--step';
if (child) {
  // One step in this fresh process; the result is one JSON line.
  const [, , , name, file, bucketName] = process.argv;
  const step = (await stepsFor(file!, bucketName!)).find(([n]) => n === name)?.[1];
  if (!step) throw new Error(`no step ${name}`);
  console.log(JSON.stringify(await measure(step)));
} else {
  const dir = await mkdtemp(join(process.env.BENCH_DIR ?? tmpdir(), 'transfer-bench-'));
  const file = join(dir, 'source.bin');
  try {
    // Random bytes, so nothing on the way can compress them; 1 MiB of randomness repeated.
    const block = randomBytes(MiB);
    await pipeline(async function* () { for (let i = 0; i < mib; i++) yield block; }, createWriteStream(file));
    await direct.makeBucket(bucket);
    const only = process.env.BENCH_STEPS?.split(',').map((name) => name.trim());
    const names = (await stepsFor(file, bucket)).map(([name]) => name).filter((name) => !only || only.includes(name));
    const results = new Map<string, Measure[]>();
    // Interleaved runs, so a noisy moment on a shared machine spreads over every step.
    for (let run = 1; run <= runs; run++) {
      for (const name of names) {
        const out = execFileSync(process.execPath, ['--expose-gc', import.meta.filename, '--step', name, file, bucket], { encoding: 'utf8', env: process.env });
        const m = JSON.parse(out.trim().split('\n').at(-1)!) as Measure;
        results.set(name, [...results.get(name) ?? [], m]);
        console.log(`run ${run} ${name.padEnd(12)} ${m.mibPerSecond.toFixed(0).padStart(5)} MiB/s  rss +${m.rssGrowthMib.toFixed(0)} MiB  live +${m.liveGrowthMib.toFixed(0)} MiB`);
      }
    }
    const summary = (name: string): Measure | undefined => {
      const all = results.get(name);
      return all && {
        mibPerSecond: median(all.map((m) => m.mibPerSecond)),
        rssGrowthMib: Math.max(...all.map((m) => m.rssGrowthMib)),
        liveGrowthMib: Math.max(...all.map((m) => m.liveGrowthMib)),
      };
    };
    console.log(`\n${mib} MiB, ${runs} runs (median speed, largest growth); adapter partSize ${partMib ?? 'default'} MiB, partsInFlight ${partsInFlight ?? 'default'}`);
    for (const name of names) {
      const m = summary(name)!;
      const ceiling = summary(name.endsWith('put') ? 'direct put' : 'direct get')?.mibPerSecond ?? NaN;
      const ratio = Number.isNaN(ceiling) ? '    -' : `${(m.mibPerSecond / ceiling).toFixed(2)}×`;
      console.log(`${name.padEnd(12)} ${m.mibPerSecond.toFixed(0).padStart(5)} MiB/s  ${ratio} direct  rss +${m.rssGrowthMib.toFixed(0)} MiB  live +${m.liveGrowthMib.toFixed(0)} MiB`);
    }
  } finally {
    await direct.removeObjects(bucket, ['direct', 'adapter']).catch(() => {});
    await direct.removeBucket(bucket).catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}
