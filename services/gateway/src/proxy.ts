import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import type { RequestHandler } from 'express';
import { sendError, type Logger } from '@docshare/http';

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

const FROM_SERVICE_DROP = new Set(['x-request-id', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'ratelimit-policy', 'ratelimit']);
const TO_SERVICE_DROP = new Set(['host']);

/**
 * Forwards a request to a service over HTTP, streaming both bodies (uploads and downloads are
 * never buffered). When the service cannot be reached the client gets the spec's envelope: 503
 * with the route's failure message.
 */
export const httpUpstream = (baseUrl: string, logger: Logger, timeoutMs = 120_000): RequestHandler => {
  const target = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  return (req, res) => {
    const failure = typeof res.locals.failureMessage === 'string' ? res.locals.failureMessage : 'Service unavailable';
    const outgoing = request({
      protocol: target.protocol, hostname: target.hostname, port: target.port, agent,
      method: req.method, path: req.originalUrl, timeout: timeoutMs,
      headers: { ...forwardable(req.headers, TO_SERVICE_DROP), 'x-forwarded-for': req.ip ?? '' },
    }, (incoming) => {
      res.status(incoming.statusCode ?? 502);
      for (const [name, value] of Object.entries(forwardable(incoming.headers, FROM_SERVICE_DROP))) res.setHeader(name, value);
      incoming.pipe(res);
      incoming.on('error', () => res.destroy());
    });
    outgoing.on('timeout', () => outgoing.destroy(new Error('upstream timeout')));
    outgoing.on('error', (err) => {
      logger.warn({ err, upstream: baseUrl, requestId: res.locals.requestId }, 'upstream failed');
      if (!res.headersSent) sendError(res, 503, failure);
      else res.destroy();
    });
    res.on('close', () => {
      if (!res.writableFinished) outgoing.destroy();
    });
    req.pipe(outgoing);
  };
};
