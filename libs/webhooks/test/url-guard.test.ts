import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { describe, it } from 'node:test';
import { M } from '@docshare/contracts';
import { checkWebhookUrl, guardedLookup, isSpecialAddress, type LookupAll, PRIVATE_ADDRESS_CODE } from '../src/url-guard.ts';

const STRICT = { allowHttp: false, allowPrivate: false };
const HTTP = { allowHttp: true, allowPrivate: false };
const OPEN = { allowHttp: true, allowPrivate: true };

/** A DNS answer without a network. */
const answering = (...addresses: string[]): LookupAll => async () => addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
const failing: LookupAll = async () => {
  throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
};
const unused: LookupAll = async () => {
  throw new Error('no DNS should be asked for this one');
};

const messageOf = async (raw: unknown, policy = STRICT, lookup: LookupAll = unused): Promise<string> => {
  const check = await checkWebhookUrl(raw, policy, lookup);
  return check.ok ? 'ok' : check.message;
};

describe('isSpecialAddress', () => {
  const special = [
    '127.0.0.1', '127.1.2.3', '::1', '10.0.0.5', '10.255.255.255', '172.16.0.1', '172.31.255.255', '192.168.1.1',
    '169.254.169.254', '100.64.0.1', '100.127.255.255', '0.0.0.0', '::', '::ffff:127.0.0.1', '::ffff:7f00:1',
    '::ffff:10.0.0.1', 'fc00::1', 'fd12:3456::1', 'fe80::1', '224.0.0.1', '239.255.255.250', 'ff02::1',
    '255.255.255.255', '2001:db8::1', '192.0.2.1', '198.18.0.1', 'not an address', '',
  ];
  for (const address of special) it(`${address || '(empty)'} is special`, () => assert.equal(isSpecialAddress(address), true));
  const ordinary = ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '2a00:1450:4007:80e::200e', '::ffff:8.8.8.8'];
  for (const address of ordinary) it(`${address} is not`, () => assert.equal(isSpecialAddress(address), false));
});

describe('checkWebhookUrl: syntax and scheme', () => {
  it('requires a URL', async () => {
    assert.equal(await messageOf(undefined), M.webhookUrlRequired);
    assert.equal(await messageOf(null), M.webhookUrlRequired);
    assert.equal(await messageOf(''), M.webhookUrlRequired);
  });
  it('refuses what is not an http(s) URL', async () => {
    for (const raw of [42, 'not a url', 'ftp://example.com/x', 'javascript:alert(1)', 'file:///etc/passwd', '/relative']) {
      assert.equal(await messageOf(raw), M.webhookUrlInvalid, String(raw));
    }
  });
  it('refuses more than 2048 characters', async () => {
    const base = 'https://93.184.215.14/';
    assert.equal(await messageOf(`${base}${'a'.repeat(2048 - base.length)}`), 'ok');
    assert.equal(await messageOf(`${base}${'a'.repeat(2049 - base.length)}`), M.webhookUrlTooLong);
  });
  it('refuses credentials in the URL', async () => {
    assert.equal(await messageOf('https://user:pass@93.184.215.14/hook'), M.webhookUrlCredentials);
    assert.equal(await messageOf('https://user@93.184.215.14/hook'), M.webhookUrlCredentials);
  });
  it('takes https only, unless http is allowed', async () => {
    assert.equal(await messageOf('http://93.184.215.14/hook'), M.webhookUrlScheme);
    assert.equal(await messageOf('http://93.184.215.14/hook', HTTP), 'ok');
    assert.equal(await messageOf('https://93.184.215.14/hook'), 'ok');
  });
  it('returns the parsed URL', async () => {
    const check = await checkWebhookUrl('https://Example.COM:8443/a?b=1', STRICT, answering('93.184.215.14'));
    assert.ok(check.ok);
    assert.equal(check.url.host, 'example.com:8443');
  });
});

describe('checkWebhookUrl: addresses', () => {
  it('refuses IP literals that are special, in every spelling URL accepts', async () => {
    for (const raw of [
      'https://127.0.0.1/', 'https://169.254.169.254/latest/meta-data/', 'https://10.1.2.3/', 'https://[::1]/',
      'https://[::ffff:127.0.0.1]/', 'https://[fe80::1]/', 'https://0.0.0.0/', 'https://2130706433/', 'https://0x7f.1/',
      'https://017700000001/', 'https://[fd00::1]:8443/x',
    ]) assert.equal(await messageOf(raw), M.webhookUrlPrivate, raw);
  });
  it('takes public IP literals without DNS', async () => {
    assert.equal(await messageOf('https://8.8.8.8/hook'), 'ok');
    assert.equal(await messageOf('https://[2606:4700::1111]/hook'), 'ok');
  });
  it('refuses a name that resolves to a private address, or to one among public ones', async () => {
    assert.equal(await messageOf('https://hooks.example.com/x', STRICT, answering('10.0.0.5')), M.webhookUrlPrivate);
    assert.equal(await messageOf('https://hooks.example.com/x', STRICT, answering('93.184.215.14', '10.0.0.5')), M.webhookUrlPrivate);
    assert.equal(await messageOf('https://hooks.example.com/x', STRICT, answering('93.184.215.14', '2606:4700::1111')), 'ok');
  });
  it('refuses localhost (the real resolver: /etc/hosts says loopback)', async () => {
    const check = await checkWebhookUrl('https://localhost:8443/hook', STRICT);
    assert.deepEqual(check, { ok: false, message: M.webhookUrlPrivate });
  });
  it('calls an unresolvable name unresolvable', async () => {
    assert.equal(await messageOf('https://nowhere.invalid/x', STRICT, failing), M.webhookUrlUnresolvable);
    assert.equal(await messageOf('https://nowhere.invalid/x', STRICT, answering()), M.webhookUrlUnresolvable);
  });
  it('takes any address when private networks are allowed (IP literals without DNS)', async () => {
    for (const raw of ['http://127.0.0.1:9/x', 'https://[::1]/', 'https://169.254.169.254/']) {
      assert.equal(await messageOf(raw, OPEN, unused), 'ok', raw);
    }
    assert.equal(await messageOf('https://hooks.example.com/x', OPEN, answering('10.0.0.5')), 'ok');
    assert.equal((await checkWebhookUrl('http://localhost:9/x', OPEN)).ok, true);
  });
  it('still refuses an unresolvable name when private networks are allowed', async () => {
    assert.equal(await messageOf('https://nowhere.invalid/x', OPEN, failing), M.webhookUrlUnresolvable);
  });
  it('still checks syntax and scheme when private networks are allowed', async () => {
    assert.equal(await messageOf('http://127.0.0.1/', { allowHttp: false, allowPrivate: true }), M.webhookUrlScheme);
    assert.equal(await messageOf('https://u:p@127.0.0.1/', OPEN), M.webhookUrlCredentials);
  });
});

/** Runs a guarded lookup the way Node's net does. */
const lookupWith = (policy: typeof STRICT, hostname: string, all: boolean) =>
  new Promise<{ error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>((resolve) => {
    guardedLookup(policy)(hostname, { all }, (error, address, family) => resolve({ error, address, family }));
  });

describe('guardedLookup (connect time)', () => {
  it('refuses localhost with EWEBHOOKPRIVATE, asked for all addresses or one', async () => {
    for (const all of [true, false]) {
      const { error } = await lookupWith(STRICT, 'localhost', all);
      assert.equal(error?.code, PRIVATE_ADDRESS_CODE, `all: ${all}`);
    }
  });
  it('answers as Node expects when private networks are allowed: an array for all, else address and family', async () => {
    const many = await lookupWith(OPEN, 'localhost', true);
    assert.equal(many.error, null);
    assert.ok(Array.isArray(many.address) && many.address.length > 0);
    assert.ok(many.address.every((entry) => isSpecialAddress(entry.address) && (entry.family === 4 || entry.family === 6)));
    const one = await lookupWith(OPEN, 'localhost', false);
    assert.equal(one.error, null);
    assert.equal(typeof one.address, 'string');
    assert.ok(one.family === 4 || one.family === 6);
  });
  it('passes an IP literal through the same check', async () => {
    assert.equal((await lookupWith(STRICT, '127.0.0.1', false)).error?.code, PRIVATE_ADDRESS_CODE);
    const open = await lookupWith(OPEN, '127.0.0.1', false);
    assert.deepEqual([open.error, open.address, open.family], [null, '127.0.0.1', 4]);
  });
  it('passes on a resolver error', async () => {
    const { error } = await lookupWith(STRICT, 'nowhere.invalid', true);
    assert.ok(error && error.code !== PRIVATE_ADDRESS_CODE);
  });
});
