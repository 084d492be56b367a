import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, intVar } from '@docshare/http';
import {
  auth, blob, concern, files, authOrSecretFile, kafka, loadConfig, MONGO_SOCKET_TIMEOUT_MS, mongo, optionalBlob, optionalMongo, recorder, service,
} from '../src/config.ts';

const problemsOf = (run: () => unknown): string[] => {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.problems;
  }
  assert.fail('no ConfigError');
};

describe('loadConfig', () => {
  it('reads every concern from one environment into typed settings', () => {
    const config = loadConfig({ MONGO_URL: 'mongodb://m', KAFKA_BROKERS: 'a:1,b:2', PORT: '9000', PUBLIC_BASE_URL: 'https://x.example/' }, {
      service: service({ port: 8081, publicPort: 'edge' }), mongo: mongo(), kafka: kafka(), files: files(),
    });
    assert.equal(config.service.port, 9000);
    assert.equal(config.service.logLevel, 'info');
    assert.equal(config.service.publicBaseUrl, 'https://x.example');
    assert.equal(config.service.metrics, undefined);
    assert.equal(config.mongo.mongoUrl, 'mongodb://m');
    assert.equal(config.mongo.readDb, 'docshare_read');
    assert.deepEqual(config.kafka.kafkaBrokers, ['a:1', 'b:2']);
    assert.equal(config.kafka.eventsPartitions, 6);
    assert.equal(config.files.maxUploadBytes, 100 * 1024 * 1024);
  });

  it('falls back on the own port or the gateway\'s for the public address', () => {
    assert.equal(loadConfig({ PORT: '9000' }, { s: service({ port: 8081, publicPort: 'edge' }) }).s.publicBaseUrl, 'http://localhost:8080');
    assert.equal(loadConfig({ PORT: '9000' }, { s: service({ port: 8080, publicPort: 'own' }) }).s.publicBaseUrl, 'http://localhost:9000');
    assert.equal(loadConfig({}, { s: service({ port: 8085, publicPort: 'edge' }) }).s.port, 8085);
  });

  it('names every bad or missing variable of every concern in one error', () => {
    assert.deepEqual(problemsOf(() => loadConfig({ PORT: 'abc', METRICS_PORT: '8081' }, {
      service: service({ port: 8081, publicPort: 'edge' }), mongo: mongo(), blob: blob(), auth: auth(),
    })), [
      'PORT must be an integer >= 0, got "abc"',
      'MONGO_URL is required',
      'MINIO_ENDPOINT is required', 'MINIO_ACCESS_KEY is required', 'MINIO_SECRET_KEY is required',
      'JWT_SECRET is required',
    ]);
    assert.deepEqual(problemsOf(() => loadConfig({ METRICS_PORT: '8081' }, { service: service({ port: 8081, publicPort: 'edge' }) })),
      ['METRICS_PORT must differ from the service\'s PORT (8081): metrics are never served on the main port']);
    assert.deepEqual(problemsOf(() => loadConfig({}, { recorder: recorder() })), ['DOCS_COMMAND_URL is required', 'INTERNAL_TOKEN is required']);
    assert.deepEqual(problemsOf(() => loadConfig({}, { auth: authOrSecretFile() })), ['JWT_SECRET or JWT_SECRET_FILE is required']);
  });

  it('keeps the per-service default of MONGO_SOCKET_TIMEOUT_MS declared beside the variable', () => {
    const env = { MONGO_URL: 'mongodb://m' };
    assert.equal(loadConfig(env, { mongo: mongo() }).mongo.mongoSocketTimeoutMs, MONGO_SOCKET_TIMEOUT_MS.default);
    assert.equal(loadConfig(env, { mongo: mongo({ socketTimeout: 'writeSide' }) }).mongo.mongoSocketTimeoutMs, 0);
    assert.equal(loadConfig({ ...env, MONGO_SOCKET_TIMEOUT_MS: '500' }, { mongo: mongo({ socketTimeout: 'writeSide' }) }).mongo.mongoSocketTimeoutMs, 500);
    assert.deepEqual(problemsOf(() => loadConfig({ ...env, MONGO_SOCKET_TIMEOUT_MS: '-1' }, { mongo: mongo() })),
      ['MONGO_SOCKET_TIMEOUT_MS must be an integer >= 0, got "-1"']);
  });

  it('leaves optional dependencies undefined until they are configured', () => {
    assert.equal(loadConfig({}, { m: optionalMongo() }).m, undefined);
    assert.equal(loadConfig({ MINIO_ENDPOINT: 'minio:9000' }, { b: optionalBlob() }).b, undefined);
    assert.equal(loadConfig({ MINIO_ENDPOINT: 'minio:9000', MINIO_ACCESS_KEY: 'a', MINIO_SECRET_KEY: 's' }, { b: optionalBlob() }).b?.bucket, 'docshare-files');
  });

  it('runs a concern\'s own rules after the variables parsed, and passes other errors through', () => {
    const boom = concern({ N: intVar(1) }, () => {
      throw new TypeError('not a configuration problem');
    });
    assert.throws(() => loadConfig({}, { boom }), TypeError);
  });
});
