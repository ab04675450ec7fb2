/**
 * @module http-bench-load
 * `bench:http`'s load generator: autocannon in a child process, driven over IPC.
 */

import { type ChildProcess, spawn } from 'node:child_process';

/** Connections autocannon keeps open. */
export const CONNECTIONS = 10;

/**
 * autocannon in a child process (off the server's thread; autocannon aggregates its results only
 * on a main thread), driven over IPC.
 */
const LOAD_PROCESS = `
const autocannon = require('autocannon');
process.on('message', ({ port, seconds, connections }) => {
  autocannon({
    url: 'http://127.0.0.1:' + port + '/a2a/jsonrpc',
    connections,
    duration: seconds,
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
    // A new messageId per request ([<id>] is replaced by autocannon).
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage',
      params: { message: { messageId: '[<id>]', role: 'ROLE_USER', parts: [{ text: 'hi' }] } } }),
    idReplacement: true,
  }, (error, result) => {
    if (error) process.send({ error: String(error) });
    else process.send({ rps: result.requests.total / result.duration,
      failed: result.errors + result.timeouts + result.non2xx });
  });
});
`;

/** Runs autocannon against loopback `port` for `seconds`; its requests/s and failures. */
export function runLoad(
  load: ChildProcess,
  port: number,
  seconds: number,
): Promise<{ rps: number; failed: number }> {
  return new Promise((resolve, reject) => {
    load.once('message', (m: { rps: number; failed: number } | { error: string }) => {
      if ('error' in m) reject(new Error(m.error));
      else if (!(m.rps > 0)) reject(new Error(`autocannon measured no requests on port ${port}`));
      else resolve(m);
    });
    load.send({ port, seconds, connections: CONNECTIONS });
  });
}

/** Starts the load child (stdio inherited, IPC channel open). */
export function startLoadProcess(): ChildProcess {
  return spawn(process.execPath, ['-e', LOAD_PROCESS], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}
