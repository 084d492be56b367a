import type { FileFacts } from './domain/file.ts';

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML element content and quoted attribute values. */
export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);

const page = (title: string, body: string): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · docshare</title>
<style>
body{font-family:system-ui,sans-serif;max-width:44rem;margin:2rem auto;padding:0 1rem;color:#222;line-height:1.5}
dt{font-weight:600}dd{margin:0 0 .6rem 0}.tag{display:inline-block;background:#eef;border-radius:.3rem;padding:0 .4rem;margin-right:.3rem}
button{font-size:1rem;padding:.5rem 1rem;cursor:pointer}#download-result{margin-top:.5rem}
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

/**
 * The public page of a file (decisions §12). Every user-supplied value is escaped; the download
 * button calls the API's download flow with the visitor's own token, which the API requires.
 */
export const renderFilePage = (file: FileFacts, apiBase: string, scriptNonce: string): string => {
  const video = file.videoUrl
    ? `<a href="${escapeHtml(file.videoUrl)}" rel="nofollow noopener noreferrer">${escapeHtml(file.videoUrl)}</a>`
    : 'none';
  const tags = file.tags.map((t) => `<span class="tag">${escapeHtml(t)}</span>`).join('');
  return page(file.title, `<main>
<h1>${escapeHtml(file.title)}</h1>
<p>${escapeHtml(file.description)}</p>
<dl>
<dt>Category</dt><dd>${escapeHtml(file.categoryName)}</dd>
<dt>Tags</dt><dd>${tags}</dd>
<dt>License</dt><dd>${escapeHtml(file.license)}</dd>
<dt>Video</dt><dd>${video}</dd>
<dt>Uploaded by</dt><dd>${escapeHtml(file.ownerName)}</dd>
<dt>File</dt><dd>${escapeHtml(file.originalFileName)} (${file.size} bytes)</dd>
</dl>
<form id="download" data-file-id="${file.fileId}" action="${escapeHtml(apiBase)}/api/V1/docs/api-download" method="get">
<input type="hidden" name="file_id" value="${file.fileId}">
<label>Your token <input type="password" name="token" autocomplete="off" required></label>
<button type="submit">Download</button>
</form>
<div id="download-result" role="status"></div>
${extractionSection(file)}
<script nonce="${escapeHtml(scriptNonce)}">
document.getElementById('download').addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = event.target;
  const out = document.getElementById('download-result');
  const res = await fetch(form.action + '?file_id=' + encodeURIComponent(form.dataset.fileId), {
    headers: { 'X-Authorization': 'Bearer ' + form.elements.token.value },
  });
  const body = await res.json();
  if (body.status === 'success') { window.location.href = body.download_url; } else { out.textContent = body.message; }
});
</script>
</main>`);
};

/** The page for a file that is missing, deleted or disabled. */
export const renderNotFoundPage = (): string =>
  page('File not found', '<main><h1>File not found</h1><p>This file does not exist or is no longer available.</p></main>');
