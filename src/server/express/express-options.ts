/**
 * @module server/express/express-options
 * The options of the Express admission middleware.
 */

import type { A2ARequestHandler, ServerCallContextBuilder } from '@a2a-js/sdk/server';
import type { UserBuilder } from '@a2a-js/sdk/server/express';
import type { Request, RequestHandler } from 'express';

/**
 * Who the caller is, from an Express request.
 *
 * @example
 * ```ts
 * const identify: ExpressIdentify = (req) => String(req.user?.id ?? 'anonymous');
 * ```
 */
export type ExpressIdentify = (req: Request) => string | Promise<string>;

/** Options of `jsonRpcAdmission` and `restAdmission`. */
export interface ExpressAdmissionOptions {
  /**
   * The same `UserBuilder` the agent gives the SDK. Default identity: `User.userName` of an
   * authenticated user; unauthenticated callers get {@link unauthenticatedKey}.
   */
  readonly userBuilder?: UserBuilder;
  /** Replaces the default identity entirely (then `userBuilder` is not called). */
  readonly identify?: ExpressIdentify;
  /**
   * Key of callers the `userBuilder` does not authenticate. Default `addr:<address>` (IPv6 by
   * prefix, see `ipv6PrefixLength`): the socket's address, or `req.ip` when the request carries
   * `X-Forwarded-For` (Express's `trust proxy` rules; set it behind a proxy). An app that learns the
   * client address another way passes `(req) => addressCallerKey(req.ip)`. A key that does not begin
   * with `addr:` gets it, so it never meets a user's name. Never a header the caller could set,
   * unless you choose one here.
   */
  readonly unauthenticatedKey?: (req: Request) => string;
  /**
   * IPv6 callers keyed by address share a key per prefix of this many bits (1–128); default 64.
   * IPv4-mapped IPv6 addresses are their IPv4 address.
   */
  readonly ipv6PrefixLength?: number;
  /** The skill a request targets, for skill-scoped policies. */
  readonly skill?: (req: Request, body: unknown) => string | undefined;
  /**
   * The SDK request handler, used to answer a duplicate message with its existing task.
   * Required while deduplication is on.
   */
  readonly requestHandler?: A2ARequestHandler;
  /** JSON-RPC only: send HTTP 429 / 503 with rejections instead of 200. Default false. */
  readonly mirrorHttpStatus?: boolean;
  /** Recognise v0.3 method names and `/v1/...` REST paths (the SDK's legacy mode). Default true. */
  readonly legacy?: boolean;
  /**
   * Body size limit, as `express.json` takes it; default `'100kb'` (the SDK's). Plain JSON bodies
   * within it are read directly (faster); given as a string, every body goes through
   * `express.json()`, so prefer a number of bytes.
   */
  readonly bodyLimit?: string | number;
  /**
   * Deepest nesting of objects and arrays accepted in a JSON body (the top level is 1); default
   * 64 (`DEFAULT_MAX_JSON_DEPTH`). A deeper body is refused before it is parsed: JSON-RPC
   * `-32600`, REST 400 `INVALID_ARGUMENT`, message "JSON nested deeper than 64 levels".
   */
  readonly maxJsonDepth?: number;
  /**
   * The SDK's router for this binding (`jsonRpcHandler(…)` / `restHandler(…)`). When given, the
   * middleware forwards what it admits (and what it does not decide) to it directly instead of
   * calling `next()`, so mount the middleware alone: one Express layer fewer per request, and the
   * two cannot end up on different paths. The mount is then the binding's alone: a path or verb
   * the SDK's router has no route for is answered here, in the binding's JSON error format
   * (Express would answer its HTML 404).
   * `rateLimitedJsonRpcHandler` and `rateLimitedRestHandler` set it up for you.
   */
  readonly sdkHandler?: RequestHandler;
  /**
   * The `contextBuilder` you gave the SDK's router, if any: a duplicate message's task is then
   * fetched with the same call context the SDK would build.
   */
  readonly contextBuilder?: ServerCallContextBuilder;
  /**
   * Response write deadline, ms: an admitted request holding leases whose response has bytes
   * waiting that are not written within it (a caller that stops reading a stream or a large
   * answer) has its socket destroyed, and its leases are released. Default 30,000; `Infinity`
   * turns it off. Checked every quarter of the deadline.
   */
  readonly writeDeadlineMs?: number;
}

/** The SDK's body limit (`express.json()`'s default). */
export const DEFAULT_BODY_LIMIT = '100kb';
/** {@link DEFAULT_BODY_LIMIT} in bytes. */
const DEFAULT_BODY_LIMIT_BYTES = 100 * 1024;

/**
 * The body limit in bytes for reading plain bodies ourselves: `express.json()`'s default (100 kb =
 * 102,400 bytes) or a number given; a limit given as a string is left to `express.json()` alone.
 */
export function limitBytesOf(bodyLimit: string | number | undefined): number | undefined {
  if (bodyLimit === undefined) return DEFAULT_BODY_LIMIT_BYTES;
  return typeof bodyLimit === 'number' ? bodyLimit : undefined;
}
