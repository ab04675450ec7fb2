/**
 * @module fake-incoming-request
 * `fakeIncomingRequest`: a request as Node's HTTP server hands it to Express, without a socket, for
 * tests and benchmarks.
 */

import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';

/**
 * What {@link fakeIncomingRequest} builds from.
 */
export interface FakeIncomingRequestParts {
  /** The body bytes; `Content-Length` is set to their length unless `headers` says otherwise. */
  readonly body: Uint8Array;
  /** Default `/`. */
  readonly url?: string;
  /** Default `POST`. */
  readonly method?: string;
  /** Added to (and overriding) `content-type: application/json` and `content-length`. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Offsets at which the body is cut into chunks (any order; out of range ignored). */
  readonly splits?: readonly number[];
  /** The peer address the socket reports. */
  readonly remoteAddress?: string;
}

/**
 * A request whose body arrives in chunks as from a socket. Its socket is readable and `complete`
 * is set once the body has been read, as Node's HTTP parser sets them (body-parser looks at both to
 * skip a body already read).
 *
 * @example
 * ```ts
 * const req = fakeIncomingRequest({ body: Buffer.from('{"jsonrpc":"2.0"}'), url: '/a2a/jsonrpc' });
 * app.handle(req, new ServerResponse(req), done);
 * ```
 */
export function fakeIncomingRequest(parts: FakeIncomingRequestParts): IncomingMessage {
  const { body } = parts;
  const socket = new Socket();
  Object.defineProperty(socket, 'readable', { value: true });
  if (parts.remoteAddress !== undefined) {
    Object.defineProperty(socket, 'remoteAddress', { value: parts.remoteAddress });
  }
  const req = new IncomingMessage(socket);
  req.once('end', () => {
    req.complete = true;
  });
  req.method = parts.method ?? 'POST';
  req.url = parts.url ?? '/';
  req.headers = {
    'content-type': 'application/json',
    'content-length': String(body.length),
    ...parts.headers,
  };
  const cuts = [...new Set((parts.splits ?? []).filter((at) => at > 0 && at < body.length))].sort(
    (a, b) => a - b,
  );
  let from = 0;
  for (const at of [...cuts, body.length]) {
    if (at > from) req.push(Buffer.from(body.subarray(from, at)));
    from = at;
  }
  req.push(null);
  return req;
}
