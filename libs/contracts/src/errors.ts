/** What kind of failure a command or query ended in; the HTTP edge maps each kind to a status code. */
export type FailureKind =
  | 'invalid'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'unprocessable'
  | 'too_large'
  | 'range_not_satisfiable'
  | 'rate_limited'
  | 'unavailable';

/** An operational failure with a message meant for the client, exactly as the spec words it. */
export class DocshareError extends Error {
  readonly kind: FailureKind;
  constructor(kind: FailureKind, message: string) {
    super(message);
    this.name = 'DocshareError';
    this.kind = kind;
  }
}

export const invalid = (message: string): DocshareError => new DocshareError('invalid', message);
export const notFound = (message: string): DocshareError => new DocshareError('not_found', message);
export const forbidden = (message: string): DocshareError => new DocshareError('forbidden', message);
export const conflict = (message: string): DocshareError => new DocshareError('conflict', message);
export const tooLarge = (message: string): DocshareError => new DocshareError('too_large', message);
export const unauthorized = (message: string): DocshareError => new DocshareError('unauthorized', message);
