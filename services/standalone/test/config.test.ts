import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { ConfigError, httpLimitsOf } from '@docshare/http';
import { embeddedConfig } from '../src/config.ts';

describe('embeddedConfig (npm start)', () => {
  it('has the services\' defaults, from the same schemas', () => {
    const config = embeddedConfig({});
    assert.equal(config.port, 8080);
    assert.equal(config.host, '0.0.0.0');
    assert.equal(config.publicBaseUrl, 'http://localhost:8080');
    assert.equal(config.dataDir, resolve('./data'));
    assert.equal(config.jwtTtlSeconds, 86_400);
    assert.equal(config.downloadUrlTtlSeconds, 900);
    assert.equal(config.maxUploadBytes, 100 * 1024 * 1024);
    assert.equal(config.storageQuotaBytes, 1024 ** 3);
    assert.equal(config.consistencyWaitMs, 5_000);
    assert.equal(config.logLevel, 'info');
    assert.equal(config.jwtSecret, undefined);
    assert.equal(config.corsOrigins, undefined);
    assert.equal(config.metrics, undefined);
    assert.deepEqual(config.http, httpLimitsOf({}));
    assert.equal(config.extract.EXTRACT_OWNER_BACKLOG, 100);
  });

  it('reads each concern\'s variables', () => {
    const config = embeddedConfig({
      PORT: '9090', PUBLIC_BASE_URL: 'https://docs.example/', JWT_TTL_SECONDS: '60', CORS_ORIGINS: '*', TRUST_PROXY: '1',
      CONSISTENCY_WAIT_MS: '0', METRICS_PORT: '9464', HTTP_REQUEST_TIMEOUT_MS: '1000', EXTRACT_CONCURRENCY: '2', LOG_LEVEL: 'warn',
    });
    assert.equal(config.port, 9090);
    assert.equal(config.publicBaseUrl, 'https://docs.example');
    assert.equal(config.jwtTtlSeconds, 60);
    assert.equal(config.corsOrigins, '*');
    assert.equal(config.trustProxy, 1);
    assert.equal(config.consistencyWaitMs, 0);
    assert.deepEqual(config.metrics, { port: 9464, host: '127.0.0.1' });
    assert.equal(config.http.requestTimeoutMs, 1000);
    assert.equal(config.extract.EXTRACT_CONCURRENCY, 2);
    assert.equal(config.logLevel, 'warn');
  });

  it('names every bad value in one ConfigError', () => {
    assert.throws(() => embeddedConfig({ PORT: 'abc', JWT_TTL_SECONDS: '0', CORS_ORIGINS: 'example.com' }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.deepEqual(error.problems, [
        'PORT must be an integer >= 0, got "abc"',
        'JWT_TTL_SECONDS must be an integer >= 1, got "0"',
        'CORS_ORIGINS "example.com" is not an origin (scheme://host[:port], e.g. https://app.example or http://localhost:5173)',
      ]);
      return true;
    });
  });
});
