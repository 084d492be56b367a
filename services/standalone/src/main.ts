import { exitGracefully, makeLogger } from '@docshare/http';
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
  exitGracefully(logger, [app.stop], 15_000);
} catch (err) {
  logger.fatal({ err }, 'docshare failed to start');
  process.exit(1);
}
