/**
 * @module gateway-admin
 * `gateway --admin-port`'s requests: `/healthz`, `/readyz` (503 saying why not), `/metrics`.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Gateway } from 'a2a-ratelimit-gateway';

/**
 * The admin listener's request handler.
 *
 * @example
 * ```ts
 * createServer(adminHandler(gateway, metrics?.registry)).listen(9090, '127.0.0.1');
 * ```
 */
export function adminHandler(
  gateway: Pick<Gateway, 'isReady' | 'cardError'>,
  registry: import('prom-client').Registry | undefined,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    else if (path === '/readyz') {
      const ready = gateway.isReady();
      res
        .writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' })
        .end(ready ? 'ready\n' : `not ready: ${gateway.cardError() ?? 'no card yet'}\n`);
    } else if (path === '/metrics' && registry !== undefined) {
      registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
        () => res.writeHead(500).end(),
      );
    } else res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  };
}
