/**
 * @module server/express/express-steps
 * The Express side of the admission pipeline, shared by the JSON-RPC and REST middleware: identity,
 * marking, rejections and failures.
 */

import {
  A2A_ERROR_CODE,
  RequestMalformedError,
  restStatusFor,
  toJsonRpcError,
  toRestErrorBody,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import type { RequestHandler, Response } from 'express';
import { resolveDuplicate } from '../admission-pipeline.js';
import { type AdmissionTicket, type Limiter, TICKET_HEADER } from '../limiter-api.js';
import type { Binding } from '../limiter-options.js';
import { markAdmitted } from '../mediation.js';
import { WriteWatch, writeDeadlineOf } from '../write-watch.js';
import { duplicateContext, writeDuplicate } from './duplicate-answers.js';
import type { ExpressCall, ExpressSteps } from './express-call.js';
import { expressCallerKey } from './express-identity.js';
import type { ExpressAdmissionOptions } from './express-options.js';
import { parsePending } from './json-body.js';
import { agreesWithScan } from './json-scan.js';
import { JSON_RPC_CONTENT, REST_CONTENT, writeHttp } from './misses.js';

const callNext: RequestHandler = (_req, _res, next) => next();

/**
 * Answers a request whose admission failed (the identity function, the store, a `skill`
 * function threw) the way the SDK answers an error of its own: JSON in the binding's error
 * format, never Express's HTML page, and one log line without a stack.
 */
function failRequest(call: ExpressCall, error: unknown): void {
  const res = call.res;
  console.error(
    `a2a-ratelimit: ${call.method} (${call.binding}) not admitted, the admission failed: ${error instanceof Error ? error.message : String(error)}`,
  );
  if (res.headersSent) {
    res.end();
    return;
  }
  if (call.binding === 'jsonrpc') {
    const body = { jsonrpc: '2.0', id: call.id, error: toJsonRpcError(error) };
    writeHttp(res, 200, JSON_RPC_CONTENT, JSON.stringify(body));
    return;
  }
  const status = restStatusFor(error);
  writeHttp(res, status, REST_CONTENT, JSON.stringify(toRestErrorBody(error, status)));
}

/**
 * Answers a body that could not be read (malformed JSON, too large, too deep, …) as the SDK
 * answers it: JSON-RPC `-32700` (a `SyntaxError`) or `-32600` with the reader's message; REST
 * 400 (or the reader's status) with a google.rpc `Status` body.
 */
export function writeBodyError(res: Response, binding: Binding, error: unknown): void {
  const syntax = error instanceof SyntaxError;
  if (binding === 'jsonrpc') {
    const answer = {
      jsonrpc: '2.0',
      id: null,
      error: syntax
        ? { code: A2A_ERROR_CODE.PARSE_ERROR, message: 'Invalid JSON payload.' }
        : { code: A2A_ERROR_CODE.INVALID_REQUEST, message: (error as Error).message },
    };
    writeHttp(res, 200, JSON_RPC_CONTENT, JSON.stringify(answer));
    return;
  }
  const given = Number((error as { status?: unknown } | null)?.status);
  const status = !syntax && given >= 400 ? given : 400;
  const malformed = new RequestMalformedError(
    syntax ? 'Invalid JSON payload.' : (error as Error).message,
  );
  writeHttp(res, status, REST_CONTENT, JSON.stringify(toRestErrorBody(malformed, status)));
}

/**
 * Parses the body of an admitted call decided on a scan of it (`call.pending`), and checks that
 * the parsed body says what the scan read. False (the ticket ended, the call answered) when it
 * is malformed or says something else.
 */
function settleBody(call: ExpressCall, ticket: AdmissionTicket): boolean {
  const pending = call.pending;
  if (pending === undefined) return true;
  call.pending = undefined;
  let body: unknown;
  try {
    body = parsePending(call.req, pending);
  } catch (error) {
    ticket.end();
    writeBodyError(call.res, call.binding, error);
    return false;
  }
  if (agreesWithScan(body, pending.found, call.scannedPaths)) return true;
  ticket.end();
  failRequest(call, new Error('the body parsed differs from the body the decision read'));
  return false;
}

/**
 * The steps of one middleware. Refuses (`TypeError`) a limiter that deduplicates without the
 * `requestHandler` a duplicate is answered with.
 */
export function createExpressSteps(
  limiter: Limiter,
  options: ExpressAdmissionOptions,
): ExpressSteps {
  if (limiter.dedupMethods.size > 0 && options.requestHandler === undefined) {
    throw new TypeError(
      'a2a-ratelimit: deduplication is on, so the Express adapter needs `requestHandler` (the SDK handler) to answer a duplicate with its task; or create the limiter with `dedup: false`',
    );
  }
  const callerKey = expressCallerKey(options);
  const skill = options.skill;
  const pass = options.sdkHandler ?? callNext;
  const mirrorHttpStatus = options.mirrorHttpStatus === true;
  const writes = new WriteWatch(writeDeadlineOf(options.writeDeadlineMs));
  const steps: ExpressSteps = {
    limiter,
    options,
    pass,
    identify: (call) => callerKey(call.req),
    skillOf: (call) => (skill === undefined ? undefined : skill(call.req, call.req.body)),
    isGone: (call) => call.res.destroyed || call.req.socket.destroyed,
    run(call, ticket, method) {
      if (!settleBody(call, ticket)) return;
      const { req, res } = call;
      const headers = ticket.headers;
      for (const name in headers) res.setHeader(name, headers[name] as string);
      if (ticket.needsEnd) {
        req.headers[TICKET_HEADER] = ticket.id;
        // A response the caller never reads must not hold its leases: past the write deadline
        // the socket is destroyed, which closes the response and ends the ticket.
        const unwatch = writes.add({
          pending: () => res.writableLength > 0,
          progress: () => res.socket?.bytesWritten ?? 0,
          expire: () => res.destroy(),
        });
        // A closure, not a property on `res`: adding one to Express's response objects costs µs.
        res.on('close', () => {
          unwatch();
          ticket.end();
        });
      }
      markAdmitted(req.headers, method);
      pass(req, res, call.next);
    },
    reject(call, outcome) {
      const encoded =
        call.binding === 'jsonrpc'
          ? limiter.encodeJsonRpc(outcome.rejection, call.id, outcome.limits, mirrorHttpStatus)
          : limiter.encodeRest(outcome.rejection, outcome.limits);
      writeHttp(call.res, encoded.status, encoded.headers, encoded.body);
    },
    async duplicate(call, taskId, kept) {
      // A copy's answer never runs its body; the SDK may still read it (a resubscription).
      const pending = call.pending;
      call.pending = undefined;
      if (pending !== undefined) {
        try {
          parsePending(call.req, pending);
        } catch {
          // Decided and answered as a copy: what the SDK reads of a resubscription is set anew.
        }
      }
      const handler = options.requestHandler as A2ARequestHandler;
      const contextOf = () => duplicateContext(options, call);
      const answer = await resolveDuplicate(handler, call, taskId, contextOf, kept);
      writeDuplicate(steps, call, answer);
    },
    fail: (call, error) => failRequest(call, error),
  };
  return steps;
}
