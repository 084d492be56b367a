import express from 'express';
import { hostname } from 'node:os';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTokens, makeUrlSigner } from '@docshare/auth';
import { makeMinioBlobStore } from '@docshare/blob-store/minio';
import { openMongoClaimStore } from '@docshare/claim-store/mongo';
import { openMongoEventStore } from '@docshare/event-store/mongo';
import { closeServer, counter, envReader, exitGracefully, listen, makeLogger, makeOps, requestLog } from '@docshare/http';
import { startOutboxRelay } from '@docshare/outbox';
import { makeMongoProgress, waitForProjections } from '@docshare/projection';
import { commonConfig, connectKafka, connectMongo, PROJECTOR_GROUPS } from '@docshare/projection/distributed';
import { makeDocsCommands } from './commands.ts';
import { makeDocsCommandApp, prepareSpool } from './app.ts';

const NAME = 'docs-command';
const logger = makeLogger(NAME);
const env = envReader(process.env);
const config = commonConfig(process.env);
const port = env.int('PORT', 8081);
const jwtSecret = env.string('JWT_SECRET');

const { client, db } = await connectMongo(config.mongoUrl, config.commandDb);
const readDb = client.db(config.readDb);
const events = await openMongoEventStore(db);
const claims = await openMongoClaimStore(db);
const blobs = await makeMinioBlobStore({
  endPoint: env.string('MINIO_ENDPOINT'), accessKey: env.string('MINIO_ACCESS_KEY'), secretKey: env.string('MINIO_SECRET_KEY'),
  bucket: env.string('MINIO_BUCKET', 'docshare-files'),
});
const bus = await connectKafka(config, NAME, logger);
const relay = startOutboxRelay({ db, publisher: bus.publisher, logger, owner: `${hostname()}:${process.pid}` });

const ops = makeOps(NAME, {
  mongodb: async () => { await db.command({ ping: 1 }); },
  minio: async () => { await blobs.stat('readiness-probe'); },
});
const lagging = counter(ops.registry, 'docshare_read_your_writes_timeouts_total', 'Commands answered before every projector reflected them');
const caughtUp = waitForProjections(makeMongoProgress(readDb), PROJECTOR_GROUPS, env.int('READ_YOUR_WRITES_TIMEOUT_MS', 5_000));

const commands = makeDocsCommands({
  events, claims, blobs, logger,
  tokens: makeTokens(jwtSecret, env.int('JWT_TTL_SECONDS', 86_400, 1)),
  signer: makeUrlSigner(jwtSecret),
  publicBaseUrl: config.publicBaseUrl,
  downloadUrlTtlSeconds: env.int('DOWNLOAD_URL_TTL_SECONDS', 900, 1),
  afterCommit: async (recorded) => {
    relay.notify();
    if (!(await caughtUp(recorded))) {
      lagging.inc();
      logger.warn({ subject: recorded.subject, version: recorded.version }, 'read models lag behind a command');
    }
  },
});

const app = express();
app.disable('x-powered-by');
app.use(ops.httpMetrics);
app.use(ops.router);
app.use(requestLog(logger));
const spoolDir = env.string('SPOOL_DIR', join(tmpdir(), `docshare-spool-${process.pid}`));
await prepareSpool(spoolDir);
app.use(makeDocsCommandApp({
  commands, logger, publicBaseUrl: config.publicBaseUrl, spoolDir,
  maxUploadBytes: env.int('MAX_UPLOAD_BYTES', 100 * 1024 * 1024, 1),
}));
const { server } = await listen(app, port, config.host);
logger.info({ port }, `${NAME} listening`);
exitGracefully(logger, [
  () => closeServer(server),
  () => relay.stop(),
  () => bus.close(),
  () => client.close(),
]);
