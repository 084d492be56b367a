import type { License } from '@docshare/contracts';
import { contentDisposition } from '../commands/content.ts';
import type { FileFacts } from '../commands/domain/file.ts';

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML element content and quoted attribute values. */
export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);

/** The Creative Commons deed of each licence a file may carry (decisions §4): typed, so none can be missing. */
export const LICENSE_DEEDS: Readonly<Record<License, string>> = {
  'CC BY': 'https://creativecommons.org/licenses/by/4.0/',
  'CC BY-SA': 'https://creativecommons.org/licenses/by-sa/4.0/',
  'CC BY-ND': 'https://creativecommons.org/licenses/by-nd/4.0/',
  'CC BY-NC': 'https://creativecommons.org/licenses/by-nc/4.0/',
  'CC BY-NC-SA': 'https://creativecommons.org/licenses/by-nc-sa/4.0/',
  'CC BY-NC-ND': 'https://creativecommons.org/licenses/by-nc-nd/4.0/',
  CC0: 'https://creativecommons.org/publicdomain/zero/1.0/',
};

/** The deed of a licence label, or undefined for a label that is not one of ours. */
export const licenseDeed = (license: string): string | undefined =>
  Object.hasOwn(LICENSE_DEEDS, license) ? LICENSE_DEEDS[license as License] : undefined;

const BYTES = new Intl.NumberFormat('en-US');
const UNITS = ['kB', 'MB', 'GB', 'TB', 'PB'] as const;

/**
 * A size as people read it, in decimal units, with the exact count beside it:
 * `512 bytes`, `1.4 MB (1,432,118 bytes)`, `143 MB (142,857,143 bytes)`.
 */
export const formatSize = (bytes: number): string => {
  const exact = `${BYTES.format(bytes)} ${bytes === 1 ? 'byte' : 'bytes'}`;
  if (bytes < 1000) return exact;
  // One decimal below 100 units, none from there; rounded first, so 999,999 bytes reads 1.0 MB.
  const shown = (value: number): string => {
    const oneDecimal = value.toFixed(1);
    return Number(oneDecimal) < 100 ? oneDecimal : value.toFixed(0);
  };
  let value = bytes / 1000;
  let unit = 0;
  while (unit < UNITS.length - 1 && Number(shown(value)) >= 1000) {
    value /= 1000;
    unit += 1;
  }
  return `${shown(value)} ${UNITS[unit]} (${exact})`;
};

/** How the page previews a file: a PDF or text in a frame, an image in an `<img>`. */
export type PreviewKind = 'pdf' | 'image' | 'text';

/**
 * The types a browser shows itself, without running anything of the file's: only these are
 * previewed, and only these are ever served `inline` (never HTML, SVG, XML or scripts).
 */
const PREVIEWS = new Map<string, PreviewKind>([
  ['application/pdf', 'pdf'],
  ['image/png', 'image'], ['image/jpeg', 'image'], ['image/gif', 'image'], ['image/webp', 'image'],
  ['text/plain', 'text'],
]);

/** The preview of a content type (its parameters ignored), or null when the page offers none. */
export const previewKind = (contentType: string): PreviewKind | null =>
  PREVIEWS.get((contentType.split(';')[0] ?? '').trim().toLowerCase()) ?? null;

/**
 * Content-Disposition of a signed content link's bytes: `inline` only when the link asks for it
 * (`disposition=inline`, outside the signature) and the type is one `previewKind` allows;
 * `attachment` otherwise.
 */
export const contentDispositionFor = (fileName: string, contentType: string, requested: unknown): string => {
  const attachment = contentDisposition(fileName);
  return requested === 'inline' && previewKind(contentType) !== null ? attachment.replace(/^attachment/, 'inline') : attachment;
};

/**
 * Content-Security-Policy of a file's bytes: a sandbox (a unique origin, no script), whatever the
 * type, so an uploaded HTML or SVG opened in a browser can never act on this origin; only this
 * origin may frame it (the page's previews).
 */
export const CONTENT_SECURITY_POLICY = "sandbox; default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'";

const page = (title: string, body: string, head = ''): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)} · docshare</title>${head}
<style>
body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#222;line-height:1.5}
[hidden]{display:none!important}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dt{font-weight:600}dd{margin:0}
.tag{display:inline-block;background:#eef;border-radius:.3rem;padding:0 .4rem;margin-right:.3rem}
.muted{color:#555;font-size:.9rem}
section{margin-top:1.5rem}
#access{border:1px solid #ccd;border-radius:.4rem;padding:.2rem 1rem 1rem}
fieldset{border:0;padding:0;margin:0;display:flex;flex-wrap:wrap;gap:.6rem;align-items:flex-end}
label{display:flex;flex-direction:column;font-size:.9rem}
input{font-size:1rem;padding:.35rem .5rem;min-width:14rem}
button{font-size:1rem;padding:.45rem 1rem;cursor:pointer}
button:disabled{cursor:progress}
.actions{display:flex;flex-wrap:wrap;gap:.6rem;align-items:center}
#page-alert{background:#fdecea;border-left:.25rem solid #c62828;color:#7f1d1d;padding:.5rem .8rem;margin:.8rem 0 0}
#page-status{min-height:1.5em;margin:.6rem 0 0}
#preview{margin-top:1rem}
#preview iframe{width:100%;height:32rem;border:1px solid #ccd}#preview iframe.text{height:16rem}
#preview img{max-width:100%;height:auto;border:1px solid #ccd}
.extract{white-space:pre-wrap;background:#f6f6f6;border-left:.2rem solid #ccd;padding:.5rem .8rem;font-size:.9rem}
</style>
</head>
<body>
${body}
</body>
</html>
`;

/** Lines of the extracted text the page shows, at most, and characters of them. */
export const PREVIEW_LINES = 12;
export const PREVIEW_CHARS = 1_200;

const FAILURES: Record<string, string> = {
  unsupported_type: 'this file type is not read for search',
  encrypted: 'the file is encrypted',
  corrupt: 'the file could not be read (damaged or not what its type says)',
  too_large: 'the file is larger than the extraction limit',
  timeout: 'reading the file took longer than the extraction time limit',
  memory: 'reading the file needed more memory than the extraction limit',
  error: 'reading the file failed',
};

/** The first lines of the text found in the file, and where extraction stands (search reads this text). */
const extractionSection = (file: FileFacts): string => {
  const { extraction } = file;
  if (!extraction) return '<section id="extraction"><h2>Text</h2><p>Status: <strong>pending</strong>: the text of this file has not been read yet.</p></section>';
  if (extraction.status === 'failed') {
    return `<section id="extraction"><h2>Text</h2><p>Status: <strong>failed</strong>: ${escapeHtml(FAILURES[extraction.reason] ?? extraction.reason)}.</p></section>`;
  }
  const lines = extraction.excerpt.split('\n').filter((line) => line.trim() !== '').slice(0, PREVIEW_LINES);
  let preview = lines.join('\n');
  const cut = preview.length > PREVIEW_CHARS || lines.length < extraction.excerpt.split('\n').filter((line) => line.trim() !== '').length
    || extraction.characters > extraction.excerpt.length;
  if (preview.length > PREVIEW_CHARS) preview = preview.slice(0, PREVIEW_CHARS);
  const facts = [`${extraction.characters} characters`, extraction.format.toUpperCase()];
  if (extraction.language) facts.push(`language ${extraction.language}`);
  if (extraction.truncated) facts.push('truncated at the extraction limit');
  return `<section id="extraction"><h2>Text</h2><p>Status: <strong>extracted</strong> (${escapeHtml(facts.join(', '))}).</p>
${preview === '' ? '<p>No text was found in this file.</p>' : `<pre class="extract">${escapeHtml(preview)}${cut ? '\n…' : ''}</pre>`}</section>`;
};

/** The licence, linked to its Creative Commons deed when it is one of ours. */
const licenseLink = (license: string): string => {
  const deed = licenseDeed(license);
  return deed
    ? `<a id="license" href="${escapeHtml(deed)}" rel="license noopener noreferrer">${escapeHtml(license)}</a>`
    : escapeHtml(license);
};

/**
 * The page's own script (docs/file-page.md). Sign-in, download and preview all go to relative
 * URLs of the origin the page was reached by; the token lives in sessionStorage only (never in a
 * URL or a cookie); every failure is shown in the alert. No template literals in here: this is a
 * TypeScript template string.
 */
const PAGE_SCRIPT = String.raw`
(() => {
  'use strict';
  const KEY = 'docshare.session';
  const $ = (id) => document.getElementById(id);
  const access = $('access');
  const fileId = access.dataset.fileId;
  const fileName = access.dataset.fileName;
  const kind = access.dataset.preview;
  // The API sits beside /docs/ on whatever origin (and path prefix) this page was reached by.
  const base = location.pathname.replace(/\/docs\/[^/]*\/?$/, '/');
  const signin = $('signin');
  const signinFields = $('signin-fields');
  const session = $('session');
  const alertBox = $('page-alert');
  const statusBox = $('page-status');
  const previewBox = $('preview');
  const buttons = Array.from(session.querySelectorAll('button'));

  const say = (text) => { statusBox.textContent = text; };
  const fail = (text) => { alertBox.textContent = text; alertBox.hidden = text === ''; };
  const busy = (on) => { for (const b of buttons) b.disabled = on; };

  const load = () => {
    try {
      const s = JSON.parse(sessionStorage.getItem(KEY) || 'null');
      return s && typeof s.token === 'string' && typeof s.email === 'string' ? s : null;
    } catch { return null; }
  };
  const expired = (token) => {
    try {
      const claims = JSON.parse(atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
      return typeof claims.exp === 'number' && claims.exp * 1000 <= Date.now();
    } catch { return false; }
  };
  const clearPreview = () => { previewBox.replaceChildren(); previewBox.hidden = true; };
  const render = () => {
    const s = load();
    signin.hidden = s !== null;
    session.hidden = s === null;
    $('who').textContent = s ? s.email : '';
    if (!s) clearPreview();
  };
  const signOut = () => { sessionStorage.removeItem(KEY); render(); };

  class Shown extends Error {}
  /** fetch against this origin; a network failure becomes a message people can act on. */
  const call = async (path, init) => {
    let res;
    try {
      res = await fetch(base + path, Object.assign({ credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer' }, init));
    } catch {
      throw new Shown('Could not reach the server. Check your connection and try again.');
    }
    let body = null;
    try { body = await res.json(); } catch { body = null; }
    return { res, body };
  };
  const messageOf = (res, body) => {
    let text = body && typeof body.message === 'string' && body.message !== ''
      ? body.message : 'The server answered ' + res.status + (res.statusText ? ' ' + res.statusText : '') + '.';
    const after = res.headers.get('Retry-After');
    if (res.status === 429 && after) text += ' (try again in ' + after + ' s)';
    return text;
  };

  /** Authorises a download (the API counts it) and answers the link's path and query on this origin. */
  const authorize = async () => {
    const s = load();
    if (!s) { render(); throw new Shown('Sign in first.'); }
    if (expired(s.token)) { signOut(); throw new Shown('Your session has expired: sign in again.'); }
    const { res, body } = await call('api/V1/docs/api-download?file_id=' + encodeURIComponent(fileId), {
      headers: { 'X-Authorization': 'Bearer ' + s.token },
    });
    if (res.ok && body && body.status === 'success' && typeof body.download_url === 'string') {
      // Only the path and query: the link is signed for its path, and this origin serves it
      // whatever host name PUBLIC_BASE_URL names.
      const url = new URL(body.download_url, location.href);
      return url.pathname + url.search;
    }
    if (res.status === 401) { signOut(); throw new Shown(messageOf(res, body) + ': sign in again.'); }
    throw new Shown(messageOf(res, body));
  };
  const run = (start, task) => async () => {
    fail('');
    say(start);
    busy(true);
    try {
      say(await task());
    } catch (error) {
      say('');
      fail(error instanceof Shown ? error.message : 'Something went wrong: ' + (error && error.message ? error.message : String(error)));
    } finally {
      busy(false);
    }
  };

  signin.addEventListener('submit', async (event) => {
    event.preventDefault();
    const email = signin.elements.email.value.trim();
    const password = signin.elements.password.value;
    fail('');
    say('Signing in…');
    signinFields.disabled = true;
    let signedIn = false;
    try {
      const { res, body } = await call('api/V1/users/api-login', {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email, password }),
      });
      if (res.ok && body && body.status === 'success' && typeof body.token === 'string') {
        sessionStorage.setItem(KEY, JSON.stringify({ token: body.token, email, userId: body.user_id }));
        signedIn = true;
        signin.reset();
        say('Signed in as ' + email + '.');
      } else {
        say('');
        fail(messageOf(res, body));
      }
    } catch (error) {
      say('');
      fail(error instanceof Shown ? error.message : 'Something went wrong: ' + String(error));
    } finally {
      signinFields.disabled = false;
    }
    render();
    if (signedIn) $('download-button').focus(); else signin.elements.password.select();
  });

  $('signout-button').addEventListener('click', () => {
    signOut();
    fail('');
    say('Signed out.');
    signin.elements.email.focus();
  });

  $('download-button').addEventListener('click', run('Preparing the download…', async () => {
    const href = await authorize();
    const link = document.createElement('a');
    link.href = href;
    link.download = fileName;
    link.hidden = true;
    document.body.append(link);
    link.click();
    link.remove();
    return 'The download of ' + fileName + ' has started.';
  }));

  const previewButton = $('preview-button');
  if (previewButton) previewButton.addEventListener('click', run('Loading the preview…', async () => {
    const href = (await authorize()) + '&disposition=inline';
    let shown;
    if (kind === 'image') {
      shown = document.createElement('img');
      shown.alt = 'Preview of ' + fileName;
      shown.addEventListener('error', () => fail('The preview could not be shown: download the file instead.'));
    } else {
      shown = document.createElement('iframe');
      shown.title = 'Preview of ' + fileName;
      // Text needs nothing of the frame; the PDF viewer needs it unsandboxed (the bytes come with a sandbox CSP).
      if (kind === 'text') {
        shown.setAttribute('sandbox', '');
        shown.className = 'text';
      }
    }
    shown.id = 'preview-content';
    // The PDF viewer's open parameters: the page at the frame's width, no thumbnails.
    shown.src = kind === 'pdf' ? href + '#navpanes=0&view=FitH' : href;
    previewBox.replaceChildren(shown);
    previewBox.hidden = false;
    return 'Preview of ' + fileName + ' (counted as a download).';
  }));

  const kept = load();
  if (kept && expired(kept.token)) { sessionStorage.removeItem(KEY); fail('Your session has expired: sign in again.'); }
  signinFields.disabled = false;
  render();
})();
`;

/**
 * The public page of a file (decisions §12). Every user-supplied value is escaped. Signing in,
 * downloading and previewing happen on the page itself (docs/file-page.md); `publicBaseUrl`
 * names only the page's canonical address.
 */
export const renderFilePage = (file: FileFacts, publicBaseUrl: string, scriptNonce: string): string => {
  const video = file.videoUrl
    ? `<a href="${escapeHtml(file.videoUrl)}" rel="nofollow noopener noreferrer">${escapeHtml(file.videoUrl)}</a>`
    : 'none';
  const tags = file.tags.map((t) => `<span class="tag">${escapeHtml(t)}</span>`).join('');
  const kind = previewKind(file.contentType);
  const previewButton = kind
    ? '<button type="button" id="preview-button">Preview</button>'
    : '';
  const previewNote = kind
    ? 'A preview, like a download, counts as one download.'
    : 'This type of file has no preview in the browser: download it to open it.';
  // An empty icon: no /favicon.ico request (and no 404 in the console) for each page.
  const canonical = `\n<link rel="canonical" href="${escapeHtml(`${publicBaseUrl}/docs/${file.fileId}`)}">\n<link rel="icon" href="data:,">`;
  return page(file.title, `<main>
<h1>${escapeHtml(file.title)}</h1>
<p>${escapeHtml(file.description)}</p>
<dl>
<dt>Category</dt><dd>${escapeHtml(file.categoryName)}</dd>
<dt>Tags</dt><dd>${tags}</dd>
<dt>License</dt><dd>${licenseLink(file.license)}</dd>
<dt>Video</dt><dd>${video}</dd>
<dt>Uploaded by</dt><dd>${escapeHtml(file.ownerName)}</dd>
<dt>File</dt><dd id="file-name">${escapeHtml(file.originalFileName)}</dd>
<dt>Type</dt><dd id="file-type">${escapeHtml(file.contentType)}</dd>
<dt>Size</dt><dd id="file-size">${escapeHtml(formatSize(file.size))}</dd>
</dl>
<section id="access" data-file-id="${file.fileId}" data-file-name="${escapeHtml(file.originalFileName)}" data-preview="${kind ?? ''}" aria-labelledby="access-title">
<h2 id="access-title">Download</h2>
<noscript><p>Downloading needs JavaScript: the page signs you in and asks the API for a download link.</p></noscript>
<form id="signin" method="post" autocomplete="on">
<p class="muted">Sign in with your docshare account to download this file. You stay signed in only in this tab.</p>
<fieldset id="signin-fields" disabled>
<label>Email <input type="email" name="email" autocomplete="username" required></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button>
</fieldset>
</form>
<div id="session" hidden>
<p>Signed in as <strong id="who"></strong>.</p>
<div class="actions">
<button type="button" id="download-button">Download</button>
${previewButton}
<button type="button" id="signout-button">Sign out</button>
</div>
<p class="muted">${previewNote}</p>
</div>
<p id="page-alert" role="alert" hidden></p>
<p id="page-status" role="status" aria-live="polite"></p>
<div id="preview" hidden></div>
</section>
${extractionSection(file)}
</main>
<script nonce="${escapeHtml(scriptNonce)}">${PAGE_SCRIPT}</script>`, canonical);
};

/** The page for a file that is missing, deleted or disabled. */
export const renderNotFoundPage = (): string =>
  page('File not found', '<main><h1>File not found</h1><p>This file does not exist or is no longer available.</p></main>');
