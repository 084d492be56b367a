/**
 * One configuration (issue 20): per concern one schema, each variable declared once with its one
 * default (libs/runtime/src/config/*.ts). A main calls `loadConfigOrExit(env, { ... })` with its
 * environment once at start, with the concerns it needs, and passes the typed result down; no
 * library reads the environment. Where a service differs on purpose it is declared beside the
 * variable (MONGO_SOCKET_TIMEOUT_MS: the write side's 0, mongo.ts).
 *
 *   const config = loadConfigOrExit(env, {
 *     service: service({ port: 8081, publicPort: 'edge' }), mongo: mongo(), kafka: kafka(),
 *   }, (message) => logger.fatal(message));
 */
import { auth, authOrSecretFile, optionalAuth } from './config/auth.ts';
import { blob, optionalBlob } from './config/blob.ts';
import { consistency } from './config/consistency.ts';
import { dataDir, supervisor } from './config/embedded.ts';
import { edge } from './config/edge.ts';
import { extraction } from './config/extraction.ts';
import { files } from './config/files.ts';
import { groups, kafka } from './config/kafka.ts';
import { mongo, optionalMongo } from './config/mongo.ts';
import { outbox } from './config/outbox.ts';
import { rateLimit } from './config/rate-limit.ts';
import { search } from './config/search.ts';
import { logging, service } from './config/service.ts';
import { internalRoutes, recorder } from './config/upstreams.ts';
import { webhooks } from './config/webhooks.ts';
import { optionalPersonalData, personalData } from './config/personal-data.ts';
import type { Concern } from './config/concern.ts';

export { concern, loadConfig, loadConfigOrExit, varsOf, type Concern, type ConfigOf } from './config/concern.ts';
export { auth, authOrSecretFile, optionalAuth } from './config/auth.ts';
export { blob, optionalBlob, type BlobSettings } from './config/blob.ts';
export { consistency } from './config/consistency.ts';
export { dataDir, supervisor } from './config/embedded.ts';
export { edge } from './config/edge.ts';
export { extraction, type ExtractSettings } from './config/extraction.ts';
export { files, type ResumableConfig } from './config/files.ts';
export { groups, kafka, type GroupSettings, type KafkaConfig } from './config/kafka.ts';
export { MONGO_SOCKET_TIMEOUT_MS, mongo, optionalMongo, type MongoOptions, type MongoSettings } from './config/mongo.ts';
export { outbox } from './config/outbox.ts';
export { rateLimit } from './config/rate-limit.ts';
export { optionalPersonalData, personalData } from './config/personal-data.ts';
export { search } from './config/search.ts';
export { logging, service, type ServiceOptions, type ServiceSettings } from './config/service.ts';
export { internalRoutes, recorder } from './config/upstreams.ts';
export {
  DEFAULT_WEBHOOK_RETRY_SCHEDULE, parseDuration, parseDurations, webhooks, webhooksWithKey, type WebhookSettings, type WebhookUrlPolicy,
} from './config/webhooks.ts';

/** Every concern, once (the README's configuration table is tested against them: libs/runtime/test/config-readme.test.ts). */
export const ALL_CONCERNS: Record<string, Concern> = {
  service: service({ port: 8080, publicPort: 'own' }), logging: logging(),
  mongo: mongo(), optionalMongo: optionalMongo(),
  kafka: kafka(), groups: groups(),
  consistency: consistency(),
  blob: blob(), optionalBlob: optionalBlob(),
  auth: auth(), optionalAuth: optionalAuth(), authOrSecretFile: authOrSecretFile(),
  files: files(),
  extraction: extraction(),
  search: search(),
  rateLimit: rateLimit(),
  edge: edge(),
  internalRoutes: internalRoutes(), recorder: recorder(),
  outbox: outbox(),
  dataDir: dataDir(), supervisor: supervisor(),
  webhooks: webhooks(),
  personalData: personalData(), optionalPersonalData: optionalPersonalData(),
};
