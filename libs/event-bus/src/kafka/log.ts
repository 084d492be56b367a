/** The pino-shaped logger the bus reports to (pino's `logger.warn(obj, msg)` signature). */
export interface KafkaBusLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const silentLogger: KafkaBusLogger = { info() {}, warn() {}, error() {} };

/** The logger with every call guarded: a broken log sink must not stop delivery. */
export const guardedLogger = (logger: KafkaBusLogger): KafkaBusLogger => {
  const guard = (level: keyof KafkaBusLogger) => (obj: object, msg: string): void => {
    try {
      logger[level](obj, msg);
    } catch {
      // Nothing to report it to.
    }
  };
  return { info: guard('info'), warn: guard('warn'), error: guard('error') };
};

export const errorMessage = (error: unknown): string => (error instanceof Error ? error.message : String(error));
