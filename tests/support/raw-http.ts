// What the raw-socket tests read back: an HTTP/1.x answer parsed from the bytes a connection got.

export interface ParsedAnswer {
  /** Undefined when the server closed the connection without answering. */
  status?: number;
  headers: Record<string, string>;
  body: string;
}

/** Parses the first response in `text` (the bytes read as latin1); its body cut at Content-Length. */
export const parseResponse = (text: string): ParsedAnswer => {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return { headers: {}, body: '' };
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? NaN);
  let body = text.slice(end + 4);
  const length = Number(headers['content-length'] ?? NaN);
  if (Number.isFinite(length)) body = Buffer.from(body, 'latin1').subarray(0, length).toString('utf8');
  return { status: Number.isFinite(status) ? status : undefined, headers, body };
};
