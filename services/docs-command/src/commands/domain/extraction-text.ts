/**
 * Characters of extracted text a file keeps per byte it counts against its owner's storage quota
 * (docs/api-decisions.md, Text extraction). Natural text packed in a DOCX or ODT comes to about
 * 2.5 characters a byte, a PDF's to about 1, plain text, HTML, Markdown and CSV to 1 at most; a
 * file that inflates further (a 2 KB ODT of one repeated word inflating to 100,000 characters) keeps
 * its first 4 characters a byte. So a user's text is at most 4 times the bytes the quota lets them
 * store: a full quota buys no more text, and deleting files frees it.
 */
export const TEXT_CHARS_PER_BYTE = 4;

/** The most characters of text recorded for a file of `size` bytes. */
export const textAllowance = (size: number): number =>
  Number.isFinite(size) && size > 0 ? Math.floor(size * TEXT_CHARS_PER_BYTE) : 0;

/** `text` cut to the allowance of a file of `size` bytes, never between the halves of a surrogate pair. */
export const keptText = (text: string, size: number): { text: string; cut: boolean } => {
  let end = textAllowance(size);
  if (text.length <= end) return { text, cut: false };
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return { text: text.slice(0, end), cut: true };
};
