import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { lookup as dnsLookupAll } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { M, sleep } from '@docshare/contracts';

/**
 * Server-side request forgery (issue 23, item 5): a webhook URL is a request docshare makes on a
 * user's behalf, so it must not reach what only docshare's network can reach (the cloud's metadata
 * service at 169.254.169.254, MongoDB, an admin port on loopback). Checked twice: at registration
 * (a clear 400) and at every connect (`guardedLookup`: DNS can change after registration, and a
 * name can be made to resolve to anything).
 */

/** The same shape as @docshare/runtime's WebhookUrlPolicy (WEBHOOK_ALLOW_HTTP, WEBHOOK_ALLOW_PRIVATE_NETWORKS); this lib does not depend on the runtime. */
export interface WebhookUrlPolicy {
  allowHttp: boolean;
  allowPrivate: boolean;
}

export type UrlCheck = { ok: true; url: URL } | { ok: false; message: string };

/** Every address a host name resolves to (`dns.lookup` with `all`: what a connect would pick from). */
export type LookupAll = (hostname: string) => Promise<readonly { address: string; family: number }[]>;

export const MAX_WEBHOOK_URL_LENGTH = 2048;
/** How long registration waits for DNS before it calls the host unresolvable. */
const LOOKUP_BOUND_MS = 5_000;
/** The error code guardedLookup fails a connect with (the deliverer reports it as `refused: private address`). */
export const PRIVATE_ADDRESS_CODE = 'EWEBHOOKPRIVATE';

/**
 * Loopback, private, link-local, carrier-grade NAT, multicast, unspecified, documentation,
 * benchmarking, 6to4/Teredo/NAT64 (which embed an IPv4 address)...: anything ipaddr.js does not
 * call plain `unicast`. An IPv4-mapped IPv6 address is judged as its IPv4 one; text that is not
 * an address is special (refused).
 */
export const isSpecialAddress = (address: string): boolean => {
  try {
    return ipaddr.process(address).range() !== 'unicast';
  } catch {
    return true;
  }
};

/** The URL's host as an address, when it is an IP literal (WHATWG URL already turned `2130706433` or `0x7f.1` into `127.0.0.1`). */
const ipLiteralOf = (url: URL): string | null => {
  const host = url.hostname.startsWith('[') && url.hostname.endsWith(']') ? url.hostname.slice(1, -1) : url.hostname;
  return ipaddr.isValid(host) ? host : null;
};

const systemLookupAll: LookupAll = (hostname) => dnsLookupAll(hostname, { all: true, verbatim: true });

const fail = (message: string): UrlCheck => ({ ok: false, message });

/** The syntax and scheme part of the check, without DNS. */
const parseWebhookUrl = (raw: unknown, policy: WebhookUrlPolicy): UrlCheck => {
  if (raw === undefined || raw === null || raw === '') return fail(M.webhookUrlRequired);
  if (typeof raw !== 'string') return fail(M.webhookUrlInvalid);
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) return fail(M.webhookUrlTooLong);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return fail(M.webhookUrlInvalid);
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.hostname === '') return fail(M.webhookUrlInvalid);
  if (url.username !== '' || url.password !== '') return fail(M.webhookUrlCredentials);
  if (url.protocol === 'http:' && !policy.allowHttp) return fail(M.webhookUrlScheme);
  return { ok: true, url };
};

/**
 * Registration's check: syntax (at most 2048 characters, http or https, no `user:pass@`), the
 * scheme (https unless allowHttp), then the host: an IP literal is judged as it is (no DNS); a
 * name must resolve (within 5 s: a typo is told at once, not by failed deliveries) and, unless
 * allowPrivate, every address it resolves to must be plain unicast.
 */
export const checkWebhookUrl = async (raw: unknown, policy: WebhookUrlPolicy, lookup: LookupAll = systemLookupAll): Promise<UrlCheck> => {
  const parsed = parseWebhookUrl(raw, policy);
  if (!parsed.ok) return parsed;
  const literal = ipLiteralOf(parsed.url);
  if (literal !== null) return policy.allowPrivate || !isSpecialAddress(literal) ? parsed : fail(M.webhookUrlPrivate);
  const stop = new AbortController();
  let addresses: readonly { address: string }[] | null;
  try {
    addresses = await Promise.race([
      Promise.resolve(parsed.url.hostname).then(lookup).catch(() => null),
      sleep(LOOKUP_BOUND_MS, stop.signal).then(() => null),
    ]);
  } finally {
    stop.abort();
  }
  if (addresses === null || addresses.length === 0) return fail(M.webhookUrlUnresolvable);
  return policy.allowPrivate ? parsed : addresses.some(({ address }) => isSpecialAddress(address)) ? fail(M.webhookUrlPrivate) : parsed;
};

/** A connect-time refusal (the code the deliverer maps); the address is operational, not secret. */
const privateAddressError = (hostname: string): NodeJS.ErrnoException =>
  Object.assign(new Error(`${hostname} resolves to a private or special address`), { code: PRIVATE_ADDRESS_CODE });

/**
 * A `lookup` for http(s).request and agents: resolves as Node does, then refuses the connect when
 * ANY address of the answer is special (unless allowPrivate): a name with one public and one
 * private address must not get a second chance on the private one. Answers both ways Node asks:
 * `{all: true}` (an array, what recent Node's agents use for happy eyeballs) and one address.
 */
export const guardedLookup = (policy: WebhookUrlPolicy): LookupFunction => (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => {
    if (error) return callback(error, options.all ? [] : '', undefined);
    if (addresses.length === 0) {
      return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), options.all ? [] : '', undefined);
    }
    if (!policy.allowPrivate && addresses.some(({ address }) => isSpecialAddress(address))) {
      return callback(privateAddressError(hostname), options.all ? [] : '', undefined);
    }
    if (options.all) return callback(null, addresses);
    const first = addresses[0] as LookupAddress;
    return callback(null, first.address, first.family);
  });
};
