// What the server sends, made safe to print: a terminal acts on control characters (ESC sequences
// clear the screen, set the window title, write the clipboard with OSC 52) and bidi controls
// reorder what the reader sees. The server refuses them in new text, but an older server, or data
// stored before it did, may still send them; the CLI shows each as a visible escape instead.

/**
 * Characters shown escaped: C0 controls but tab, DEL, C1 controls, the line and paragraph
 * separators, the bidi embeddings, overrides and isolates, and lone surrogates.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r' };

const hex = (c: string, width: number): string => c.charCodeAt(0).toString(16).padStart(width, '0');

/** `text` with every unsafe character as an escape: `\x1b`, `\n`, `\u202e`. Tabs stay. */
export const visible = (text: string): string =>
  text.replace(UNSAFE, (c) => NAMED[c] ?? (c.charCodeAt(0) <= 0xff ? `\\x${hex(c, 2)}` : `\\u${hex(c, 4)}`));

/**
 * A template tag for output lines: every interpolated value goes through `visible`, the template's
 * own text (line breaks, the CLI's own escape sequences) is kept.
 */
export const shown = (strings: TemplateStringsArray, ...values: unknown[]): string =>
  strings.reduce((line, part, i) => line + (i === 0 ? '' : visible(String(values[i - 1]))) + part, '');

/**
 * JSON text whose strings carry no character a terminal would act on: JSON.stringify escapes C0
 * controls but leaves DEL, C1 controls, U+2028/2029 and bidi controls raw, which `--json` printed
 * on a terminal would still show. Escaped as `\uXXXX` they parse back to the same value. (These
 * characters can only occur inside JSON strings, so replacing them anywhere is safe.)
 */
export const terminalSafeJson = (json: string): string =>
  json.replace(/[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${hex(c, 4)}`);
