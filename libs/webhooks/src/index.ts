/**
 * @docshare/webhooks: the sending side of creators' webhooks (issue 23): secrets and their
 * sealing, Standard Webhooks signatures, the SSRF guard, the retry schedule and the HTTP
 * deliverer. The delivery state (endpoints, tasks, attempts) is `@docshare/webhooks/store`.
 */
export * from './secrets.ts';
export * from './signing.ts';
export * from './url-guard.ts';
export * from './retry.ts';
export * from './deliver.ts';
export * from './remote-check.ts';
