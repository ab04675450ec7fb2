/**
 * @module server/express/rest-admission
 * Admission for the HTTP+JSON (REST) binding in front of the SDK's `restHandler`: route, content
 * type, body, then the pipeline.
 */

import express, { type Request, type RequestHandler } from 'express';
import { admitCall } from '../admission-pipeline.js';
import type { Limiter } from '../limiter-api.js';
import { isRestRoute, matchRestRoute } from '../rest-route.js';
import { clearMarks, ExpressCall, mediaType, messageIdOf } from './express-call.js';
import {
  DEFAULT_BODY_LIMIT,
  type ExpressAdmissionOptions,
  limitBytesOf,
} from './express-options.js';
import { createExpressSteps, writeBodyError } from './express-steps.js';
import { depthVerify, jsonBodyReader, type PendingBody, parsePending } from './json-body.js';
import { capturedValue, DEFAULT_MAX_JSON_DEPTH, jsonPaths } from './json-scan.js';
import { writeRestMiss } from './misses.js';

/** What the decision reads of a REST message body (and what the parsed body must agree on). */
const REST_MESSAGE_PATHS = ['message.messageId'] as const;
const REST_MESSAGE_SCAN = jsonPaths(REST_MESSAGE_PATHS);

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
 * Admission middleware for the HTTP+JSON (REST) binding. Mount it on the same path as, and
 * before, the SDK's `restHandler` (or alone, with the SDK's router as `sdkHandler`; see
 * `rateLimitedRestHandler`). Every A2A 1.0 route (with the optional `/{tenant}` prefix;
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
  const steps = createExpressSteps(limiter, options);
  const pass = steps.pass;
  const alone = options.sdkHandler !== undefined;
  const legacy = options.legacy !== false;
  const limitBytes = limitBytesOf(options.bodyLimit);
  const maxDepth = options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH;
  const verify = depthVerify(maxDepth);
  // A `skill` function reads the parsed body before the decision.
  const paths = options.skill === undefined ? REST_MESSAGE_SCAN : undefined;
  const parse = jsonBodyReader({
    fallback: express.json({
      limit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
      type: ['application/json', 'application/a2a+json'],
      strict: false,
      verify,
    }),
    types: ['application/json', 'application/a2a+json'],
    limitBytes,
    strict: false,
    maxDepth,
    paths,
  });
  const parseLegacy = jsonBodyReader({
    fallback: express.json({
      limit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
      type: 'application/json',
      strict: false,
      verify,
    }),
    types: ['application/json'],
    limitBytes,
    strict: false,
    maxDepth,
    paths,
  });
  return (req, res, next) => {
    const headers = req.headers;
    clearMarks(headers);
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
      const call = new ExpressCall({
        req,
        res,
        next,
        binding: 'rest',
        method: route.method,
        tenant: route.tenant,
        legacy: route.legacy,
      });
      admitCall(steps, call);
      return;
    }
    (route.legacy ? parseLegacy : parse)(req, res, (error?: unknown, pending?: PendingBody) => {
      if (error !== undefined && error !== null) {
        writeBodyError(res, 'rest', error);
        return;
      }
      const isMessage = route.method === 'SendMessage' || route.method === 'SendStreamingMessage';
      let messageId: string | undefined;
      if (pending === undefined) {
        messageId = isMessage ? messageIdOf(req.body) : undefined;
      } else if (isMessage) {
        try {
          const scanned = capturedValue(pending.found, 'message.messageId');
          messageId = typeof scanned === 'string' && scanned !== '' ? scanned : undefined;
        } catch (scanError) {
          // A scalar the scan cannot read: the body is malformed; the parser says how.
          try {
            parsePending(req, pending);
          } catch (parseError) {
            writeBodyError(res, 'rest', parseError);
            return;
          }
          writeBodyError(res, 'rest', scanError);
          return;
        }
      }
      const call = new ExpressCall({
        req,
        res,
        next,
        binding: 'rest',
        method: route.method,
        // The SDK scopes a REST request by its path tenant alone (`req.params.tenant`): a body
        // or query `tenant` changes nothing it does, so it changes nothing here either.
        tenant: route.tenant,
        messageId,
        legacy: route.legacy,
        pending,
        scannedPaths: pending !== undefined && isMessage ? REST_MESSAGE_PATHS : [],
      });
      admitCall(steps, call);
    });
  };
}
