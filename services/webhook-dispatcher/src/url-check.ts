import express, { type Express } from 'express';
import { M } from '@docshare/contracts';
import { internalOnly, jsonBody, bodyOf, sendError } from '@docshare/http';
import { checkWebhookUrl, URL_CHECK_PATH, urlCheckAnswer, type WebhookUrlPolicy } from '@docshare/webhooks';

/**
 * The dispatcher's one HTTP route besides its ops: docs-command's registration check of an
 * endpoint's URL (libs/webhooks remote-check.ts), answered under this service's policy with the
 * DNS its deliveries connect through (in compose the only service with a way out). Internal: the
 * token or the 404 of an unknown path.
 */
export const makeUrlCheckApp = (policy: WebhookUrlPolicy, internalToken: string, check = checkWebhookUrl): Express => {
  const app = express();
  app.disable('x-powered-by');
  app.post(URL_CHECK_PATH, internalOnly(internalToken), jsonBody(), async (req, res) => {
    res.json(urlCheckAnswer(await check(bodyOf(req).url, policy)));
  });
  app.use((_req, res) => sendError(res, 404, M.notFound));
  return app;
};
