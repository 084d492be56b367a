// A small HTTP server that speaks the resumable-upload protocol (issue 22's wire design) for the
// SDK's and the CLI's tests: sessions, part URLs in either style (docshare's: JSON + ETag;
// presigned object-store: empty body + ETag), re-signing, completion that checks the etags and
// assembles the file. It holds part answers until `parallel` parts are in flight (or all that
// remain), so a test sees the client's parallelism without timing anything.
import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeSession {
  id: string;
  state: 'pending' | 'completed' | 'aborted' | 'expired';
  meta: Record<string, unknown>;
  size: number;
  partSize: number;
  partCount: number;
  parts: Map<number, { bytes: Buffer; etag: string }>;
  fileId?: string;
}

export interface FakeUploads {
  url: string;
  sessions: Map<string, FakeSession>;
  /** Every request: method and path (query dropped) in order. */
  log: { method: string; path: string }[];
  /** Part PUTs received (part number and session), in order of arrival. */
  puts: { id: string; part: number }[];
  /** The most part PUTs that were in flight at once. */
  maxInFlight: number;
  /** The bytes of the completed file of a session. */
  assembled(id: string): Buffer | undefined;
  /** Makes every part URL given so far invalid (403), as an expiry does. */
  expireUrls(): void;
  close(): Promise<void>;
}

export interface FakeOptions {
  partSize: number;
  /** `docshare`: parts answer JSON + ETag; `presigned`: empty body + ETag (as MinIO). */
  style: 'docshare' | 'presigned';
  /** Parts answered at once: the server waits for this many in flight (or all remaining). */
  parallel: number;
}

export async function fakeUploads(opts: FakeOptions): Promise<FakeUploads> {
  const sessions = new Map<string, FakeSession>();
  const log: FakeUploads['log'] = [];
  const puts: FakeUploads['puts'] = [];
  let generation = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  /** Part answers held, by session. */
  const held = new Map<string, Set<() => void>>();
  let base = '';

  const sign = (id: string, n: number): string => opts.style === 'docshare'
    ? `${base}/api/V1/docs/api-uploads/${id}/parts/${n}?expires=9999999999&signature=g${generation}`
    : `${base}/bucket/f1-${id}?partNumber=${n}&uploadId=s3-${id}&X-Amz-Signature=g${generation}`;
  const missing = (s: FakeSession): { part_number: number; url: string }[] => {
    const out = [];
    for (let n = 1; n <= s.partCount; n += 1) if (!s.parts.has(n)) out.push({ part_number: n, url: sign(s.id, n) });
    return out;
  };
  const view = (s: FakeSession): unknown => ({
    upload_id: s.id, state: s.state, file_name: s.meta['file_name'], size: s.size, part_size: s.partSize, part_count: s.partCount,
    expires_at: '2099-01-01T00:00:00.000Z',
    received: [...s.parts].sort(([a], [b]) => a - b).map(([part_number, p]) => ({ part_number, size: p.bytes.length, etag: p.etag })),
    parts: s.state === 'pending' ? missing(s) : [], ...(s.fileId !== undefined ? { file_id: s.fileId } : {}),
  });
  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  /** Answers the session's held parts once `parallel` are in flight, or every part it still misses is. */
  const release = (s: FakeSession): void => {
    const waiting = held.get(s.id) ?? new Set();
    if (waiting.size >= Math.min(opts.parallel, s.partCount - s.parts.size)) {
      held.delete(s.id);
      for (const f of waiting) f();
    }
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    const url = new URL(req.url ?? '/', 'http://x');
    const isPart = req.method === 'PUT';
    if (isPart) {
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
    }
    let counted = isPart;
    const done = (): void => {
      if (counted) inFlight -= 1;
      counted = false;
    };
    res.on('close', done);
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      log.push({ method: req.method ?? '', path: url.pathname });
      let m: RegExpExecArray | null;
      if (req.method === 'POST' && url.pathname === '/api/V1/docs/api-uploads') {
        const meta = JSON.parse(body.toString()) as Record<string, unknown>;
        const size = Number(meta['size']);
        const s: FakeSession = { id: randomUUID(), state: 'pending', meta, size, partSize: opts.partSize, partCount: Math.ceil(size / opts.partSize), parts: new Map() };
        sessions.set(s.id, s);
        send(res, 201, { status: 'success', message: 'Upload started', upload_id: s.id, part_size: s.partSize, part_count: s.partCount, expires_at: '2099-01-01T00:00:00.000Z', parts: missing(s) });
        return;
      }
      if (req.method === 'POST' && url.pathname === '/api/V1/docs/api-upload') {
        send(res, 201, { status: 'success', message: 'File uploaded successfully', file_id: '1', category_id: '1', category_name: 'Form' });
        return;
      }
      if (isPart) {
        const id = opts.style === 'docshare'
          ? /^\/api\/V1\/docs\/api-uploads\/([^/]+)\/parts\/(\d+)$/.exec(url.pathname)?.[1]
          : /^\/bucket\/f1-(.+)$/.exec(url.pathname)?.[1];
        const n = Number(opts.style === 'docshare' ? url.pathname.split('/').at(-1) : url.searchParams.get('partNumber'));
        const s = id === undefined ? undefined : sessions.get(id);
        const sig = url.searchParams.get(opts.style === 'docshare' ? 'signature' : 'X-Amz-Signature');
        if (s === undefined) return send(res, 404, { status: 'error', message: 'Upload not found' });
        puts.push({ id: s.id, part: n });
        if (sig !== `g${generation}`) return send(res, 403, { status: 'error', message: 'Invalid or expired upload link' });
        if (s.state !== 'pending') return send(res, 409, { status: 'error', message: 'Upload was aborted' });
        const want = Math.min(s.partSize, s.size - (n - 1) * s.partSize);
        if (body.length !== want) return send(res, 400, { status: 'error', message: 'Part size does not match' });
        const etag = `"${createHash('md5').update(body).digest('hex')}"`;
        const waiting = held.get(s.id) ?? new Set();
        held.set(s.id, waiting);
        const answer = (): void => {
          s.parts.set(n, { bytes: body, etag });
          done();
          if (opts.style === 'docshare') send(res, 200, { status: 'success', message: 'Part received', part_number: n, etag }, { ETag: etag });
          else {
            res.writeHead(200, { ETag: etag, 'Content-Length': '0' });
            res.end();
          }
        };
        waiting.add(answer);
        // A client gone before the answer (an interruption): the part was never received.
        res.on('close', () => {
          if (!res.writableEnded) waiting.delete(answer);
        });
        release(s);
        return;
      }
      if ((m = /^\/api\/V1\/docs\/api-uploads\/([^/]+)(\/complete)?$/.exec(url.pathname)) !== null) {
        const s = sessions.get(m[1] ?? '');
        if (s === undefined) return send(res, 404, { status: 'error', message: 'Upload not found' });
        if (req.method === 'GET') return send(res, 200, { status: 'success', upload: view(s) });
        if (req.method === 'DELETE') {
          if (s.state === 'completed') return send(res, 409, { status: 'error', message: 'Upload already completed' });
          s.state = s.state === 'pending' ? 'aborted' : s.state;
          return send(res, 200, { status: 'success', message: 'Upload aborted' });
        }
        if (req.method === 'POST' && m[2] !== undefined) {
          const answer = (): void => send(res, 201, { status: 'success', message: 'File uploaded successfully', file_id: s.fileId, category_id: '7', category_name: 'Big' });
          if (s.state === 'completed') return answer();
          if (s.state !== 'pending') return send(res, 409, { status: 'error', message: `Upload ${s.state}` });
          const listed = (JSON.parse(body.toString() || '{}') as { parts?: { part_number: number; etag: string }[] }).parts;
          for (let n = 1; n <= s.partCount; n += 1) {
            const got = s.parts.get(n);
            const named = listed === undefined ? got?.etag : listed.find((p) => p.part_number === n)?.etag;
            if (got === undefined || named !== got.etag) return send(res, 409, { status: 'error', message: 'Some parts are missing' });
          }
          s.state = 'completed';
          s.fileId = String(100 + [...sessions.values()].filter((x) => x.state === 'completed').length);
          return answer();
        }
      }
      send(res, 404, { status: 'error', message: 'Not found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: base, sessions, log, puts,
    get maxInFlight() {
      return maxInFlight;
    },
    assembled(id) {
      const s = sessions.get(id);
      if (s?.state !== 'completed') return undefined;
      return Buffer.concat([...s.parts].sort(([a], [b]) => a - b).map(([, p]) => p.bytes));
    },
    expireUrls() {
      generation += 1;
    },
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
