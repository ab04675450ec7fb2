/**
 * @module upstream-client
 * The headers a forwarded request and its answer carry, and the gateway's own GetTask to the
 * upstream.
 */

import type { IncomingHttpHeaders } from 'node:http';
import { TICKET_HEADER } from 'a2a-ratelimit/server';
import type { Dispatcher } from 'undici';
import { sightingOfAnswer, type TaskSighting } from './task-sightings.js';

/** Request fields never forwarded (hop-by-hop, recomputed, or the gateway's own). */
const DROPPED_REQUEST = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'expect',
  'content-length',
  'content-encoding',
  'accept-encoding',
  'http2-settings',
  // Method overrides: an agent honouring one would run another route than the one decided.
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
  TICKET_HEADER,
]);

/** Answer fields never relayed (hop-by-hop). */
const DROPPED_ANSWER = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * The media type a forwarded body is sent as: the caller's JSON type with no parameters. The body
 * forwarded is the gateway's own UTF-8 serialisation; a `charset` the caller named (UTF-7, say)
 * would have the agent decode those bytes into another request than the one decided.
 */
function bodyMediaType(type: string | string[] | undefined): string {
  const media = typeof type === 'string' ? type.split(';')[0]?.trim().toLowerCase() : undefined;
  return media === 'application/a2a+json' ? media : 'application/json';
}

/**
 * The headers forwarded with a request: the caller's (credentials unchanged), minus hop-by-hop
 * and recomputed fields and method overrides, with the client address appended to
 * `x-forwarded-for` and `forwarded`, asking for an answer with no content coding. With a `body`,
 * its `content-type` is the gateway's (the caller's JSON media type, no charset).
 *
 * @example
 * ```ts
 * forwardHeaders(req.headers, req.socket.remoteAddress, { body: true });
 * ```
 */
export function forwardHeaders(
  headers: IncomingHttpHeaders,
  clientAddress: string | undefined,
  options: { readonly body: boolean } = { body: false },
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || DROPPED_REQUEST.has(name)) continue;
    out[name] = value;
  }
  if (options.body) out['content-type'] = bodyMediaType(headers['content-type']);
  // The answer is read for task states and usage reports: a compressed one could not be (a
  // caller asking for gzip would run tasks whose reports the gateway never sees).
  out['accept-encoding'] = 'identity';
  if (clientAddress !== undefined) Object.assign(out, forwardedTo(headers, clientAddress));
  return out;
}

/**
 * `x-forwarded-for` and `forwarded` with the client address the gateway saw appended (its last
 * entry is the one an agent behind the gateway believes; anything before it is the caller's say).
 *
 * @example
 * ```ts
 * forwardedTo({ forwarded: 'for=10.0.0.9' }, '::1'); // { 'x-forwarded-for': '::1', forwarded: 'for=10.0.0.9, for="[::1]"' }
 * ```
 */
export function forwardedTo(
  headers: IncomingHttpHeaders,
  clientAddress: string,
): { 'x-forwarded-for': string; forwarded: string } {
  const after = (prior: string | string[] | undefined, entry: string): string =>
    prior === undefined ? entry : `${[prior].flat().join(', ')}, ${entry}`;
  const node = clientAddress.includes(':') ? `"[${clientAddress}]"` : clientAddress;
  return {
    'x-forwarded-for': after(headers['x-forwarded-for'], clientAddress),
    forwarded: after(headers.forwarded, `for=${node}`),
  };
}

/**
 * Whether an upstream answer's header (lower-case name) is relayed: hop-by-hop fields are not.
 *
 * @example
 * ```ts
 * isRelayedAnswerHeader('transfer-encoding'); // false
 * ```
 */
export function isRelayedAnswerHeader(name: string): boolean {
  return !DROPPED_ANSWER.has(name);
}

/** The caller's fields a GetTask of the gateway's own carries: its credentials and version. */
const CREDENTIAL_FIELDS = ['authorization', 'x-api-key', 'cookie', 'a2a-version', 'a2a-extensions'];

/**
 * The credentials of a request, kept to poll the upstream on its behalf.
 *
 * @example
 * ```ts
 * const credentials = credentialsOf(req.headers);
 * ```
 */
export function credentialsOf(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of CREDENTIAL_FIELDS) {
    const value = headers[name];
    if (typeof value === 'string') out[name] = value;
  }
  return out;
}

/** Where and how the gateway asks the upstream for a task. */
export interface TaskQuery {
  readonly origin: string;
  readonly binding: 'jsonrpc' | 'rest';
  /** The interface's path on the upstream. */
  readonly ifacePath: string;
  /** v0.3 names (`tasks/get`, `/v1/tasks/…`). */
  readonly legacy: boolean;
  readonly tenant: string | undefined;
  readonly credentials: Readonly<Record<string, string>>;
}

/** What a GetTask of the gateway's own got: the answer's body, parsed, and what it says. */
export interface TaskAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly sighting: TaskSighting | undefined;
}

/**
 * Sends GetTask for `taskId` to the upstream (in the admission's binding, with its credentials).
 * Throws when the upstream cannot be reached or does not answer within `timeoutMs`.
 *
 * @example
 * ```ts
 * const answer = await getTask(dispatcher, query, 'task-1', 5_000);
 * ```
 */
export async function getTask(
  dispatcher: Dispatcher,
  query: TaskQuery,
  taskId: string,
  timeoutMs: number,
): Promise<TaskAnswer> {
  const base = query.ifacePath === '/' ? '' : query.ifacePath;
  const request: Dispatcher.RequestOptions =
    query.binding === 'jsonrpc'
      ? {
          origin: query.origin,
          path: query.ifacePath,
          method: 'POST',
          headers: { ...query.credentials, 'content-type': 'application/json' },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: `gateway-${taskId}`,
            method: query.legacy ? 'tasks/get' : 'GetTask',
            params: { id: taskId, ...(query.tenant === undefined ? {} : { tenant: query.tenant }) },
          }),
        }
      : {
          origin: query.origin,
          path: `${base}${query.legacy ? '/v1' : ''}${query.tenant === undefined ? '' : `/${encodeURIComponent(query.tenant)}`}/tasks/${encodeURIComponent(taskId)}`,
          method: 'GET',
          headers: { ...query.credentials },
        };
  const response = await dispatcher.request({
    ...request,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  const text = await response.body.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const sighting = response.statusCode === 200 ? sightingOfAnswer(query.binding, body) : undefined;
  return { status: response.statusCode, body, sighting };
}
