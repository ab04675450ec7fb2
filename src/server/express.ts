/**
 * @module server/express
 * Express admission in front of the SDK's `jsonRpcHandler` and `restHandler`: as one middleware
 * that builds the SDK's router and hands it what it admits (`rateLimitedJsonRpcHandler`,
 * `rateLimitedRestHandler`), or as a middleware mounted before the SDK's router on the same path
 * (`jsonRpcAdmission`, `restAdmission`). It parses the body once (the SDK's own `express.json()`
 * then skips it), answers a malformed body exactly as the SDK would, identifies the caller with
 * the agent's own `UserBuilder`, asks the limiter, and either writes the rejection (before any
 * task exists) or sets the `RateLimit` headers and passes the request on. The only file importing
 * express and the SDK's Express bits.
 */

import {
  formatSSEEvent,
  SendMessageResponse,
  SSE_HEADERS,
  StreamResponse,
  type Task,
} from '@a2a-js/sdk';
import {
  A2A_ERROR_CODE,
  RequestMalformedError,
  restStatusFor,
  toJsonRpcError,
  toRestErrorBody,
} from '@a2a-js/sdk/errors';
import {
  type A2ARequestHandler,
  defaultServerCallContextBuilder,
  type ServerCallContext,
  type ServerCallContextBuilder,
  UnauthenticatedUser,
  type User,
  validateVersion,
} from '@a2a-js/sdk/server';
import { jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express, {
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import { type A2AMethod, toA2AMethod } from '../core/a2a-methods.js';
import {
  type AddressKeyOptions,
  anonymousKeyOf,
  authenticatedCallerKey,
  createAddressKey,
} from './caller-key.js';
import {
  JSON_RPC_CONTENT,
  REST_CONTENT,
  writeAllow,
  writeHttp,
  writeJsonRpcMiss,
  writeRestMiss,
} from './express-misses.js';
import { jsonBodyReader } from './json-body.js';
import type {
  AdmissionOutcome,
  AdmissionRequest,
  AdmissionTicket,
  Binding,
  Limiter,
} from './limiter.js';
import { TICKET_HEADER } from './limiter.js';
import {
  ADMISSION_HEADER,
  guardContextBuilder,
  guardRequestHandler,
  markAdmitted,
} from './mediation.js';

export { guardContextBuilder, guardRequestHandler, mediationStats } from './mediation.js';

import { isRestRoute, matchRestRoute } from './rest-route.js';
import { TERMINAL_TASK_STATES } from './task-lease-tracker.js';

/**
 * Who the caller is, from an Express request.
 *
 * @example
 * ```ts
 * const identify: ExpressIdentify = (req) => String(req.user?.id ?? 'anonymous');
 * ```
 */
export type ExpressIdentify = (req: Request) => string | Promise<string>;

/**
 * Options of {@link jsonRpcAdmission} and {@link restAdmission}.
 *
 * @example
 * ```ts
 * const options: ExpressAdmissionOptions = { userBuilder, requestHandler };
 * ```
 */
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
   * The SDK's router for this binding (`jsonRpcHandler(…)` / `restHandler(…)`). When given, the
   * middleware forwards what it admits (and what it does not decide) to it directly instead of
   * calling `next()`, so mount the middleware alone: one Express layer fewer per request, and the
   * two cannot end up on different paths. The mount is then the binding's alone: a path or verb
   * the SDK's router has no route for is answered here, in the binding's JSON error format
   * (Express would answer its HTML 404).
   * {@link rateLimitedJsonRpcHandler} and {@link rateLimitedRestHandler} set it up for you.
   */
  readonly sdkHandler?: RequestHandler;
  /**
   * The `contextBuilder` you gave the SDK's router, if any: a duplicate message's task is then
   * fetched with the same call context the SDK would build.
   */
  readonly contextBuilder?: ServerCallContextBuilder;
}

/**
 * One request's admission state: what the limiter is asked (an `AdmissionRequest`; `caller` is
 * filled in once the identity is known) and what the answers need (JSON-RPC id, legacy form). One
 * object per request.
 */
class ParsedRequest implements AdmissionRequest {
  caller = '';
  skill: string | undefined = undefined;
  constructor(
    readonly binding: Binding,
    readonly method: A2AMethod,
    readonly tenant: string | undefined,
    readonly messageId: string | undefined,
    readonly legacy: boolean,
    /** JSON-RPC id. */
    readonly id: string | number | null,
  ) {}
}

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function messageIdOf(params: unknown): string | undefined {
  const message = (params as { message?: { messageId?: unknown } } | null | undefined)?.message;
  return stringOrUndefined(message?.messageId);
}

function jsonRpcId(body: unknown): string | number | null {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

function mediaType(headers: Request['headers']): string | undefined {
  const raw = headers['content-type'];
  if (raw === undefined || raw === 'application/json') return raw;
  return (raw.split(';', 1)[0] ?? '').trim().toLowerCase();
}

/**
 * The A2A versions the agent's card supports on JSON-RPC, learned as requests name them. A
 * request naming one the card does not support is answered here with the SDK's own
 * VersionNotSupported error instead of reaching the SDK's router, which would refuse it too but
 * log the error with its stack for every such request (a log any caller could flood). The card
 * is read once per version seen; without a request handler every version is passed on.
 */
function versionCheck(handler: A2ARequestHandler | undefined): {
  readonly known: Set<string>;
  check(version: string): Promise<Error | undefined>;
} {
  const known = new Set<string>();
  return {
    known,
    async check(version) {
      if (handler === undefined) return undefined;
      try {
        validateVersion(version, await handler.getAgentCard(), 'JSONRPC');
      } catch (error) {
        return error instanceof Error ? error : new Error(String(error));
      }
      known.add(version);
      return undefined;
    },
  };
}

/** The SDK's `isLegacyVersion`: no version, or one in [0.3, 1.0). */
function isA2AVersionLegacy(req: Request): boolean {
  const version = req.header('a2a-version')?.trim();
  if (version === undefined || version === '') return true;
  const match = /^(\d+)\.(\d+)/.exec(version);
  if (match === null) return false;
  const major = Number(match[1]);
  const minor = Number(match[2]);
  return major === 0 && minor >= 3;
}

/**
 * The default unauthenticated key (caller-key.ts): the client address, IPv6 by prefix. Without an
 * `X-Forwarded-For` header, Express's `req.ip` is the socket's address whatever `trust proxy`
 * says, so the socket is read directly (`req.ip` parses the header and runs the trust function; on
 * Express's request objects every property read is slow, and this runs on every request).
 */
function addressKeyOf(options: AddressKeyOptions): (req: Request) => string {
  const keyOf = createAddressKey(options);
  return (req) =>
    keyOf(
      (req.headers['x-forwarded-for'] === undefined ? undefined : req.ip) ??
        req.socket.remoteAddress,
    );
}

/** The SDK's body limit (`express.json()`'s default), and the same in bytes. */
const DEFAULT_BODY_LIMIT = '100kb';
const DEFAULT_BODY_LIMIT_BYTES = 100 * 1024;

/**
 * The body limit in bytes for reading plain bodies ourselves: `express.json()`'s default (100 kb =
 * 102,400 bytes) or a number given; a limit given as a string is left to `express.json()` alone.
 */
function limitBytesOf(bodyLimit: string | number | undefined): number | undefined {
  if (bodyLimit === undefined) return DEFAULT_BODY_LIMIT_BYTES;
  return typeof bodyLimit === 'number' ? bodyLimit : undefined;
}

/** State shared by both bindings' middleware. */
interface Admission {
  readonly limiter: Limiter;
  readonly options: ExpressAdmissionOptions;
  /** `options.identify`, when given (it replaces the default identity). */
  readonly identify: ExpressIdentify | undefined;
  /** The agent's `UserBuilder`, for the default identity. */
  readonly userBuilder: UserBuilder | undefined;
  /** Key of callers the `userBuilder` does not authenticate (or of all, without one). */
  readonly unauthenticatedKey: (req: Request) => string;
  /** Hands a request on: to `options.sdkHandler` when given, else to `next()`. */
  readonly pass: RequestHandler;
}

const callNext: RequestHandler = (_req, _res, next) => next();

function makeAdmission(limiter: Limiter, options: ExpressAdmissionOptions): Admission {
  if (limiter.dedupMethods.size > 0 && options.requestHandler === undefined) {
    throw new TypeError(
      'a2a-ratelimit: deduplication is on, so the Express adapter needs `requestHandler` (the SDK handler) to answer a duplicate with its task; or create the limiter with `dedup: false`',
    );
  }
  return {
    limiter,
    options,
    identify: options.identify,
    // The SDK's `noAuthentication` authenticates nobody: skip the call (and its promise).
    userBuilder:
      options.identify === undefined && options.userBuilder !== UserBuilder.noAuthentication
        ? options.userBuilder
        : undefined,
    unauthenticatedKey:
      options.unauthenticatedKey === undefined
        ? addressKeyOf(options)
        : anonymousKeyOf(options.unauthenticatedKey),
    pass: options.sdkHandler ?? callNext,
  };
}

/** The SDK call context for the dedup lookup: same user, tenant and headers the SDK would use. */
async function callContext(
  admission: Admission,
  req: Request,
  tenant: string | undefined,
): Promise<ServerCallContext> {
  const user = admission.options.userBuilder
    ? await admission.options.userBuilder(req)
    : new UnauthenticatedUser();
  const requestedVersion = req.header('a2a-version') || undefined;
  const build = admission.options.contextBuilder ?? defaultServerCallContextBuilder;
  return build({
    extensions: undefined,
    user,
    headers: req.headers,
    ...(requestedVersion === undefined ? {} : { requestedVersion }),
    ...(tenant === undefined ? {} : { tenant }),
  });
}

function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/**
 * Answers a request whose admission failed (the identity function, the store, a `skill`
 * function threw) the way the SDK answers an error of its own: JSON in the binding's error
 * format, never Express's HTML page, and one log line without a stack.
 */
function failRequest(res: Response, parsed: ParsedRequest, error: unknown): void {
  console.error(
    `a2a-ratelimit: ${parsed.method} (${parsed.binding}) not admitted, the admission failed: ${error instanceof Error ? error.message : String(error)}`,
  );
  if (res.headersSent) {
    res.end();
    return;
  }
  if (parsed.binding === 'jsonrpc') {
    const body = { jsonrpc: '2.0', id: parsed.id, error: toJsonRpcError(error) };
    writeHttp(res, 200, JSON_RPC_CONTENT, JSON.stringify(body));
    return;
  }
  const status = restStatusFor(error);
  writeHttp(res, status, REST_CONTENT, JSON.stringify(toRestErrorBody(error, status)));
}

/**
 * Runs identity → decision → outcome. What the identity function, the store or anything after
 * them (a `skill` function, an asynchronous step) throws is answered by {@link failRequest}.
 * Plain functions with the request's state as arguments: nothing is allocated per request but
 * the promise callbacks of an identity or store that is asynchronous.
 */
function decide(
  admission: Admission,
  req: Request,
  res: Response,
  next: NextFunction,
  parsed: ParsedRequest,
): void {
  try {
    const builder = admission.userBuilder;
    if (builder !== undefined) {
      const user = builder(req) as User | PromiseLike<User>;
      if (!isPromiseLike(user)) {
        withCaller(admission, req, res, next, parsed, callerOf(admission, req, user));
        return;
      }
      thenOrFail(user, res, parsed, (resolved) =>
        withCaller(admission, req, res, next, parsed, callerOf(admission, req, resolved)),
      );
      return;
    }
    const identify = admission.identify;
    const caller = identify === undefined ? admission.unauthenticatedKey(req) : identify(req);
    if (typeof caller === 'string') withCaller(admission, req, res, next, parsed, caller);
    else thenOrFail(caller, res, parsed, (c) => withCaller(admission, req, res, next, parsed, c));
  } catch (error) {
    failRequest(res, parsed, error);
  }
}

/** Runs `step` with the promise's value; a rejection, or what `step` throws, fails the request. */
function thenOrFail<T>(
  promise: PromiseLike<T>,
  res: Response,
  parsed: ParsedRequest,
  step: (value: T) => void,
): void {
  promise.then(
    (value) => {
      try {
        step(value);
      } catch (error) {
        failRequest(res, parsed, error);
      }
    },
    (error: unknown) => failRequest(res, parsed, error),
  );
}

/** Default identity: `User.userName` of an authenticated user, else the unauthenticated key. */
function callerOf(admission: Admission, req: Request, user: User): string {
  return user.isAuthenticated && user.userName
    ? authenticatedCallerKey(user.userName)
    : admission.unauthenticatedKey(req);
}

function withCaller(
  admission: Admission,
  req: Request,
  res: Response,
  next: NextFunction,
  parsed: ParsedRequest,
  caller: string,
): void {
  parsed.caller = caller;
  const skill = admission.options.skill;
  if (skill !== undefined) parsed.skill = skill(req, req.body);
  const outcome = admission.limiter.admit(parsed);
  if (outcome instanceof Promise) {
    thenOrFail(outcome, res, parsed, (o) => apply(admission, req, res, next, parsed, o));
  } else apply(admission, req, res, next, parsed, outcome);
}

/**
 * Sets an admitted ticket's headers, ends it with the response, and marks the request admitted.
 * False when the client is already gone (it hung up while an asynchronous identity or store
 * decided): the ticket is ended at once — its 'close' has come and gone — and nothing runs.
 */
function admitted(
  req: Request,
  res: Response,
  ticket: AdmissionTicket,
  method: ParsedRequest['method'],
): boolean {
  if (res.destroyed || req.socket.destroyed) {
    ticket.end();
    return false;
  }
  const headers = ticket.headers;
  for (const name in headers) res.setHeader(name, headers[name] as string);
  if (ticket.needsEnd) {
    req.headers[TICKET_HEADER] = ticket.id;
    // A closure, not a property on `res`: adding one to Express's response objects costs µs.
    res.on('close', () => ticket.end());
  }
  markAdmitted(req.headers, method);
  return true;
}

/** Writes a rejection in the request's binding. */
function writeRejection(
  admission: Admission,
  res: Response,
  parsed: ParsedRequest,
  outcome: Extract<AdmissionOutcome, { status: 'rejected' }>,
): void {
  const { limiter, options } = admission;
  const encoded =
    parsed.binding === 'jsonrpc'
      ? limiter.encodeJsonRpc(
          outcome.rejection,
          parsed.id,
          outcome.limits,
          options.mirrorHttpStatus === true,
        )
      : limiter.encodeRest(outcome.rejection, outcome.limits);
  writeHttp(res, encoded.status, encoded.headers, encoded.body);
}

/**
 * Hands a duplicate stream's request, rewritten as the resubscription it becomes, to the SDK once
 * the resubscription itself is admitted (a stream like any other: see
 * `Limiter.admitResubscription`).
 */
function resubscribe(
  admission: Admission,
  req: Request,
  res: Response,
  next: NextFunction,
  parsed: ParsedRequest,
): void {
  const step = (outcome: AdmissionOutcome): void => {
    if (outcome.status === 'admitted') {
      if (admitted(req, res, outcome.ticket, 'SubscribeToTask')) admission.pass(req, res, next);
    } else if (outcome.status === 'rejected') writeRejection(admission, res, parsed, outcome);
    else failRequest(res, parsed, new Error('a resubscription cannot be a duplicate'));
  };
  const outcome = admission.limiter.admitResubscription(parsed);
  if (outcome instanceof Promise) thenOrFail(outcome, res, parsed, step);
  else step(outcome);
}

function apply(
  admission: Admission,
  req: Request,
  res: Response,
  next: NextFunction,
  parsed: ParsedRequest,
  outcome: AdmissionOutcome,
): void {
  if (outcome.status === 'admitted') {
    if (admitted(req, res, outcome.ticket, parsed.method)) admission.pass(req, res, next);
    return;
  }
  if (outcome.status === 'duplicate') {
    const answer = parsed.binding === 'jsonrpc' ? jsonRpcDuplicate : restDuplicate;
    answer(admission, req, res, next, parsed, outcome.taskId).catch((error: unknown) =>
      failRequest(res, parsed, error),
    );
    return;
  }
  writeRejection(admission, res, parsed, outcome);
}

/** The task a duplicate message is answered with, fetched as the SDK would for this caller. */
async function duplicateTask(
  admission: Admission,
  req: Request,
  tenant: string | undefined,
  taskId: string,
): Promise<{ ok: true; task: Task } | { ok: false; error: unknown }> {
  const handler = admission.options.requestHandler as A2ARequestHandler;
  const context = await callContext(admission, req, tenant);
  try {
    return { ok: true, task: await handler.getTask({ id: taskId, tenant: tenant ?? '' }, context) };
  } catch (error) {
    return { ok: false, error };
  }
}

/** The message a duplicate whose first copy produced no task gets (google.rpc ALREADY_EXISTS). */
function duplicateWithoutTaskMessage(messageId: string | undefined): string {
  return `Message ${messageId ?? ''} was already received and processed without creating a task; it is not run again`;
}

function sseOneEvent(res: Response, frame: unknown): void {
  res.status(200);
  for (const [name, value] of Object.entries(SSE_HEADERS)) res.setHeader(name, value);
  res.end(formatSSEEvent(frame));
}

/** JSON-RPC answer to a copy of an admitted message: its task, or a resubscription to it. */
async function jsonRpcDuplicate(
  admission: Admission,
  req: Request,
  res: Response,
  next: NextFunction,
  parsed: ParsedRequest,
  taskId: string | undefined,
): Promise<void> {
  if (taskId === undefined) {
    const error = {
      code: A2A_ERROR_CODE.INVALID_REQUEST,
      message: duplicateWithoutTaskMessage(parsed.messageId),
    };
    writeHttp(res, 200, JSON_RPC_CONTENT, JSON.stringify({ jsonrpc: '2.0', id: parsed.id, error }));
    return;
  }
  const lookup = await duplicateTask(admission, req, parsed.tenant, taskId);
  if (!lookup.ok) {
    res.status(200).json({ jsonrpc: '2.0', id: parsed.id, error: toJsonRpcError(lookup.error) });
    return;
  }
  const task = lookup.task;
  const result = SendMessageResponse.toJSON({ payload: { $case: 'task', value: task } });
  if (parsed.method === 'SendMessage') {
    res.status(200).json({ jsonrpc: '2.0', id: parsed.id, result });
  } else if (TERMINAL_TASK_STATES.has(task.status?.state ?? 0) || parsed.legacy) {
    sseOneEvent(res, { jsonrpc: '2.0', id: parsed.id, result });
  } else {
    // Resubscribe: the SDK streams the live task (first event: the task).
    req.body = {
      jsonrpc: '2.0',
      id: parsed.id,
      method: 'SubscribeToTask',
      params: {
        id: taskId,
        ...(parsed.tenant === undefined ? {} : { tenant: parsed.tenant }),
      },
    };
    resubscribe(admission, req, res, next, parsed);
  }
}

/** REST answer to a copy of an admitted message: its task, or a resubscription to it. */
async function restDuplicate(
  admission: Admission,
  req: Request,
  res: Response,
  next: NextFunction,
  parsed: ParsedRequest,
  taskId: string | undefined,
): Promise<void> {
  if (taskId === undefined) {
    writeHttp(
      res,
      409,
      REST_CONTENT,
      JSON.stringify({
        error: {
          code: 409,
          status: 'ALREADY_EXISTS',
          message: duplicateWithoutTaskMessage(parsed.messageId),
          details: [],
        },
      }),
    );
    return;
  }
  const lookup = await duplicateTask(admission, req, parsed.tenant, taskId);
  if (!lookup.ok) {
    const body404 = toRestErrorBody(lookup.error, 404);
    writeHttp(res, 404, REST_CONTENT, JSON.stringify(body404));
    return;
  }
  const task = lookup.task;
  const payload = { payload: { $case: 'task' as const, value: task } };
  if (parsed.method === 'SendMessage') {
    writeHttp(res, 200, REST_CONTENT, JSON.stringify(SendMessageResponse.toJSON(payload)));
  } else if (TERMINAL_TASK_STATES.has(task.status?.state ?? 0) || parsed.legacy) {
    sseOneEvent(res, StreamResponse.toJSON(payload));
  } else {
    const prefix = parsed.tenant === undefined ? '' : `/${encodeURIComponent(parsed.tenant)}`;
    req.url = `${prefix}/tasks/${encodeURIComponent(taskId)}:subscribe`;
    resubscribe(admission, req, res, next, parsed);
  }
}

/**
 * The agent's `UserBuilder`, run once per request for both the admission middleware and the SDK's
 * router: pass the result to both. (Given the same plain builder, each would run it: an
 * authenticator that checks a token would check it twice per request.) The SDK's
 * `noAuthentication` is returned as it is.
 *
 * @example
 * ```ts
 * const userBuilder = shareUserBuilder(async (req) => usersFromToken(req.headers.authorization));
 * app.use('/a2a/jsonrpc', jsonRpcAdmission(limiter, { userBuilder, requestHandler }), jsonRpcHandler({ requestHandler, userBuilder }));
 * ```
 */
export function shareUserBuilder(builder: UserBuilder): UserBuilder {
  if (builder === UserBuilder.noAuthentication) return builder;
  const users = new WeakMap<Request, Promise<User>>();
  return (req) => {
    let user = users.get(req);
    if (user === undefined) {
      try {
        user = Promise.resolve(builder(req));
      } catch (error) {
        user = Promise.reject(error);
      }
      users.set(req, user);
    }
    return user;
  };
}

/**
 * Admission middleware for the JSON-RPC binding. Mount it on the same path as, and before, the
 * SDK's `jsonRpcHandler` (or alone, with the SDK's router as `sdkHandler`; see
 * {@link rateLimitedJsonRpcHandler}). Every A2A 1.0 method (and the v0.3 names, for the SDK's legacy mode) is
 * decided; malformed JSON gets the SDK's own `-32700` answer; a rejection is written as
 * `{"jsonrpc":"2.0","id",…,"error":{"code":-32603,"data":[ErrorInfo, RetryInfo, QuotaFailure?]}}`
 * with `Retry-After` and `RateLimit` headers (HTTP 200, or 429 / 503 with `mirrorHttpStatus`).
 *
 * @example
 * ```ts
 * app.use('/a2a/jsonrpc', jsonRpcAdmission(limiter, { userBuilder, requestHandler }));
 * app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder }));
 * ```
 */
export function jsonRpcAdmission(
  limiter: Limiter,
  options: ExpressAdmissionOptions = {},
): RequestHandler {
  const admission = makeAdmission(limiter, options);
  const pass = admission.pass;
  const parse = jsonBodyReader({
    fallback: express.json({ limit: options.bodyLimit ?? DEFAULT_BODY_LIMIT }),
    types: ['application/json'],
    limitBytes: limitBytesOf(options.bodyLimit),
    strict: true,
  });
  const legacyNames = options.legacy !== false;
  const alone = options.sdkHandler !== undefined;
  const versions = versionCheck(options.requestHandler);
  /** A parsed JSON-RPC body: decided when it names an operation, else the SDK's to refuse. */
  const classify = (req: Request, res: Response, next: NextFunction): void => {
    const body = req.body as { method?: unknown; params?: unknown } | undefined;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      pass(req, res, next);
      return;
    }
    const name = body.method;
    const method = legacyNames
      ? toA2AMethod(name)
      : typeof name === 'string' && !name.includes('/')
        ? toA2AMethod(name)
        : undefined;
    if (method === undefined) {
      pass(req, res, next);
      return;
    }
    const params = body.params as { tenant?: unknown } | undefined;
    const tenant = params?.tenant;
    if (tenant && typeof tenant !== 'string') {
      // The SDK would set any truthy value as the context's tenant: refuse what is not a name.
      const error = {
        code: A2A_ERROR_CODE.INVALID_PARAMS,
        message: 'params.tenant must be a string',
      };
      writeHttp(
        res,
        200,
        JSON_RPC_CONTENT,
        JSON.stringify({ jsonrpc: '2.0', id: jsonRpcId(body), error }),
      );
      return;
    }
    const parsed = new ParsedRequest(
      'jsonrpc',
      method,
      stringOrUndefined(tenant),
      messageIdOf(params),
      typeof name === 'string' && name.includes('/'),
      jsonRpcId(body),
    );
    decide(admission, req, res, next, parsed);
  };
  return (req, res, next) => {
    const headers = req.headers;
    if (headers[TICKET_HEADER] !== undefined) delete headers[TICKET_HEADER];
    if (headers[ADMISSION_HEADER] !== undefined) delete headers[ADMISSION_HEADER];
    // The SDK's `post('/')` matches `/` and `//` (one optional trailing slash), whatever the query
    // (`req.path` parses the URL: read only when the URL is not plainly `/`).
    const url = req.url;
    const path = url === '/' ? url : req.path;
    if (path !== '/' && path !== '//') {
      if (alone) writeJsonRpcMiss(res, 404, 'No JSON-RPC endpoint at this path');
      else pass(req, res, next);
      return;
    }
    if (req.method !== 'POST') {
      if (!alone) pass(req, res, next);
      else if (req.method === 'OPTIONS') writeAllow(res, ['POST']);
      else writeJsonRpcMiss(res, 405, 'JSON-RPC requests are POSTed', ['POST']);
      return;
    }
    const type = mediaType(headers);
    if (type !== undefined && type !== 'application/json') {
      pass(req, res, next);
      return;
    }
    parse(req, res, (error?: unknown) => {
      if (error !== undefined && error !== null) {
        const syntax = error instanceof SyntaxError;
        writeHttp(
          res,
          200,
          JSON_RPC_CONTENT,
          JSON.stringify({
            jsonrpc: '2.0',
            id: null,
            error: syntax
              ? { code: A2A_ERROR_CODE.PARSE_ERROR, message: 'Invalid JSON payload.' }
              : { code: A2A_ERROR_CODE.INVALID_REQUEST, message: (error as Error).message },
          }),
        );
        return;
      }
      const version = headers['a2a-version'];
      const requested = (Array.isArray(version) ? version[0] : version) || '0.3';
      if (versions.known.has(requested)) {
        classify(req, res, next);
        return;
      }
      versions.check(requested).then(
        (refusal) => {
          if (refusal === undefined) classify(req, res, next);
          else {
            const answer = {
              jsonrpc: '2.0',
              id: jsonRpcId(req.body),
              error: toJsonRpcError(refusal),
            };
            writeHttp(res, 200, JSON_RPC_CONTENT, JSON.stringify(answer));
          }
        },
        (failure: unknown) => {
          console.error(
            `a2a-ratelimit: the agent card could not be read to check the A2A version: ${failure instanceof Error ? failure.message : String(failure)}`,
          );
          const answer = {
            jsonrpc: '2.0',
            id: jsonRpcId(req.body),
            error: toJsonRpcError(failure),
          };
          writeHttp(res, 200, JSON_RPC_CONTENT, JSON.stringify(answer));
        },
      );
    });
  };
}

/**
 * Admission middleware for the HTTP+JSON (REST) binding. Mount it on the same path as, and
 * before, the SDK's `restHandler` (or alone, with the SDK's router as `sdkHandler`; see
 * {@link rateLimitedRestHandler}). Every A2A 1.0 route (with the optional `/{tenant}` prefix;
 * SubscribeToTask by GET and POST; v0.3 `/v1/...` routes for the SDK's legacy mode) is decided;
 * malformed JSON gets the SDK's own 400 google.rpc.Status body; a rejection is HTTP 429 / 503 with
 * `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED",…,"details":[…]}}`, `Retry-After` and
 * `RateLimit` headers.
 *
 * @example
 * ```ts
 * app.use('/a2a/rest', restAdmission(limiter, { userBuilder, requestHandler }));
 * app.use('/a2a/rest', restHandler({ requestHandler, userBuilder }));
 * ```
 */
export function restAdmission(
  limiter: Limiter,
  options: ExpressAdmissionOptions = {},
): RequestHandler {
  const admission = makeAdmission(limiter, options);
  const pass = admission.pass;
  const alone = options.sdkHandler !== undefined;
  const legacy = options.legacy !== false;
  const limitBytes = limitBytesOf(options.bodyLimit);
  const parse = jsonBodyReader({
    fallback: express.json({
      limit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
      type: ['application/json', 'application/a2a+json'],
      strict: false,
    }),
    types: ['application/json', 'application/a2a+json'],
    limitBytes,
    strict: false,
  });
  const parseLegacy = jsonBodyReader({
    fallback: express.json({
      limit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
      type: 'application/json',
      strict: false,
    }),
    types: ['application/json'],
    limitBytes,
    strict: false,
  });
  return (req, res, next) => {
    const headers = req.headers;
    if (headers[TICKET_HEADER] !== undefined) delete headers[TICKET_HEADER];
    if (headers[ADMISSION_HEADER] !== undefined) delete headers[ADMISSION_HEADER];
    const useLegacy = legacy && isA2AVersionLegacy(req);
    const route = matchRestRoute(req.method, req.path, { legacy: useLegacy });
    if (!isRestRoute(route)) {
      // A malformed escape is the router's HTML 400: always answered here, in JSON.
      if (alone || route.miss === 'bad-escape') writeRestMiss(req, res, route);
      else pass(req, res, next);
      return;
    }
    const type = mediaType(headers);
    const accepted = route.legacy
      ? type === undefined || type === 'application/json'
      : type === undefined || type === 'application/json' || type === 'application/a2a+json';
    if (!accepted && !route.legacy) {
      // The SDK's content-type guard refuses it (400, JSON) before any route runs.
      pass(req, res, next);
      return;
    }
    if (!accepted) {
      // The v0.3 router parses only its own type and runs the route with no body: decide so.
      const parsed = new ParsedRequest(
        'rest',
        route.method,
        route.tenant,
        undefined,
        route.legacy,
        null,
      );
      decide(admission, req, res, next, parsed);
      return;
    }
    (route.legacy ? parseLegacy : parse)(req, res, (error?: unknown) => {
      if (error !== undefined && error !== null) {
        const status =
          error instanceof SyntaxError
            ? 400
            : Number((error as { status?: unknown }).status) >= 400
              ? Number((error as { status: number }).status)
              : 400;
        const malformed = new RequestMalformedError(
          error instanceof SyntaxError ? 'Invalid JSON payload.' : (error as Error).message,
        );
        writeHttp(res, status, REST_CONTENT, JSON.stringify(toRestErrorBody(malformed, status)));
        return;
      }
      const body = req.body as { tenant?: unknown } | undefined;
      const parsed = new ParsedRequest(
        'rest',
        route.method,
        // The SDK scopes a REST request by its path tenant alone (`req.params.tenant`): a body
        // or query `tenant` changes nothing it does, so it changes nothing here either.
        route.tenant,
        route.method === 'SendMessage' || route.method === 'SendStreamingMessage'
          ? messageIdOf(body)
          : undefined,
        route.legacy,
        null,
      );
      decide(admission, req, res, next, parsed);
    });
  };
}

/**
 * Options of {@link rateLimitedJsonRpcHandler} and {@link rateLimitedRestHandler}: the SDK
 * router's own options, and the admission middleware's (`admission`).
 *
 * @example
 * ```ts
 * const options: RateLimitedHandlerOptions = { requestHandler, userBuilder: UserBuilder.noAuthentication, admission: { mirrorHttpStatus: true } };
 * ```
 */
export interface RateLimitedHandlerOptions {
  /** The SDK request handler (answers the admitted requests, and duplicates with their task). */
  readonly requestHandler: A2ARequestHandler;
  /** The agent's `UserBuilder`; it runs once per request for both the limiter and the SDK. */
  readonly userBuilder: UserBuilder;
  /** The SDK's v0.3 compatibility mode; v0.3 requests are decided only when it is on. */
  readonly legacyCompat?: { readonly enabled: boolean };
  /** The SDK's call-context builder. */
  readonly contextBuilder?: ServerCallContextBuilder;
  /**
   * The remaining admission options (identity, skill, `mirrorHttpStatus`, `bodyLimit`, …).
   * `legacy` defaults to `legacyCompat.enabled` here (v0.3 names are decided only when the SDK
   * serves them).
   */
  readonly admission?: Omit<
    ExpressAdmissionOptions,
    'userBuilder' | 'requestHandler' | 'sdkHandler' | 'contextBuilder'
  >;
}

/** The SDK router options and admission options both wrappers derive from `options`. */
function rateLimitedParts(options: RateLimitedHandlerOptions): {
  sdk: Parameters<typeof jsonRpcHandler>[0];
  admission: ExpressAdmissionOptions;
} {
  const userBuilder = shareUserBuilder(options.userBuilder);
  const { requestHandler, legacyCompat, contextBuilder } = options;
  return {
    // The SDK runs an operation only for a request admitted for it (see ./mediation.ts).
    sdk: {
      requestHandler: guardRequestHandler(requestHandler),
      userBuilder,
      contextBuilder: guardContextBuilder(contextBuilder),
      ...(legacyCompat === undefined ? {} : { legacyCompat: { ...legacyCompat } }),
    },
    admission: {
      legacy: legacyCompat?.enabled === true,
      ...options.admission,
      requestHandler,
      userBuilder,
      ...(contextBuilder === undefined ? {} : { contextBuilder }),
    },
  };
}

/**
 * The SDK's `jsonRpcHandler` with admission in front, as one middleware: mount it where you would
 * mount the SDK's router. The same as {@link jsonRpcAdmission} followed by `jsonRpcHandler`, with
 * the `UserBuilder` shared ({@link shareUserBuilder}) and one Express layer fewer per request.
 *
 * @example
 * ```ts
 * app.use('/a2a/jsonrpc', rateLimitedJsonRpcHandler(limiter, { requestHandler, userBuilder: UserBuilder.noAuthentication }));
 * ```
 */
export function rateLimitedJsonRpcHandler(
  limiter: Limiter,
  options: RateLimitedHandlerOptions,
): RequestHandler {
  const parts = rateLimitedParts(options);
  return jsonRpcAdmission(limiter, { ...parts.admission, sdkHandler: jsonRpcHandler(parts.sdk) });
}

/**
 * The SDK's `restHandler` with admission in front, as one middleware: mount it where you would
 * mount the SDK's router. The same as {@link restAdmission} followed by `restHandler`, with the
 * `UserBuilder` shared ({@link shareUserBuilder}) and one Express layer fewer per request.
 *
 * @example
 * ```ts
 * app.use('/a2a/rest', rateLimitedRestHandler(limiter, { requestHandler, userBuilder: UserBuilder.noAuthentication }));
 * ```
 */
export function rateLimitedRestHandler(
  limiter: Limiter,
  options: RateLimitedHandlerOptions,
): RequestHandler {
  const parts = rateLimitedParts(options);
  return restAdmission(limiter, { ...parts.admission, sdkHandler: restHandler(parts.sdk) });
}
