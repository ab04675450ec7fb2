/**
 * @module server/express/misses
 * Answers the Express adapters write themselves, and what a combined mount answers for a request no
 * A2A route takes, in the binding's error format.
 */

import { A2A_ERROR_CODE } from '@a2a-js/sdk/errors';
import type { Request, Response } from 'express';
import type { RestRouteMiss } from '../rest-route.js';

/** Content type of the JSON-RPC binding's answers. */
export const JSON_RPC_CONTENT = { 'content-type': 'application/json; charset=utf-8' } as const;
/** Content type of the HTTP+JSON binding's answers. */
export const REST_CONTENT = { 'content-type': 'application/a2a+json' } as const;

/** Writes a whole answer: status, headers, body. */
export function writeHttp(
  res: Response,
  status: number,
  headers: Readonly<Record<string, string>>,
  body: string,
): void {
  res.status(status);
  for (const name in headers) res.setHeader(name, headers[name] as string);
  res.end(body);
}

/** Answers OPTIONS for a path of the binding: 204 with the verbs its routes take. */
export function writeAllow(res: Response, verbs: readonly string[]): void {
  res.status(204);
  if (verbs.length > 0) res.setHeader('allow', [...verbs, 'OPTIONS'].join(', '));
  res.end();
}

/** A JSON-RPC mount's answer to a path or verb that is not its endpoint. */
export function writeJsonRpcMiss(
  res: Response,
  status: 404 | 405,
  message: string,
  allow?: readonly string[],
): void {
  const headers: Record<string, string> = { ...JSON_RPC_CONTENT };
  if (allow !== undefined) headers.allow = allow.join(', ');
  const error = { code: A2A_ERROR_CODE.INVALID_REQUEST, message };
  writeHttp(res, status, headers, JSON.stringify({ jsonrpc: '2.0', id: null, error }));
}

/** A REST mount's answer to a request no route takes, as a google.rpc.Status body. */
export function writeRestMiss(req: Request, res: Response, miss: RestRouteMiss): void {
  if (miss.miss === 'wrong-verb' && req.method === 'OPTIONS') {
    writeAllow(res, miss.allow);
    return;
  }
  const headers: Record<string, string> = { ...REST_CONTENT };
  let error: { code: number; status: string; message: string; details: [] };
  if (miss.miss === 'bad-escape') {
    error = {
      code: 400,
      status: 'INVALID_ARGUMENT',
      message: 'Malformed percent-encoding in the request path',
      details: [],
    };
  } else if (miss.miss === 'no-route') {
    error = {
      code: 404,
      status: 'NOT_FOUND',
      message: 'No A2A HTTP+JSON route has this path',
      details: [],
    };
  } else {
    headers.allow = miss.allow.join(', ');
    error = {
      code: 405,
      status: 'UNIMPLEMENTED',
      message: `This path takes ${headers.allow}`,
      details: [],
    };
  }
  writeHttp(res, error.code, headers, JSON.stringify({ error }));
}
