// Raw HTTP/1.1 over a TCP socket: the fuzz suite writes every byte itself (broken request lines,
// duplicated headers, bad framing, aborted bodies) and parses the answers itself, so that a
// response Node's own HTTP client would refuse to read is still seen, and a connection the server
// drops without answering is told apart from one it answered.
import net from 'node:net';

/** One connection's worth of bytes to send, and what the sender expects of it. */
export interface Wire {
  /** Written in order, `gapMs` apart. */
  chunks: Buffer[];
  gapMs: number;
  /**
   * `complete`: every request in `chunks` is fully sent, so each deserves an answer.
   * `abort`: the bytes stop in the middle of a request and the socket is closed after
   * `closeAfterMs`; an answer is allowed but not owed.
   */
  mode: 'complete' | 'abort';
  closeAfterMs: number;
  /** The methods of the requests in order (a HEAD answer has no body); one per expected response. */
  methods: string[];
}

export interface WireResponse {
  status: number;
  reason: string;
  version: string;
  headers: Array<[string, string]>;
  body: Buffer;
  /** Raw head, for reports. */
  head: string;
}

export interface WireResult {
  responses: WireResponse[];
  /** `answered`: got every response owed; `closed`: the server closed (or reset) first; `timeout`: no end within the bound; `aborted`: the client (an abort-mode wire) hung up first. */
  end: 'answered' | 'closed' | 'timeout' | 'aborted';
  /** A socket error seen (ECONNRESET, EPIPE...), if any. */
  error?: string;
  /** Bytes received that do not parse as HTTP responses. */
  garbage?: string;
  /** Every byte written (the request was fully on the wire). */
  sentAll: boolean;
}

export const header = (res: WireResponse, name: string): string | undefined => {
  const lower = name.toLowerCase();
  return res.headers.find(([k]) => k.toLowerCase() === lower)?.[1];
};

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Parsed {
  responses: WireResponse[];
  /** Bytes consumed by complete responses. */
  consumed: number;
  /** A response whose body runs until the connection closes has started. */
  untilClose?: { head: Omit<WireResponse, 'body'>; bodyStart: number };
  error?: string;
}

/** Parses as many complete responses as `buf` holds. 1xx interim responses are skipped. */
export function parseResponses(buf: Buffer, methods: string[], atEof: boolean): Parsed {
  const out: WireResponse[] = [];
  let pos = 0;
  for (;;) {
    if (pos >= buf.length) return { responses: out, consumed: pos };
    const headEnd = buf.indexOf('\r\n\r\n', pos);
    if (headEnd === -1) {
      if (atEof) return { responses: out, consumed: pos, error: `truncated response head: ${JSON.stringify(buf.subarray(pos, pos + 200).toString('latin1'))}` };
      return { responses: out, consumed: pos };
    }
    const head = buf.subarray(pos, headEnd).toString('latin1');
    const lines = head.split('\r\n');
    const m = /^(HTTP\/\d\.\d) (\d{3})(?: (.*))?$/.exec(lines[0] ?? '');
    if (m === null) return { responses: out, consumed: pos, error: `not an HTTP status line: ${JSON.stringify((lines[0] ?? '').slice(0, 200))}` };
    const headers: Array<[string, string]> = [];
    for (const line of lines.slice(1)) {
      const i = line.indexOf(':');
      if (i <= 0) return { responses: out, consumed: pos, error: `bad response header line: ${JSON.stringify(line.slice(0, 200))}` };
      headers.push([line.slice(0, i).trim(), line.slice(i + 1).trim()]);
    }
    const status = Number(m[2]);
    const base = { status, reason: m[3] ?? '', version: m[1] ?? '', headers, head };
    let bodyStart = headEnd + 4;
    if (status >= 100 && status < 200) {
      pos = bodyStart;
      continue;
    }
    const method = (methods[out.length] ?? 'GET').toUpperCase();
    const get = (name: string): string | undefined => headers.find(([k]) => k.toLowerCase() === name)?.[1];
    const te = get('transfer-encoding');
    const cl = get('content-length');
    if (method === 'HEAD' || status === 204 || status === 304) {
      out.push({ ...base, body: Buffer.alloc(0) });
      pos = bodyStart;
      continue;
    }
    if (te !== undefined && /chunked/i.test(te)) {
      const parts: Buffer[] = [];
      let p = bodyStart;
      let done = false;
      for (;;) {
        const lineEnd = buf.indexOf('\r\n', p);
        if (lineEnd === -1) break;
        const size = parseInt(buf.subarray(p, lineEnd).toString('latin1').split(';')[0] ?? '', 16);
        if (!Number.isFinite(size)) return { responses: out, consumed: pos, error: 'bad chunk size in response' };
        if (size === 0) {
          // trailers end with an empty line
          const trailerEnd = buf.indexOf('\r\n\r\n', lineEnd);
          if (buf.subarray(lineEnd, lineEnd + 4).toString('latin1') === '\r\n\r\n') {
            p = lineEnd + 4;
            done = true;
          } else if (trailerEnd !== -1) {
            p = trailerEnd + 4;
            done = true;
          }
          break;
        }
        if (buf.length < lineEnd + 2 + size + 2) break;
        parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
        p = lineEnd + 2 + size + 2;
      }
      if (!done) {
        if (atEof) return { responses: out, consumed: pos, error: 'chunked response body cut short' };
        return { responses: out, consumed: pos };
      }
      out.push({ ...base, body: Buffer.concat(parts) });
      pos = p;
      continue;
    }
    if (cl !== undefined) {
      const n = Number(cl);
      if (!Number.isSafeInteger(n) || n < 0) return { responses: out, consumed: pos, error: `bad Content-Length in response: ${cl}` };
      if (buf.length < bodyStart + n) {
        if (atEof) return { responses: out, consumed: pos, error: `response body cut short (${buf.length - bodyStart} of ${n} bytes)` };
        return { responses: out, consumed: pos };
      }
      out.push({ ...base, body: Buffer.from(buf.subarray(bodyStart, bodyStart + n)) });
      pos = bodyStart + n;
      continue;
    }
    // No framing: the body runs to the end of the connection.
    if (atEof) {
      out.push({ ...base, body: Buffer.from(buf.subarray(bodyStart)) });
      return { responses: out, consumed: buf.length };
    }
    bodyStart = Math.min(bodyStart, buf.length);
    return { responses: out, consumed: pos, untilClose: { head: base, bodyStart } };
  }
}

/** Sends `wire` on a fresh connection and collects the answers, never waiting longer than `timeoutMs`. */
export async function exchange(host: string, port: number, wire: Wire, timeoutMs: number): Promise<WireResult> {
  return await new Promise<WireResult>((resolve) => {
    const socket = net.connect({ host, port });
    const received: Buffer[] = [];
    let size = 0;
    let settled = false;
    let sentAll = false;
    let error: string | undefined;
    const owed = wire.methods.length;

    const finish = (end: WireResult['end'], atEof: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const buf = Buffer.concat(received, size);
      const parsed = parseResponses(buf, wire.methods, atEof);
      const result: WireResult = { responses: parsed.responses, end, sentAll };
      if (error !== undefined) result.error = error;
      if (parsed.error !== undefined) result.garbage = parsed.error;
      else if (end === 'timeout' && parsed.untilClose === undefined && parsed.consumed < buf.length) {
        result.garbage = `partial response when the time ran out: ${JSON.stringify(buf.subarray(parsed.consumed, parsed.consumed + 200).toString('latin1'))}`;
      }
      resolve(result);
    };

    const timer = setTimeout(() => finish('timeout', false), timeoutMs);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      received.push(chunk);
      size += chunk.length;
      if (wire.mode === 'complete' || sentAll) {
        const parsed = parseResponses(Buffer.concat(received, size), wire.methods, false);
        if (parsed.responses.length >= owed && parsed.untilClose === undefined && parsed.error === undefined) finish('answered', false);
      }
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      error = err.code ?? err.message;
    });
    socket.on('close', () => finish('closed', true));
    socket.on('end', () => {
      // the server half-closed: whatever it sent is all there will be
      finish('closed', true);
    });

    socket.once('connect', () => {
      void (async () => {
        for (let i = 0; i < wire.chunks.length; i++) {
          if (settled || socket.destroyed) return;
          if (i > 0 && wire.gapMs > 0) await sleep(wire.gapMs);
          if (settled || socket.destroyed) return;
          const chunk = wire.chunks[i];
          if (chunk === undefined || chunk.length === 0) continue;
          const flushed = socket.write(chunk);
          if (!flushed) {
            await new Promise<void>((r) => {
              const done = (): void => {
                socket.off('drain', done);
                socket.off('close', done);
                r();
              };
              socket.once('drain', done);
              socket.once('close', done);
            });
          }
        }
        if (settled || socket.destroyed) return;
        sentAll = true;
        if (wire.mode === 'abort') {
          await sleep(wire.closeAfterMs);
          // The client hangs up, not the server: an answer still arriving is cut by the client,
          // so what came is not read as the server's whole answer (not at the server's EOF).
          finish('aborted', false);
        }
      })();
    });
  });
}

/** A bash reproduction: the bytes as a $'...' string written to a /dev/tcp socket (long requests abbreviated). */
export function reproduction(bytes: Buffer, port: number | string = '$PORT', limit = 1500): string {
  const shown = bytes.subarray(0, limit);
  let s = '';
  for (const b of shown) {
    if (b === 0x5c) s += '\\\\';
    else if (b === 0x27) s += "\\'";
    else if (b === 0x0d) s += '\\r';
    else if (b === 0x0a) s += '\\n';
    else if (b === 0x09) s += '\\t';
    else if (b >= 0x20 && b < 0x7f) s += String.fromCharCode(b);
    else s += `\\x${b.toString(16).padStart(2, '0')}`;
  }
  const more = bytes.length > limit ? ` # first ${limit} of ${bytes.length} bytes; replay the whole request with FUZZ_REPLAY` : '';
  return `exec 3<>/dev/tcp/127.0.0.1/${port}; printf '%s' $'${s}' >&3; timeout 30 cat <&3${more}`;
}
