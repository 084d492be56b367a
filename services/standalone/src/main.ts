import { makeLogger } from '@docshare/http';
import { embeddedConfig } from './config.ts';
import { startEmbedded } from './embedded.ts';

const config = embeddedConfig(process.env);
const logger = makeLogger('docshare', config.logLevel);

process.on('unhandledRejection', (reason) => {
  logger.fatal({ err: reason }, 'unhandled rejection');
  process.exit(1);
});

try {
  const app = await startEmbedded(config, logger);
  const shutdown = (signal: string): void => {
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    app.stop().then(() => process.exit(0), (err: unknown) => {
      logger.error({ err }, 'shutdown failed');
      process.exit(1);
    });
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
} catch (err) {
  logger.fatal({ err }, 'docshare failed to start');
  process.exit(1);
}
