import { exitGracefully, installLastResort, makeLogger } from '@docshare/http';
import { embeddedConfig, type EmbeddedConfig } from './config.ts';
import { startEmbedded } from './embedded.ts';
import { CONFIG_ERROR_EXIT_CODE } from './supervisor.ts';

const GRACE_MS = 15_000;
let config: EmbeddedConfig;
try {
  config = embeddedConfig(process.env);
} catch (err) {
  // A bad value will be as bad after a restart: 78 tells a supervisor not to retry.
  makeLogger('docshare').fatal({ err }, 'bad configuration');
  process.exit(CONFIG_ERROR_EXIT_CODE);
}
const logger = makeLogger('docshare', config.logLevel);
installLastResort(logger, { graceMs: GRACE_MS, context: () => ({ port: config.port, dataDir: config.dataDir }) });

try {
  const app = await startEmbedded(config, logger);
  exitGracefully(logger, [app.stop], GRACE_MS);
  // Under npm start's supervisor (an IPC channel): say we serve, and stop gracefully if the
  // supervisor goes away, rather than live on as an orphan holding the port and the data dir.
  if (process.send !== undefined) {
    process.send({ type: 'ready', port: app.port });
    process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
    process.channel?.unref();
  }
} catch (err) {
  logger.fatal({ err }, 'docshare failed to start');
  process.exit(1);
}
