/**
 * @module answer-writer
 * The answers the gateway writes itself onto a `node:http` response, rejections included.
 */

import type { ServerResponse } from 'node:http';
import type { Rejection } from 'a2a-ratelimit';
import type { Limiter } from 'a2a-ratelimit/server';
import type { ClassifiedRequest } from './classify-request.js';
import type { GatewayAnswer } from './gateway-answers.js';

/**
 * Writes an answer (headers merged; no body for HEAD, which node drops itself).
 *
 * @example
 * ```ts
 * writeAnswer(res, jsonRpcError(null, -32600, 'no'));
 * ```
 */
export function writeAnswer(
  res: ServerResponse,
  answer: GatewayAnswer,
  extra: Readonly<Record<string, string>> = {},
): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  res.writeHead(answer.status, {
    ...extra,
    ...answer.headers,
    'content-length': Buffer.byteLength(answer.body),
  });
  res.end(answer.body);
}

/**
 * A rejection in the request's binding, written by the limiter's encoders.
 *
 * @example
 * ```ts
 * writeAnswer(res, rejectionAnswer(host, request, rejection, limits));
 * ```
 */
export function rejectionAnswer(
  host: { readonly limiter: Limiter; readonly mirrorHttpStatus: boolean },
  request: Pick<ClassifiedRequest, 'binding' | 'id'>,
  rejection: Rejection,
  limits?: Parameters<Limiter['encodeRest']>[1],
): GatewayAnswer {
  return request.binding === 'jsonrpc'
    ? host.limiter.encodeJsonRpc(rejection, request.id, limits, host.mirrorHttpStatus)
    : host.limiter.encodeRest(rejection, limits);
}
