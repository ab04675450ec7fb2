/**
 * @module server/express/json-body
 * Reading an A2A request's JSON body in front of the SDK: the plain case here (possibly left
 * unparsed until admitted), everything else through `express.json()`.
 */

import { createRequire } from 'node:module';
import type { Request, RequestHandler, Response } from 'express';
import { DEFAULT_MAX_JSON_DEPTH, type JsonPaths, scanJson } from './json-scan.js';

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
  /**
   * Deepest nesting of objects and arrays accepted (the top level is 1; default
   * `DEFAULT_MAX_JSON_DEPTH`, 64); a deeper body is refused
   * with a 400 error (`type: 'entity.too.deep'`) before it is parsed. The `fallback` should be
   * made with `verify: depthVerify(maxDepth)` to bound the bodies it reads alike.
   */
  readonly maxDepth?: number | undefined;
  /**
   * When given, a plain body is scanned for these paths and left unparsed: `done(undefined,
   * pending)` hands over what the scan found, and {@link parsePending} parses it once the
   * request is admitted. A body the scan cannot read is parsed at once (its error answered).
   */
  readonly paths?: JsonPaths | undefined;
}

/** A plain body read and scanned but not parsed yet, an object at the top (see {@link JsonBodyOptions.paths}). */
export interface PendingBody {
  /** The text, past a byte-order mark. */
  readonly text: string;
  /** The raw JSON text of each path found (`scanJson`). */
  readonly found: ReadonlyMap<string, string>;
}

/** `done` of a body reader: an error, or nothing (then `req.body` is set, or `pending` given). */
export type BodyDone = (error?: unknown, pending?: PendingBody) => void;

/** The error of a body nested deeper than the limit (a 400, as `express.json()`'s errors are). */
export function tooDeepError(maxDepth: number): Error {
  return bodyError(400, `JSON nested deeper than ${maxDepth} levels`, 'entity.too.deep');
}

/**
 * An `express.json({ verify })` function refusing a body nested deeper than `maxDepth` before
 * `express.json()` parses it (its charset decoded as the parser will; a charset this runtime
 * cannot decode is refused as unsupported, 415).
 *
 * @example
 * ```ts
 * express.json({ limit: '100kb', verify: depthVerify(64) });
 * ```
 */
export function depthVerify(
  maxDepth: number,
): (req: unknown, res: unknown, buf: Buffer, encoding: string) => void {
  const none: JsonPaths = { children: new Map() };
  return (_req, _res, buf, encoding) => {
    let text: string;
    const charset = (encoding || 'utf-8').toLowerCase();
    if (charset === 'utf-8' || charset === 'utf8') text = buf.toString('utf8');
    else {
      try {
        text = new TextDecoder(charset).decode(buf);
      } catch {
        throw bodyError(
          415,
          `unsupported charset "${charset.toUpperCase()}"`,
          'charset.unsupported',
        );
      }
    }
    const start = text.charCodeAt(0) === 0xfeff ? 1 : 0;
    if (scanJson(text, start, none, maxDepth).status === 'too-deep') throw tooDeepError(maxDepth);
  };
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
 * A body reader with the signature of `express.json()`'s middleware (`done` is its `next`). The
 * plain case (a listed media type without parameters, a `Content-Length` within the limit, no
 * `Content-Encoding` or `Transfer-Encoding`) is read here; everything else goes to `fallback`.
 *
 * @example
 * ```ts
 * const read = jsonBodyReader({ fallback: express.json(), types: ['application/json'], limitBytes: 102_400, strict: true });
 * read(req, res, (error) => (error ? answerMalformed(error) : decide(req.body)));
 * ```
 */
export function jsonBodyReader(
  options: JsonBodyOptions,
): (req: Request, res: Response, done: BodyDone) => void {
  const { fallback, types, limitBytes, strict } = options;
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_JSON_DEPTH;
  const paths = options.paths ?? { children: new Map() };
  const defer = options.paths !== undefined;
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
    readPlain(req, length, done, (text) => {
      const start = text.charCodeAt(0) === 0xfeff ? 1 : 0;
      const scan = scanJson(text, start, paths, maxDepth);
      if (scan.status === 'too-deep') {
        done(tooDeepError(maxDepth));
        return;
      }
      if (defer && scan.status === 'ok' && scan.topLevelObject) {
        done(undefined, { text: text.slice(start), found: scan.found });
        return;
      }
      let body: unknown;
      try {
        body = parseJson(text, { strict });
      } catch (error) {
        done(error);
        return;
      }
      settle(req, body);
      done();
    });
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
function readPlain(
  req: Request,
  length: number,
  done: BodyDone,
  read: (text: string) => void,
): void {
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
    read(bytes === undefined ? '' : bytes.toString('utf8'));
  };
  // `on`, not `once` (which wraps each listener): every handler removes all three.
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('close', onClose);
}

/** Sets a parsed body on the request, as `express.json()` leaves it. */
function settle(req: Request, body: unknown): void {
  req.body = body;
  // Express 4's parser (body-parser 1.x) skips a request marked so; Express 5's skips it because
  // its stream has ended, and the mark (a new property on every request) would cost µs.
  if (MARK_PARSED) (req as { _body?: boolean })._body = true;
}

/**
 * Parses a {@link PendingBody} (once its request is admitted) and sets it as `req.body`; throws
 * the parser's `SyntaxError`.
 */
export function parsePending(req: Request, pending: PendingBody): unknown {
  const body: unknown = JSON.parse(pending.text);
  settle(req, body);
  return body;
}

/**
 * `express.json()`'s parse: a leading byte-order mark dropped (as its UTF-8 decoder does), an empty
 * body is `{}`, and with `strict` anything but an object or an array at the top is a
 * `SyntaxError`.
 *
 * @example
 * ```ts
 * parseJson('\uFEFF{"a":1}', { strict: true }); // { a: 1 }
 * parseJson('', { strict: true }); // {}
 * parseJson('"text"', { strict: true }); // throws SyntaxError
 * ```
 */
export function parseJson(text: string, options: { readonly strict: boolean }): unknown {
  const json = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (json.length === 0) return {};
  if (options.strict) {
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
