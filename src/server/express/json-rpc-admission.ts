/**
 * @module server/express/json-rpc-admission
 * Admission for the JSON-RPC binding in front of the SDK's `jsonRpcHandler`: path, verb, body, A2A
 * version, method and messageId, then the pipeline.
 */

import { A2A_ERROR_CODE, toJsonRpcError } from '@a2a-js/sdk/errors';
import { type A2ARequestHandler, validateVersion } from '@a2a-js/sdk/server';
import express, {
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import { toA2AMethod } from '../../core/a2a-methods.js';
import { admitCall } from '../admission-pipeline.js';
import type { Limiter } from '../limiter-api.js';
import { clearMarks, ExpressCall, mediaType, stringOrUndefined } from './express-call.js';
import {
  DEFAULT_BODY_LIMIT,
  type ExpressAdmissionOptions,
  limitBytesOf,
} from './express-options.js';
import { createExpressSteps, writeBodyError } from './express-steps.js';
import { depthVerify, jsonBodyReader, type PendingBody, parsePending } from './json-body.js';
import { capturedValue, DEFAULT_MAX_JSON_DEPTH, jsonPaths } from './json-scan.js';
import { JSON_RPC_CONTENT, writeAllow, writeHttp, writeJsonRpcMiss } from './misses.js';

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

/** What the decision reads of a JSON-RPC body (and what the parsed body must then agree on). */
const JSON_RPC_PATHS = ['method', 'id', 'params.tenant', 'params.message.messageId'] as const;
const JSON_RPC_SCAN = jsonPaths(JSON_RPC_PATHS);

/** The parts of a JSON-RPC request body admission reads. */
interface JsonRpcFields {
  readonly method: unknown;
  readonly id: unknown;
  readonly tenant: unknown;
  readonly messageId: unknown;
}

/** The fields of a parsed body (undefined: not an object, the SDK's to refuse). */
function parsedFields(body: unknown): JsonRpcFields | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const request = body as { method?: unknown; id?: unknown; params?: unknown };
  const params = request.params as { tenant?: unknown; message?: unknown } | null | undefined;
  return {
    method: request.method,
    id: request.id,
    tenant: params?.tenant,
    messageId: (params?.message as { messageId?: unknown } | null | undefined)?.messageId,
  };
}

/** The fields a scan read (an object or array as a truthy marker); throws for a bad scalar. */
function scannedFields(pending: PendingBody): JsonRpcFields {
  const found = pending.found;
  return {
    method: capturedValue(found, 'method'),
    id: capturedValue(found, 'id'),
    tenant: capturedValue(found, 'params.tenant'),
    messageId: capturedValue(found, 'params.message.messageId'),
  };
}

/**
 * Admission middleware for the JSON-RPC binding. Mount it on the same path as, and before, the
 * SDK's `jsonRpcHandler` (or alone, with the SDK's router as `sdkHandler`; see
 * `rateLimitedJsonRpcHandler`). Every A2A 1.0 method (and the v0.3 names, for the SDK's legacy mode) is
 * decided; malformed JSON gets the SDK's own `-32700` answer, a body nested deeper than
 * `maxJsonDepth` a `-32600` before it is parsed; a plain body is decided on what a scan of it
 * reads (method, id, tenant, messageId) and parsed only once admitted; a rejection is written as
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
  const steps = createExpressSteps(limiter, options);
  const pass = steps.pass;
  const maxDepth = options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH;
  const parse = jsonBodyReader({
    fallback: express.json({
      limit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
      verify: depthVerify(maxDepth),
    }),
    types: ['application/json'],
    limitBytes: limitBytesOf(options.bodyLimit),
    strict: true,
    maxDepth,
    // A `skill` function reads the parsed body before the decision.
    paths: options.skill === undefined ? JSON_RPC_SCAN : undefined,
  });
  const legacyNames = options.legacy !== false;
  const alone = options.sdkHandler !== undefined;
  const versions = versionCheck(options.requestHandler);
  /**
   * A body's JSON-RPC fields: decided when they name an operation, else the SDK's to refuse
   * (parsed first when it was left unparsed).
   */
  const classify = (
    req: Request,
    res: Response,
    next: NextFunction,
    fields: JsonRpcFields | undefined,
    pending: PendingBody | undefined,
  ): void => {
    const name = fields?.method;
    const method =
      fields === undefined
        ? undefined
        : legacyNames
          ? toA2AMethod(name)
          : typeof name === 'string' && !name.includes('/')
            ? toA2AMethod(name)
            : undefined;
    const id = typeof fields?.id === 'string' || typeof fields?.id === 'number' ? fields.id : null;
    if (method === undefined) {
      if (pending !== undefined) {
        try {
          parsePending(req, pending);
        } catch (error) {
          writeBodyError(res, 'jsonrpc', error);
          return;
        }
      }
      pass(req, res, next);
      return;
    }
    const tenant = fields?.tenant;
    if (tenant && typeof tenant !== 'string') {
      // The SDK would set any truthy value as the context's tenant: refuse what is not a name.
      const error = {
        code: A2A_ERROR_CODE.INVALID_PARAMS,
        message: 'params.tenant must be a string',
      };
      writeHttp(res, 200, JSON_RPC_CONTENT, JSON.stringify({ jsonrpc: '2.0', id, error }));
      return;
    }
    const call = new ExpressCall({
      req,
      res,
      next,
      binding: 'jsonrpc',
      method,
      tenant: stringOrUndefined(tenant),
      messageId: stringOrUndefined(fields?.messageId),
      legacy: typeof name === 'string' && name.includes('/'),
      id,
      pending,
      scannedPaths: pending === undefined ? [] : JSON_RPC_PATHS,
    });
    admitCall(steps, call);
  };
  return (req, res, next) => {
    const headers = req.headers;
    clearMarks(headers);
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
    parse(req, res, (error?: unknown, pending?: PendingBody) => {
      if (error !== undefined && error !== null) {
        writeBodyError(res, 'jsonrpc', error);
        return;
      }
      let fields: JsonRpcFields | undefined;
      let unparsed = pending;
      if (unparsed === undefined) fields = parsedFields(req.body);
      else {
        try {
          fields = scannedFields(unparsed);
        } catch {
          // A scalar the scan cannot read: the body is malformed; the parser says how.
          try {
            fields = parsedFields(parsePending(req, unparsed));
          } catch (parseError) {
            writeBodyError(res, 'jsonrpc', parseError);
            return;
          }
          unparsed = undefined;
        }
      }
      const id =
        typeof fields?.id === 'string' || typeof fields?.id === 'number' ? fields.id : null;
      const version = headers['a2a-version'];
      const requested = (Array.isArray(version) ? version[0] : version) || '0.3';
      if (versions.known.has(requested)) {
        classify(req, res, next, fields, unparsed);
        return;
      }
      versions.check(requested).then(
        (refusal) => {
          if (refusal === undefined) classify(req, res, next, fields, unparsed);
          else {
            const answer = { jsonrpc: '2.0', id, error: toJsonRpcError(refusal) };
            writeHttp(res, 200, JSON_RPC_CONTENT, JSON.stringify(answer));
          }
        },
        (failure: unknown) => {
          console.error(
            `a2a-ratelimit: the agent card could not be read to check the A2A version: ${failure instanceof Error ? failure.message : String(failure)}`,
          );
          const answer = { jsonrpc: '2.0', id, error: toJsonRpcError(failure) };
          writeHttp(res, 200, JSON_RPC_CONTENT, JSON.stringify(answer));
        },
      );
    });
  };
}
