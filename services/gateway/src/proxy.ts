import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import type { RequestHandler } from 'express';
import { pipeline } from 'node:stream';
import {
  BLOB_HANDOFF_HEADER, BLOB_KEY_HEADER, BLOB_RANGE_HEADER, closeEarly, sendUnavailable, stringVar, type Logger,
} from '@docshare/http';
import { perUpstream, perUpstreamUrlVar, UPSTREAM_SERVICES, type Upstream, type UpstreamUrlVar } from '@docshare/contracts/services';
import { isHandoff, serveHandoff, type BlobReader } from './blob-handoff.ts';

/** Headers that belong to one connection, not to the request (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set([
  'connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade',
]);

const forwardable = (headers: IncomingHttpHeaders, drop: ReadonlySet<string>): Record<string, string | string[]> => {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name) && !drop.has(name)) out[name] = value;
  }
  return out;
};

/**
 * A body that came chunked (no Content-Length) goes on chunked. Node frames it so by itself only
 * for some methods: a chunked DELETE or GET would be sent unframed, and the service would read its
 * body as the next request.
 */
const framingOf = (headers: IncomingHttpHeaders): Record<string, string> =>
  headers['transfer-encoding'] !== undefined && headers['content-length'] === undefined ? { 'transfer-encoding': 'chunked' } : {};

const FROM_SERVICE_DROP = new Set([
  'x-request-id', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'ratelimit-policy', 'ratelimit', BLOB_KEY_HEADER, BLOB_RANGE_HEADER,
]);
// x-internal-token: the text extractor's credential for docs-command's internal route
// (INTERNAL_TOKEN_HEADER there), sent on the back network only; never a client's to pass on; nor
// the gateway's request for a file's blob (blob-handoff.ts).
const TO_SERVICE_DROP = new Set(['host', 'x-internal-token', BLOB_HANDOFF_HEADER]);

export interface UpstreamOptions {
  /** Longest wait for the service's answer (its headers), in ms (default 120 000). */
  timeoutMs?: number;
  /**
   * The blob store, for a service that hands a file's bytes over (docs-command's content links):
   * a GET asks for the handoff, and an answer that carries a blob key is served from the store
   * here (blob-handoff.ts), one hop for the bytes instead of two.
   */
  blobs?: () => BlobReader | undefined;
}

/**
 * Forwards a request to a service over HTTP, streaming both bodies (uploads and downloads are
 * never buffered). When the service cannot be reached the client gets the spec's envelope: 503
 * with the route's failure message.
 *
 * A service that answers before it has read the whole body (an upload over the limit) is relayed
 * at once, the client's body is no longer read or forwarded, and the client's connection closes
 * after the answer. A client that goes away aborts the service's request; a service that dies
 * mid-answer cuts the client's (never a whole answer that is not). No stream of either side is
 * without an error listener.
 */
export const httpUpstream = (baseUrl: string, logger: Logger, options: UpstreamOptions = {}): RequestHandler => {
  const target = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const timeoutMs = options.timeoutMs ?? 120_000;
  return (req, res) => {
    let answered = false;
    let incomingDone = false;
    const blobs = req.method === 'GET' ? options.blobs?.() : undefined;
    const outgoing = request({
      protocol: target.protocol, hostname: target.hostname, port: target.port, agent,
      method: req.method, path: req.originalUrl, timeout: timeoutMs,
      headers: {
        ...forwardable(req.headers, TO_SERVICE_DROP), ...framingOf(req.headers), 'x-forwarded-for': req.ip ?? '',
        ...(blobs ? { [BLOB_HANDOFF_HEADER]: '1' } : {}),
      },
    }, (incoming) => {
      answered = true;
      incoming.once('end', () => { incomingDone = true; });
      if (!req.complete) {
        // Answered before the body was all sent (413, 401): stop reading and forwarding it.
        req.unpipe(outgoing);
        req.pause();
        if (!res.headersSent) closeEarly(res);
      }
      if (res.headersSent || res.destroyed) {
        // The gateway answered already (its deadline passed): the service's answer goes nowhere.
        incoming.resume();
        return;
      }
      if (blobs && isHandoff(incoming.headers)) {
        // docs-command checked the link and chose the range; its answer has no body.
        incoming.resume();
        serveHandoff(incoming.headers, forwardable(incoming.headers, FROM_SERVICE_DROP), res, blobs, logger);
        return;
      }
      res.status(incoming.statusCode ?? 502);
      for (const [name, value] of Object.entries(forwardable(incoming.headers, FROM_SERVICE_DROP))) res.setHeader(name, value);
      pipeline(incoming, res, (err) => {
        if (!err) return;
        logger.warn({ err, upstream: baseUrl, requestId: res.locals.requestId }, 'upstream answer cut off');
        res.destroy();
      });
    });
    outgoing.on('timeout', () => outgoing.destroy(new Error('upstream timeout')));
    outgoing.on('error', (err) => {
      // Once an answer is being relayed, its own stream reports a failure; a service closing the
      // connection after an early answer is no failure at all.
      if (answered || res.destroyed || res.writableEnded) return;
      logger.warn({ err, upstream: baseUrl, requestId: res.locals.requestId }, 'upstream failed');
      // A half-sent answer is cut (sendError destroys it); otherwise 503 with the route's message.
      sendUnavailable(res);
    });
    res.on('close', () => {
      // Whatever of the exchange is unfinished (the client left, or the body was cut short) ends.
      if (!incomingDone || !outgoing.writableFinished) outgoing.destroy();
    });
    req.pipe(outgoing);
  };
};

/**
 * The services behind the gateway, from the registry (libs/contracts/src/services.ts): each one's
 * URL variable (DOCS_COMMAND_URL, STATS_URL, ...), by default its registry port on this host.
 */
export const UPSTREAM_URL_VARS = perUpstreamUrlVar((service) => stringVar(`http://127.0.0.1:${service.port}`));

/** Each upstream's URL, from the configuration read with UPSTREAM_URL_VARS. */
export const upstreamUrlsOf = (env: Readonly<Record<UpstreamUrlVar, string>>): Record<Upstream, string> =>
  perUpstream((service) => env[service.urlVar]);

/** Whether the service at `url` is ready: its /readyz answers 2xx within 2 s. */
const upstreamReady = (url: string) => async (): Promise<void> => {
  const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) });
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
};

/** A readiness check per upstream, by its service's name (reported in the gateway's /readyz body). */
export const upstreamChecks = (urls: Readonly<Record<Upstream, string>>): Record<string, () => Promise<void>> =>
  Object.fromEntries(UPSTREAM_SERVICES.map((service) => [service.name, upstreamReady(urls[service.upstream])]));

/**
 * A handler per upstream: the one in `local` where the gateway answers itself, else a proxy to its
 * URL (httpUpstream) with its `options`.
 */
export const httpUpstreams = (
  urls: Readonly<Record<Upstream, string>>, logger: Logger,
  options: Partial<Record<Upstream, UpstreamOptions>> = {}, local: Partial<Record<Upstream, RequestHandler>> = {},
): Record<Upstream, RequestHandler> =>
  perUpstream((service) => local[service.upstream] ?? httpUpstream(urls[service.upstream], logger, options[service.upstream]));
