/**
 * The HTTP ceiling of `npm run bench:stack`, one process per role:
 *   node bench/stack/http-ceiling.ts bare <port>            express: JSON body parsed, a fixed api-stats answer
 *   node bench/stack/http-ceiling.ts proxy <port> <target>  express forwarding every request to <target>
 *                                                           with the gateway's own proxy (services/gateway/src/proxy.ts)
 */
import express from 'express';
import { makeLogger } from '@docshare/http';
import { httpUpstream } from '../../services/gateway/src/proxy.ts';

const [role, portText, target] = process.argv.slice(2);
const port = Number(portText);
const app = express();
app.disable('x-powered-by');
app.set('etag', false);
if (role === 'bare') {
  app.post('/api/V1/stats/api-stats', express.json(), (_req, res) => {
    res.json({ status: 'success', data: { total_comments: 3, total_files: 12, total_views: 40, total_downloads: 7, total_sales: 0 } });
  });
} else if (role === 'proxy' && target) {
  app.use(httpUpstream(target, makeLogger('bench-proxy', 'warn')));
} else {
  console.error('usage: http-ceiling.ts bare <port> | proxy <port> <target-url>');
  process.exit(2);
}
const server = app.listen(port, '127.0.0.1');
server.keepAliveTimeout = 65_000;
process.once('SIGTERM', () => server.close(() => process.exit(0)));
