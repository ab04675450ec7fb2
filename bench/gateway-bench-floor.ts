/**
 * @module gateway-bench-floor
 * The Node floor of `bench/gateway.bench.ts`, a child process of its own: the least any Node
 * reverse proxy does — a `node:http` server, an undici `Agent` keeping its upstream connections
 * alive, each request's headers (less the hop-by-hop ones) and body piped to the upstream and its
 * answer piped back; no classification, identity, limiter, metrics or body parsing. What the
 * gateway costs beyond it is what the gateway itself adds. `node gateway-bench-floor.ts
 * <upstream>`; reports its URL over IPC.
 */

import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';

const [upstream = ''] = process.argv.slice(2);
const origin = new URL(upstream).origin;
// As the gateway's own: keep-alive, no cap on connections.
const agent = new Agent({ keepAliveTimeout: 30_000 });

/** Headers that belong to one connection, not to the exchange. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'host',
]);

function forwarded(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return out;
}

const server = createServer((req, res) => {
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  agent
    .request({
      origin,
      path: req.url ?? '/',
      method: (req.method ?? 'GET') as 'GET',
      headers: forwarded(req.headers),
      body: hasBody ? req : null,
    })
    .then(
      (answer) => {
        const headers: Record<string, string | string[]> = {};
        for (const name in answer.headers) {
          const value = answer.headers[name];
          if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
        }
        res.writeHead(answer.statusCode, headers);
        answer.body.pipe(res);
        res.once('close', () => answer.body.destroy());
      },
      () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      },
    );
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.send?.({ ready: true, url: `http://127.0.0.1:${port}` });
});
process.on('disconnect', () => process.exit(0));
