import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { readBodyPrefix } from './read-body-prefix.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

describe('readBodyPrefix', () => {
  it('gives up a body that stalls after the time limit, with what arrived (loopback HTTP)', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json' });
      res.write('{"error":'); // and nothing more until the test ends
    });
    servers.push(server);
    server.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    expect(await readBodyPrefix(response, 64 * 1024, 200)).toBe('{"error":');
  });

  it('leaves the response whole for the SDK, and keeps characters whole at the cap', async () => {
    const response = new Response('héllo wörld');
    expect(await readBodyPrefix(response, 2)).toBe('h'); // 'é' is 2 bytes: cut, dropped
    expect(await response.text()).toBe('héllo wörld');
    expect(await readBodyPrefix(new Response(null))).toBe('');
    const used = new Response('x');
    await used.text();
    expect(await readBodyPrefix(used)).toBe('');
  });
});
