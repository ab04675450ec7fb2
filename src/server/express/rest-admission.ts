/**
 * @module server/express/rest-admission
 * Admission for the HTTP+JSON (REST) binding in front of the SDK's `restHandler`: the route
 * classified as the SDK's router routes (server/rest-route.ts), the content type as its guard
 * takes it, the body parsed once and a malformed one answered as the SDK would, then the
 * admission pipeline.
 */

import { RequestMalformedError, toRestErrorBody } from '@a2a-js/sdk/errors';
import express, { type Request, type RequestHandler } from 'express';
import { admitCall } from '../admission-pipeline.js';
import type { Limiter } from '../limiter.js';
import { isRestRoute, matchRestRoute } from '../rest-route.js';
import { clearMarks, ExpressCall, mediaType, messageIdOf } from './express-call.js';
import {
  DEFAULT_BODY_LIMIT,
  type ExpressAdmissionOptions,
  limitBytesOf,
} from './express-options.js';
import { createExpressSteps } from './express-steps.js';
import { jsonBodyReader } from './json-body.js';
import { REST_CONTENT, writeHttp, writeRestMiss } from './misses.js';

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
      const call = new ExpressCall(
        req,
        res,
        next,
        'rest',
        route.method,
        route.tenant,
        undefined,
        route.legacy,
        null,
      );
      admitCall(steps, call);
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
      const call = new ExpressCall(
        req,
        res,
        next,
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
      admitCall(steps, call);
    });
  };
}
