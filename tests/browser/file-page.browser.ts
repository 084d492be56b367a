// The file page in a real browser (docs/file-page.md): Debian's Chromium (infra/browser/install.sh),
// driven by puppeteer-core. Run with `npm run test:browser`; screenshots land in
// tests/browser/artifacts/ (kept by CI as test artifacts).
//
// The server's PUBLIC_BASE_URL is http://localhost:<port> while the browser opens the page at
// http://127.0.0.1:<port>: another host name, so everything the page does must stay on the origin
// it was reached by. Named *.browser.ts so that `npm run test:api` ('tests/**/*.test.ts') skips it.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { crc32, deflateSync } from 'node:zlib';
import puppeteer, {
  type Browser, type CDPSession, type ConsoleMessage, type Frame, type HTTPRequest, type Page,
} from 'puppeteer-core';
import { makePdf } from '@docshare/extract/testing';
import { api, type Api, type RegisteredUser } from '../support/client.ts';
import { expectSuccess } from '../support/expect.ts';
import { TEST_JWT_SECRET, nowSeconds, signJwt } from '../support/jwt.ts';
import { REPO_ROOT, startServer, type Server } from '../support/server.ts';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
export const ARTIFACTS = path.join(REPO_ROOT, 'tests', 'browser', 'artifacts');
const SESSION_KEY = 'docshare.session';
const PDF_VIEWER = 'chrome-extension://mhjfbmdgcfjbbpaeojofohoefgiehjai/';

/** A PNG of `width`×`height` pixels: a diagonal gradient (RGB, 8 bits, no interlace). */
function makePng(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer): Buffer => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const out = Buffer.alloc(body.length + 8);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc32(body), body.length + 4);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const rows = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y += 1) {
    const row = y * (width * 3 + 1);
    for (let x = 0; x < width; x += 1) {
      rows.set([Math.round((255 * x) / width), Math.round((255 * y) / height), 160], row + 1 + x * 3);
    }
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header), chunk('IDAT', deflateSync(rows)), chunk('IEND', Buffer.alloc(0)),
  ]);
}

let server: Server;
let c: Api;
let origin: string;
let user: RegisteredUser;
let browser: Browser;
let page: Page;
let cdp: CDPSession;
let downloads: string;
/** The token the page got when it signed in (never to be seen in a URL). */
let pageToken = '';
const files: Record<'pdf' | 'png' | 'text' | 'forSale', { id: string; bytes: Buffer; name: string }> = {} as never;

/** What the page did, collected as it happened. */
const seen = { console: [] as string[], pageErrors: [] as string[], requests: [] as string[], navigations: [] as string[] };
const describeConsole = (m: ConsoleMessage): string => `${m.type()}: ${m.text()}${m.location().url ? ` (${m.location().url})` : ''}`;

const shot = async (name: string): Promise<string> => {
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
};

const text = (selector: string): Promise<string> => page.$eval(selector, (el) => (el as unknown as { textContent: string }).textContent.trim());
const visible = (selector: string): Promise<boolean> => page.$eval(selector, (el) => !(el as unknown as { hidden: boolean }).hidden);
const session = (): Promise<string | null> => page.evaluate((key) => sessionStorage.getItem(key), SESSION_KEY);
/** The alert's text once it shows one. */
const alertText = async (): Promise<string> => {
  await page.waitForSelector('#page-alert:not([hidden])', { timeout: 10_000 });
  return text('#page-alert');
};

const open = async (fileId: string): Promise<void> => {
  await page.goto(`${origin}/docs/${fileId}`, { waitUntil: 'load' });
  // The sign-in fields are enabled once the page's script runs.
  await page.waitForSelector('#signin-fields:not([disabled])');
};

const signIn = async (password: string): Promise<void> => {
  await page.locator('input[name="email"]').fill(user.email);
  await page.locator('input[name="password"]').fill(password);
  await page.locator('#signin button[type="submit"]').click();
};

/** Files that finished downloading into `downloads` (Chromium writes *.crdownload until then). */
const downloaded = async (name: string, timeoutMs = 15_000): Promise<Buffer> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const names = await readdir(downloads);
    if (names.includes(name) && !names.some((n) => n.endsWith('.crdownload'))) return readFile(path.join(downloads, name));
    if (Date.now() > deadline) throw new Error(`no download of ${name} within ${timeoutMs} ms; the folder has ${names.join(', ') || 'nothing'}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

/** The console errors of a phase that are not failed loads (which a refused API call logs). */
const consoleErrorsSince = (mark: number, allowFailedLoads = false): string[] => seen.console.slice(mark)
  .filter((line) => line.startsWith('error:') || /Content.Security.Policy|Refused to/i.test(line))
  .filter((line) => !(allowFailedLoads && /^error: Failed to load resource: (the server responded with a status of (401|403|429)|net::ERR_INTERNET_DISCONNECTED)/.test(line)));

/** A step of the walk through the page; one that fails leaves a screenshot of where it stood. */
const step = (name: string, fn: () => Promise<void>): void => {
  it(name, async () => {
    try {
      await fn();
    } catch (error) {
      if (page) await shot(`failed-${name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60)}`).catch(() => undefined);
      throw error;
    }
  });
};

// Never skipped: `npm run test:browser` installs Chromium first, and a missing browser is a failure.
if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: run infra/browser/install.sh`);

describe('file page in Chromium', () => {
  before(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    downloads = await mkdtemp(path.join(os.tmpdir(), 'docshare-downloads-'));
    server = await startServer({ JWT_SECRET: TEST_JWT_SECRET });
    // The same server under another host name: links name localhost, the browser uses 127.0.0.1.
    await server.restart({ PUBLIC_BASE_URL: `http://localhost:${server.port}` });
    origin = server.baseUrl;
    assert.match(origin, /^http:\/\/127\.0\.0\.1:/);
    c = api(server);
    const password = `pw-${randomBytes(6).toString('hex')}`;
    user = await c.register({ name: 'Ada Lovelace', email: `ada-${randomBytes(4).toString('hex')}@example.com`, password });

    const pdf = Buffer.from(await makePdf([
      'Lecture notes on optics',
      'Light travels in straight lines until it meets a lens. A converging lens brings parallel rays to a focus; a diverging lens spreads them.',
      'Snell\'s law relates the angles of incidence and refraction to the refractive indices of the two media.',
    ]));
    const upload = async (bytes: Buffer, name: string, type: string, fields: Record<string, string>) => {
      const { fileId } = await c.uploadOk(user.token, {
        tags: 'optics,lenses,light', cc_license: 'CC BY-SA', new_category_name: 'Physics',
        category_description: 'Physics course material', video: 'https://videos.example.com/optics-1', ...fields,
      }, bytes, name, type);
      return { id: fileId, bytes, name };
    };
    files.pdf = await upload(pdf, 'optics-notes.pdf', 'application/pdf', {
      title: 'Lecture notes on optics', description: 'Notes from the spring course: lenses, refraction and Snell\'s law.',
    });
    files.png = await upload(makePng(320, 200), 'ray-diagram.png', 'image/png', { title: 'Ray diagram', description: 'A figure for the notes.', cc_license: 'CC0' });
    files.text = await upload(Buffer.from('Reading list\n\n1. Hecht, Optics\n2. Feynman Lectures, vol. I, ch. 26\n'), 'reading-list.txt', 'text/plain', {
      title: 'Reading list', description: 'Books for the course.', cc_license: 'CC BY',
    });
    files.forSale = await upload(randomBytes(2_000), 'solutions.pdf', 'application/pdf', { title: 'Solutions', description: 'Worked solutions.' });
    expectSuccess(await c.update(user.token, { id: files.forSale.id, for_sale: true, price: 5 }), 200);

    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      // Root (CI, the project's machines) cannot use Chromium's sandbox; /dev/shm may be small in containers.
      args: ['--no-sandbox', '--disable-dev-shm-usage', '--lang=en-US'],
    });
    page = await browser.newPage();
    await page.setViewport({ width: 1000, height: 900 });
    cdp = await browser.target().createCDPSession();
    await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads, eventsEnabled: true });
    page.on('console', (m) => seen.console.push(describeConsole(m)));
    page.on('pageerror', (e) => seen.pageErrors.push(String(e)));
    page.on('request', (r) => seen.requests.push(r.url()));
    page.on('framenavigated', (f) => seen.navigations.push(f.url()));
    // CSP violations, reported by the page itself (this script runs outside the page's CSP).
    await page.evaluateOnNewDocument(() => {
      const w = globalThis as unknown as { violations: string[]; addEventListener: (t: string, f: (e: { violatedDirective: string; blockedURI: string }) => void) => void };
      w.violations = [];
      w.addEventListener('securitypolicyviolation', (e) => w.violations.push(`${e.violatedDirective} ${e.blockedURI}`));
    });
  });

  after(async () => {
    // What the browser said and asked for, kept beside the screenshots.
    await writeFile(path.join(ARTIFACTS, 'browser-log.txt'), [
      '# console', ...seen.console, '# page errors', ...seen.pageErrors, '# requests', ...seen.requests, '# navigations', ...seen.navigations, '',
    ].join('\n')).catch(() => undefined);
    await browser?.close();
    await server?.dispose();
    if (downloads) await rm(downloads, { recursive: true, force: true });
  });

  step('shows the file: readable size, type, the licence linked to its deed, a sign-in form', async () => {
    const mark = seen.console.length;
    await open(files.pdf.id);
    assert.equal(await page.title(), 'Lecture notes on optics · docshare');
    assert.match(await text('#file-size'), /^\d+\.\d kB \([\d,]+ bytes\)$/);
    assert.equal(await text('#file-type'), 'application/pdf');
    const license = await page.$eval('#license', (a) => ({ href: (a as unknown as { href: string }).href, text: (a as unknown as { textContent: string }).textContent }));
    assert.deepEqual(license, { href: 'https://creativecommons.org/licenses/by-sa/4.0/', text: 'CC BY-SA' });
    assert.ok(await visible('#signin'));
    assert.ok(!(await visible('#session')));
    assert.equal(await page.$('input[name="token"]'), null, 'no token to paste');
    await shot('1-signed-out');
    assert.deepEqual(consoleErrorsSince(mark), [], 'not even a missing favicon');
  });

  step('shows a wrong password as a visible error, and signs in with the right one', async () => {
    const mark = seen.console.length;
    await signIn('not-the-password');
    assert.equal(await alertText(), 'Invalid email or password');
    assert.equal(await session(), null);
    await shot('2-wrong-password');
    assert.deepEqual(consoleErrorsSince(mark, true), []);

    await signIn(user.password);
    await page.waitForSelector('#session:not([hidden])');
    assert.equal(await text('#who'), user.email);
    assert.ok(!(await visible('#page-alert')), 'the error is gone');
    assert.ok(!(await visible('#signin')));
    const kept = JSON.parse((await session()) ?? 'null') as { token: string; email: string } | null;
    assert.equal(kept?.email, user.email);
    assert.match(kept?.token ?? '', /^[\w-]+\.[\w-]+\.[\w-]+$/);
    pageToken = kept?.token ?? '';
    assert.equal(page.url(), `${origin}/docs/${files.pdf.id}`, 'the URL did not change');
    const cookies = await browser.cookies();
    assert.deepEqual(cookies, [], 'no cookie');
  });

  step('previews the PDF in a frame, on this origin, without downloading it', async () => {
    const mark = seen.console.length;
    await page.locator('#preview-button').click();
    const frame = await page.waitForSelector('#preview-content');
    assert.equal(await frame?.evaluate((el) => el.tagName), 'IFRAME');
    const src = await frame?.evaluate((el) => (el as unknown as { src: string }).src);
    assert.match(src ?? '', new RegExp(`^${origin.replace(/\./g, '\\.')}/files/${files.pdf.id}/content\\?expires=\\d+&signature=[0-9a-f]+&disposition=inline#navpanes=0&view=FitH$`));
    // Chromium's PDF viewer loads in the frame.
    await page.waitForFrame((f: Frame) => f.url().startsWith(PDF_VIEWER), { timeout: 15_000 });
    assert.match(await text('#page-status'), /^Preview of optics-notes\.pdf/);
    await new Promise((r) => setTimeout(r, 1_500)); // the viewer draws the page
    const file = await shot('3-pdf-preview');
    // The README's picture (docs/images/file-page.png) is this one, refreshed on request only.
    if (process.env['UPDATE_README_SCREENSHOT']) await copyFile(file, path.join(REPO_ROOT, 'docs', 'images', 'file-page.png'));
    assert.deepEqual(await readdir(downloads), [], 'a preview downloads nothing');
    assert.deepEqual(consoleErrorsSince(mark), []);
  });

  step('downloads the exact bytes through a same-origin link', async () => {
    const mark = seen.console.length;
    await page.locator('#download-button').click();
    const got = await downloaded(files.pdf.name);
    assert.ok(got.equals(files.pdf.bytes), 'the downloaded bytes are the uploaded ones');
    assert.equal(await text('#page-status'), 'The download of optics-notes.pdf has started.');
    assert.deepEqual(consoleErrorsSince(mark), []);
  });

  step('previews an image, still signed in on another page of the tab', async () => {
    const mark = seen.console.length;
    await open(files.png.id);
    assert.ok(await visible('#session'), 'the session holds for the tab');
    assert.equal(await page.$eval('#license', (a) => (a as unknown as { href: string }).href), 'https://creativecommons.org/publicdomain/zero/1.0/');
    await page.locator('#preview-button').click();
    await page.waitForSelector('#preview-content');
    // (Functions run in the page; as strings, since this file is type-checked without the DOM's types.)
    await page.waitForFunction("document.getElementById('preview-content').complete && document.getElementById('preview-content').naturalWidth > 0", { timeout: 10_000 });
    const size = await page.$eval('#preview-content', (img) => {
      const i = img as unknown as { tagName: string; naturalWidth: number; naturalHeight: number; alt: string };
      return [i.tagName, i.naturalWidth, i.naturalHeight, i.alt];
    });
    assert.deepEqual(size, ['IMG', 320, 200, 'Preview of ray-diagram.png']);
    await shot('4-image-preview');
    assert.deepEqual(consoleErrorsSince(mark), []);
  });

  step('previews text in a sandboxed frame', async () => {
    const mark = seen.console.length;
    await open(files.text.id);
    await page.locator('#preview-button').click();
    const handle = await page.waitForSelector('#preview-content');
    assert.equal(await handle?.evaluate((el) => el.getAttribute('sandbox')), '');
    const frame = await page.waitForFrame((f: Frame) => f.url().includes(`/files/${files.text.id}/content`), { timeout: 10_000 });
    await frame.waitForFunction("document.body !== null && document.body.innerText.includes('Hecht, Optics')", { timeout: 10_000 });
    await shot('5-text-preview');
    assert.deepEqual(consoleErrorsSince(mark), []);
  });

  step('shows a file for sale as a visible error', async () => {
    const mark = seen.console.length;
    await open(files.forSale.id);
    await page.locator('#download-button').click();
    assert.equal(await alertText(), 'File is either for sale or not enabled');
    assert.equal(await text('#page-status'), '');
    await shot('6-for-sale');
    assert.deepEqual(consoleErrorsSince(mark, true), []);
  });

  step('shows the rate limit and a network failure as visible errors', async () => {
    const mark = seen.console.length;
    await open(files.pdf.id);
    await page.setRequestInterception(true);
    const limited = (request: HTTPRequest): void => {
      if (request.url().includes('/api/V1/docs/api-download')) {
        void request.respond({
          status: 429, contentType: 'application/json', headers: { 'Retry-After': '42' },
          body: JSON.stringify({ status: 'error', message: 'Rate limit exceeded. Please try again later.' }),
        });
      } else {
        void request.continue();
      }
    };
    page.on('request', limited);
    try {
      await page.locator('#download-button').click();
      assert.equal(await alertText(), 'Rate limit exceeded. Please try again later. (try again in 42 s)');
    } finally {
      page.off('request', limited);
      await page.setRequestInterception(false);
    }
    await page.setOfflineMode(true);
    try {
      await page.locator('#download-button').click();
      await page.waitForFunction("document.getElementById('page-alert').textContent.startsWith('Could not reach the server')", { timeout: 10_000 });
      await shot('7-offline');
    } finally {
      await page.setOfflineMode(false);
    }
    assert.deepEqual(consoleErrorsSince(mark, true), []);
  });

  step('sends a rejected token back to the sign-in form, and an expired one too', async () => {
    const mark = seen.console.length;
    const forged = signJwt({ sub: String(user.userId), iat: nowSeconds(), exp: nowSeconds() + 3600 }, 'not-the-server-secret');
    await page.evaluate((key, token, email) => sessionStorage.setItem(key, JSON.stringify({ token, email })), SESSION_KEY, forged, user.email);
    await open(files.pdf.id);
    assert.ok(await visible('#session'));
    await page.locator('#download-button').click();
    assert.equal(await alertText(), 'Invalid JWT token: sign in again.');
    assert.ok(await visible('#signin'), 'back to the sign-in form');
    assert.equal(await session(), null, 'the rejected token is dropped');

    const expired = signJwt({ sub: String(user.userId), iat: nowSeconds() - 7200, exp: nowSeconds() - 3600 }, TEST_JWT_SECRET);
    await page.evaluate((key, token, email) => sessionStorage.setItem(key, JSON.stringify({ token, email })), SESSION_KEY, expired, user.email);
    await open(files.pdf.id);
    assert.equal(await alertText(), 'Your session has expired: sign in again.');
    assert.ok(await visible('#signin'));
    assert.equal(await session(), null);
    assert.deepEqual(consoleErrorsSince(mark, true), []);
  });

  step('signs out: the session is gone from the tab', async () => {
    await signIn(user.password);
    await page.waitForSelector('#session:not([hidden])');
    assert.notEqual(await session(), null);
    await page.locator('#signout-button').click();
    await page.waitForSelector('#signin:not([hidden])');
    assert.equal(await session(), null);
    assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'nothing left in sessionStorage');
    assert.equal(await text('#page-status'), 'Signed out.');
    await page.reload({ waitUntil: 'load' });
    await page.waitForSelector('#signin-fields:not([disabled])');
    assert.ok(await visible('#signin'), 'still signed out after a reload');
  });

  step('never put a secret in a URL, never left the origin, never broke its CSP', async () => {
    assert.notEqual(pageToken, '');
    const secrets = [user.password, 'not-the-password', encodeURIComponent(user.email), pageToken, user.token];
    for (const url of [...seen.requests, ...seen.navigations]) {
      for (const secret of secrets) assert.ok(!url.includes(secret), `${url} carries a secret`);
      assert.doesNotMatch(url, /token=|eyJ[\w-]+\.eyJ/, `${url} carries a token`);
      if (/^https?:/.test(url)) assert.equal(new URL(url).origin, origin, `${url} left the page's origin`);
    }
    assert.ok(seen.requests.some((u) => u.startsWith(`${origin}/api/V1/users/api-login`)), 'signed in on this origin');
    assert.ok(seen.requests.some((u) => u.startsWith(`${origin}/files/${files.pdf.id}/content?`)), 'downloaded from this origin');
    assert.ok(!seen.requests.some((u) => u.startsWith('http://localhost')), 'nothing went to PUBLIC_BASE_URL\'s host name');
    assert.deepEqual(seen.pageErrors, [], 'no uncaught error');
    assert.deepEqual(seen.console.filter((l) => /Content.Security.Policy|Refused to/i.test(l)), [], 'no CSP violation in the console');
    assert.deepEqual(await page.evaluate(() => (globalThis as unknown as { violations: string[] }).violations), []);
  });
});
