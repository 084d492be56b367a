import { pino, type Logger, type DestinationStream } from 'pino';

/**
 * Structured JSON logs; credentials and tokens are redacted wherever they appear. `level` is the
 * service's configured LOG_LEVEL (libs/runtime config), read by its main: a library reads no environment.
 */
export const makeLogger = (service: string, level = 'info', destination?: DestinationStream): Logger =>
  pino({
    name: service,
    level,
    base: { service },
    redact: {
      paths: [
        'req.headers.authorization', 'req.headers["x-authorization"]', 'headers.authorization',
        'headers["x-authorization"]', 'password', '*.password', 'passwordHash', '*.passwordHash', 'token', '*.token',
      ],
      censor: '[redacted]',
    },
  }, destination);

export type { Logger };
