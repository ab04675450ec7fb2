/**
 * @module server/express/json-body
 * Reading an A2A request's JSON body in front of the SDK: the plain case (`application/json` or
 * `application/a2a+json` with no parameters, a `Content-Length` within the limit, no
 * `Content-Encoding`, no `Transfer-Encoding`) is read here with three stream listeners and one
 * `JSON.parse`; everything else goes to the `express.json()` parser given, which also answers its
 * errors (too large, bad charset, compressed bodies). The plain case gives what `express.json()`
 * would give: the same `req.body` or error, a `SyntaxError` for what it refuses as JSON, and a
 * request the SDK's own parser then skips. Measured in front of the SDK's JSON-RPC server, this saves about
 * 2 µs per request in process and several µs on loopback over `express.json()`
 * (`bench/http.bench.ts`).
 */

import { createRequire } from 'node:module';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Options of {@link jsonBodyReader}.
 */
export interface JsonBodyOptions {
  /** The `express.json()` middleware for every other case (configured as the plain case is). */
  readonly fallback: RequestHandler;
  /** Media types read here, exact and lower case (a `Content-Type` with parameters falls back). */
  readonly types: readonly string[];
  /** Largest body read here, bytes; `undefined`: none is (every body goes to `fallback`). */
  readonly limitBytes: number | undefined;
  /** As `express.json({ strict })`: only an object or an array at the top (default true there). */
  readonly strict: boolean;
}

/**
 * Whether the `express` this package resolves is 4.x, whose body parser (1.x) skips only a request
 * marked `req._body`; 5.x's skips a request whose stream has ended. The SDK's router uses the same
 * `express` (a peer dependency); when it cannot be read, requests are marked. (With two copies of
 * Express installed, this 5.x and the SDK's 4.x, the SDK's parser would refuse plain bodies: keep
 * one Express.) The mark is not added under 5.x because a new property on every request costs µs.
 */
const MARK_PARSED = (() => {
  try {
    const pkg = createRequire(import.meta.url)('express/package.json') as { version?: unknown };
    return !(typeof pkg.version === 'string' && Number.parseInt(pkg.version, 10) >= 5);
  } catch {
    return true;
  }
})();

const DIGITS = /^\d{1,15}$/;

/**
 * A body reader with the signature of `express.json()`'s middleware (`done` is its `next`).
 *
 * @example
 * ```ts
 * const read = jsonBodyReader({ fallback: express.json(), types: ['application/json'], limitBytes: 102_400, strict: true });
 * read(req, res, (error) => (error ? answerMalformed(error) : decide(req.body)));
 * ```
 */
export function jsonBodyReader(
  options: JsonBodyOptions,
): (req: Request, res: Response, done: NextFunction) => void {
  const { fallback, types, limitBytes, strict } = options;
  return (req, res, done) => {
    const headers = req.headers;
    const header = headers['content-length'];
    const length = header !== undefined && DIGITS.test(header) ? Number(header) : -1;
    const type = headers['content-type'];
    if (
      limitBytes === undefined ||
      type === undefined ||
      !types.includes(type) ||
      length < 0 ||
      length > limitBytes ||
      headers['content-encoding'] !== undefined ||
      headers['transfer-encoding'] !== undefined ||
      !req.readable ||
      req.readableEnded
    ) {
      fallback(req, res, done);
      return;
    }
    readPlain(req, length, strict, done);
  };
}

/** An error as `express.json()` (raw-body) makes them: an HTTP status and a type. */
function bodyError(status: number, message: string, type: string): Error {
  return Object.assign(new Error(message), { status, statusCode: status, expose: true, type });
}

/**
 * Reads the whole body (`length` bytes, as the header said), then parses it as `express.json()`
 * would. Ends as raw-body does otherwise: 400 "request aborted" when the request closes first
 * (a client gone, a `req.destroy()`), 400 when more than `length` bytes come, 500 when an earlier
 * middleware set an encoding on the stream. Three listeners; Node emits a request's `error` only
 * to listeners, and always closes it after.
 */
function readPlain(req: Request, length: number, strict: boolean, done: NextFunction): void {
  let first: Buffer | undefined;
  let more: Buffer[] | undefined;
  let received = 0;
  const stop = (error?: Error): void => {
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('close', onClose);
    if (error !== undefined) done(error);
  };
  const onData = (chunk: unknown): void => {
    if (!(chunk instanceof Buffer)) {
      stop(bodyError(500, 'stream encoding should not be set', 'stream.encoding.set'));
      return;
    }
    received += chunk.length;
    if (received > length) {
      stop(bodyError(400, 'request size did not match content length', 'request.size.invalid'));
      return;
    }
    if (first === undefined) first = chunk;
    else if (more === undefined) more = [first, chunk];
    else more.push(chunk);
  };
  const onClose = (): void => stop(bodyError(400, 'request aborted', 'request.aborted'));
  const onEnd = (): void => {
    stop();
    const bytes = more !== undefined ? Buffer.concat(more) : first;
    let body: unknown;
    try {
      body = parseJson(bytes === undefined ? '' : bytes.toString('utf8'), strict);
    } catch (error) {
      done(error);
      return;
    }
    req.body = body;
    // Express 4's parser (body-parser 1.x) skips a request marked so; Express 5's skips it because
    // its stream has ended, and the mark (a new property on every request) would cost µs.
    if (MARK_PARSED) (req as { _body?: boolean })._body = true;
    done();
  };
  // `on`, not `once` (which wraps each listener): every handler removes all three.
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('close', onClose);
}

/**
 * `express.json()`'s parse: a leading byte-order mark dropped (as its UTF-8 decoder does), an empty
 * body is `{}`, and with `strict` anything but an object or an array at the top is a
 * `SyntaxError`.
 *
 * @example
 * ```ts
 * parseJson('\uFEFF{"a":1}', true); // { a: 1 }
 * parseJson('', true); // {}
 * parseJson('"text"', true); // throws SyntaxError
 * ```
 */
export function parseJson(text: string, strict: boolean): unknown {
  const json = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (json.length === 0) return {};
  if (strict) {
    const start = firstNonWhitespace(json);
    if (start !== '{' && start !== '[') {
      throw new SyntaxError(`Unexpected token ${start === '' ? 'end' : start} in JSON (strict)`);
    }
  }
  return JSON.parse(json);
}

/** The first character that is not JSON whitespace (space, tab, LF, CR), or '' at the end. */
function firstNonWhitespace(text: string): string {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return text.charAt(i);
  }
  return '';
}
