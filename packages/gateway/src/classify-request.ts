/**
 * @module classify-request
 * What a request to the gateway is before anything is forwarded: its interface, operation, id,
 * tenant, messageId, webhooks and canonical form. Pure.
 */

import type { A2AMethod } from 'a2a-ratelimit';
import { toA2AMethod } from 'a2a-ratelimit';
import { isRestRoute, matchRestRoute } from 'a2a-ratelimit/server';
import { type GatewayAnswer, JSON_RPC_ERRORS, jsonRpcError, restError } from './gateway-answers.js';
import { parseStrictJson } from './strict-json.js';
import type { ProxiedInterface } from './upstream-card.js';

/** Where a request's path leads, before its body is read. */
export type RoutedRequest =
  | { readonly kind: 'jsonrpc'; readonly iface: ProxiedInterface }
  | {
      readonly kind: 'rest';
      readonly iface: ProxiedInterface;
      readonly method: A2AMethod;
      /** The canonical path on the upstream (interface path + route path). */
      readonly path: string;
      readonly tenant: string | undefined;
      readonly taskId: string | undefined;
      /** The verb forwarded (HEAD is decided and forwarded as GET). */
      readonly verb: 'GET' | 'POST' | 'DELETE';
      /** Matched a v0.3 `/v1/...` route. */
      readonly legacy: boolean;
    }
  | { readonly kind: 'answer'; readonly answer: GatewayAnswer };

/** A request decided on, and what is forwarded when it is admitted. */
export interface ClassifiedRequest {
  readonly binding: 'jsonrpc' | 'rest';
  readonly method: A2AMethod;
  /** The JSON-RPC id (null for REST, or when the request has none). */
  readonly id: string | number | null;
  readonly tenant: string | undefined;
  readonly messageId: string | undefined;
  readonly taskId: string | undefined;
  /** Webhook URLs the request asks the agent to call. */
  readonly webhookUrls: readonly string[];
  /** The canonical path (and the request's query) to forward to. */
  readonly path: string;
  readonly verb: 'GET' | 'POST' | 'DELETE';
  /** The body to forward: the parsed body serialised again (undefined: none). */
  readonly body: string | undefined;
  /** The parsed body (undefined: none). */
  readonly parsed: Record<string, unknown> | undefined;
  /** The interface's path on the upstream. */
  readonly ifacePath: string;
  /** Named with a v0.3 method name or route. */
  readonly legacy: boolean;
}

/** Whether the operation answers with an SSE stream. */
export function isStreaming(method: A2AMethod): boolean {
  return method === 'SendStreamingMessage' || method === 'SubscribeToTask';
}

function stripSlash(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

/**
 * Whether an `A2A-Version` header asks for v0.3 (none, or one in [0.3, 1.0)): the SDK's
 * `isLegacyVersion`, which decides whether its v0.3 REST routes are tried.
 *
 * @example
 * ```ts
 * isLegacyVersion(undefined); // true
 * isLegacyVersion('1.0'); // false
 * ```
 */
export function isLegacyVersion(header: string | string[] | undefined): boolean {
  const version = (typeof header === 'string' ? header : header?.[0])?.trim();
  if (version === undefined || version === '') return true;
  const match = /^(\d+)\.(\d+)/.exec(version);
  return match !== null && Number(match[1]) === 0 && Number(match[2]) >= 3;
}

/**
 * Routes a request by verb and raw path (no query) onto the card's proxied interfaces: their
 * paths case-insensitively, one optional trailing slash; anything else is a 404 in JSON. The v0.3
 * `/v1/...` REST routes are tried only for a v0.3 request (`legacyRoutes`, {@link
 * isLegacyVersion}); under 1.0 such a path is tenant `v1`'s, as the SDK routes it.
 *
 * @example
 * ```ts
 * routeRequest('POST', '/A2A/JSONRPC/', interfaces); // { kind: 'jsonrpc', iface }
 * ```
 */
export function routeRequest(
  verb: string,
  rawPath: string,
  interfaces: readonly ProxiedInterface[],
  options: { readonly legacyRoutes: boolean } = { legacyRoutes: true },
): RoutedRequest {
  const lower = stripSlash(rawPath).toLowerCase();
  for (const iface of interfaces) {
    if (iface.binding !== 'jsonrpc' || lower !== iface.lowerPath) continue;
    if (verb !== 'POST') {
      return {
        kind: 'answer',
        answer: jsonRpcError(
          null,
          JSON_RPC_ERRORS.invalidRequest,
          'JSON-RPC requests are POSTed',
          405,
          {
            allow: 'POST',
          },
        ),
      };
    }
    return { kind: 'jsonrpc', iface };
  }
  for (const iface of interfaces) {
    if (iface.binding !== 'rest') continue;
    const prefix = iface.lowerPath === '/' ? '' : iface.lowerPath;
    if (!rawPath.toLowerCase().startsWith(`${prefix}/`)) continue;
    const route = matchRestRoute(verb, rawPath.slice(prefix.length), {
      legacy: options.legacyRoutes,
    });
    if (!isRestRoute(route)) {
      if (route.miss === 'no-route') continue;
      if (route.miss === 'bad-escape') {
        return { kind: 'answer', answer: restError(400, 'malformed percent-encoding in the path') };
      }
      return {
        kind: 'answer',
        answer: restError(405, `${verb} is not allowed here`, { allow: route.allow.join(', ') }),
      };
    }
    const upper = verb.toUpperCase();
    return {
      kind: 'rest',
      iface,
      method: route.method,
      path: `${iface.path === '/' ? '' : iface.path}${route.path}`,
      tenant: route.tenant,
      taskId: route.taskId,
      verb: upper === 'HEAD' ? 'GET' : (upper as 'GET' | 'POST' | 'DELETE'),
      legacy: route.legacy,
    };
  }
  return {
    kind: 'answer',
    answer: restError(
      404,
      `no A2A operation of this agent is at ${JSON.stringify(rawPath.slice(0, 200))}; see /.well-known/agent-card.json`,
    ),
  };
}

/** A field named both by its JSON name and its proto name in one object. */
class AmbiguousField extends Error {}

/**
 * Reads `obj.a.b.c`, or undefined. Each key is also read under its proto field name
 * (`messageId` / `message_id`), as every protobuf JSON parser (the SDK's among them) accepts
 * both; an object naming a field both ways is ambiguous (parsers keep one or the other, or
 * refuse): {@link AmbiguousField}.
 */
function at(value: unknown, ...keys: string[]): unknown {
  let v = value;
  for (const key of keys) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
    const o = v as Record<string, unknown>;
    const json = Object.hasOwn(o, key) ? o[key] : undefined;
    const snake = key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    const proto = snake !== key && Object.hasOwn(o, snake) ? o[snake] : undefined;
    if (json !== undefined && proto !== undefined) throw new AmbiguousField(`${key} / ${snake}`);
    v = json ?? proto;
  }
  return v;
}

/** What a body says, read once; or why it cannot be read one way. */
type BodyFields =
  | {
      readonly tenant: unknown;
      readonly messageId: string | undefined;
      readonly taskId: unknown;
      readonly webhookUrls: string[];
    }
  | { readonly refused: string };

/** The fields a request's decision reads from its (parsed) body or params. */
function bodyFields(method: A2AMethod, params: unknown, tenantAt: 'params' | 'none'): BodyFields {
  try {
    const messageId = at(params, 'message', 'messageId');
    if (messageId !== undefined && messageId !== null && typeof messageId !== 'string') {
      return { refused: 'message.messageId must be a string' };
    }
    return {
      tenant: tenantAt === 'params' ? at(params, 'tenant') : undefined,
      messageId: stringOrUndefined(messageId),
      taskId: at(params, 'id'),
      webhookUrls: webhookUrlsOf(method, params),
    };
  } catch (error) {
    if (!(error instanceof AmbiguousField)) throw error;
    return { refused: `the body names ${error.message} both ways` };
  }
}

/** The webhook URLs a request body registers (A2A 1.0 and v0.3 field names). */
function webhookUrlsOf(method: A2AMethod, params: unknown): string[] {
  const candidates =
    method === 'SendMessage' || method === 'SendStreamingMessage'
      ? [
          at(params, 'configuration', 'taskPushNotificationConfig', 'url'),
          at(params, 'configuration', 'pushNotificationConfig', 'url'),
        ]
      : method === 'CreateTaskPushNotificationConfig'
        ? [
            at(params, 'url'),
            at(params, 'pushNotificationConfig', 'url'),
            at(params, 'config', 'url'),
            at(params, 'config', 'pushNotificationConfig', 'url'),
          ]
        : [];
  return candidates.filter((u): u is string => u !== undefined).map((u) => String(u));
}

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * Parses a JSON-RPC request body once and classifies it, or answers why it is not forwarded:
 * batches, duplicate keys, a `method` that is not a string or names no A2A method are refused.
 *
 * @example
 * ```ts
 * classifyJsonRpc('{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}', iface, '', 64);
 * ```
 */
export function classifyJsonRpc(
  text: string,
  iface: ProxiedInterface,
  query: string,
  maxDepth: number,
): ClassifiedRequest | GatewayAnswer {
  const parsed = parseStrictJson(text, maxDepth);
  if (parsed.status === 'malformed') {
    return jsonRpcError(null, JSON_RPC_ERRORS.parse, `Parse error: ${parsed.message}`);
  }
  if (parsed.status === 'too-deep') {
    return jsonRpcError(null, JSON_RPC_ERRORS.invalidRequest, 'the body is nested too deeply');
  }
  if (parsed.status === 'duplicate-key') {
    return jsonRpcError(
      null,
      JSON_RPC_ERRORS.invalidRequest,
      `the body has the key ${JSON.stringify(parsed.key)} twice in one object`,
    );
  }
  const body = parsed.value;
  if (Array.isArray(body)) {
    return jsonRpcError(null, JSON_RPC_ERRORS.invalidRequest, 'batch requests are not accepted');
  }
  if (body === null || typeof body !== 'object') {
    return jsonRpcError(null, JSON_RPC_ERRORS.invalidRequest, 'the request is not a JSON object');
  }
  const request = body as Record<string, unknown>;
  const rawId = request.id;
  if (
    rawId !== undefined &&
    rawId !== null &&
    typeof rawId !== 'string' &&
    typeof rawId !== 'number'
  ) {
    return jsonRpcError(null, JSON_RPC_ERRORS.invalidRequest, 'id must be a string or a number');
  }
  const id = rawId ?? null;
  if (request.jsonrpc !== '2.0') {
    return jsonRpcError(id, JSON_RPC_ERRORS.invalidRequest, 'jsonrpc must be "2.0"');
  }
  if (typeof request.method !== 'string') {
    return jsonRpcError(id, JSON_RPC_ERRORS.invalidRequest, 'method must be a string');
  }
  const method = toA2AMethod(request.method);
  if (method === undefined) {
    return jsonRpcError(
      id,
      JSON_RPC_ERRORS.methodNotFound,
      `Method not found: ${request.method.slice(0, 100)}`,
    );
  }
  const fields = bodyFields(method, request.params, 'params');
  if ('refused' in fields) return jsonRpcError(id, JSON_RPC_ERRORS.invalidParams, fields.refused);
  const tenant = fields.tenant;
  if (tenant !== undefined && tenant !== null && typeof tenant !== 'string') {
    return jsonRpcError(id, JSON_RPC_ERRORS.invalidParams, 'params.tenant must be a string');
  }
  return {
    binding: 'jsonrpc',
    method,
    id,
    tenant: stringOrUndefined(tenant),
    messageId: fields.messageId,
    taskId: stringOrUndefined(fields.taskId),
    webhookUrls: fields.webhookUrls,
    path: iface.path + query,
    verb: 'POST',
    body: JSON.stringify(request),
    parsed: request,
    ifacePath: iface.path,
    legacy: request.method.includes('/'),
  };
}

/** The most query parameters a REST request may carry (the agent's parser may read no more). */
const MAX_QUERY_PARAMETERS = 1000;

/**
 * The tenant of a REST request: its path's, else its body's `tenant`, else its query's (the
 * spec's HTTP transcoding, and the SDK's router, take a tenantless route's tenant from there), or
 * a 400 when they disagree or one is named ambiguously (twice in the query, `tenant[...]`, not a
 * string in the body): the agent must never be handed a tenant other than the one decided. v0.3
 * routes have no tenant.
 */
function restTenantOf(
  routed: Extract<RoutedRequest, { kind: 'rest' }>,
  parsed: Record<string, unknown> | undefined,
  query: string,
): string | undefined | GatewayAnswer {
  if (routed.legacy) return routed.tenant;
  const named: string[] = [];
  if (routed.tenant !== undefined && routed.tenant !== '') named.push(routed.tenant);
  if (parsed !== undefined && Object.hasOwn(parsed, 'tenant')) {
    const value = parsed.tenant;
    if (value !== null && typeof value !== 'string') {
      return restError(400, 'the body’s tenant must be a string');
    }
    if (value !== null && value !== '') named.push(value);
  }
  if (query.length > 1) {
    const params = new URLSearchParams(query);
    let count = 0;
    let seen = false;
    for (const [key, value] of params) {
      if (++count > MAX_QUERY_PARAMETERS) {
        return restError(400, `the query has more than ${MAX_QUERY_PARAMETERS} parameters`);
      }
      if (key !== 'tenant' && !key.startsWith('tenant[') && !key.startsWith('tenant.')) continue;
      if (key !== 'tenant' || seen) {
        return restError(400, 'the query names its tenant more than once, or not as tenant=…');
      }
      seen = true;
      if (value !== '') named.push(value);
    }
  }
  const tenant = named[0];
  if (named.some((t) => t !== tenant)) {
    return restError(400, 'the path, body and query name different tenants');
  }
  return tenant;
}

/**
 * Classifies a routed REST request with its body text (empty: none), or answers why it is not
 * forwarded.
 *
 * @example
 * ```ts
 * classifyRest(routed, '{"message":{…}}', '', 64);
 * ```
 */
export function classifyRest(
  routed: Extract<RoutedRequest, { kind: 'rest' }>,
  text: string,
  query: string,
  maxDepth: number,
): ClassifiedRequest | GatewayAnswer {
  let parsed: Record<string, unknown> | undefined;
  if (routed.verb === 'POST' && text.trim() !== '') {
    const result = parseStrictJson(text, maxDepth);
    if (result.status === 'malformed') return restError(400, `malformed JSON: ${result.message}`);
    if (result.status === 'too-deep') return restError(400, 'the body is nested too deeply');
    if (result.status === 'duplicate-key') {
      return restError(
        400,
        `the body has the key ${JSON.stringify(result.key)} twice in one object`,
      );
    }
    const value = result.value;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      return restError(400, 'the body is not a JSON object');
    }
    parsed = value as Record<string, unknown>;
  }
  const tenant = restTenantOf(routed, parsed, query);
  if (typeof tenant === 'object') return tenant;
  const fields = bodyFields(routed.method, parsed, 'none');
  if ('refused' in fields) return restError(400, fields.refused);
  return {
    binding: 'rest',
    method: routed.method,
    id: null,
    tenant,
    messageId: fields.messageId,
    taskId: routed.taskId,
    webhookUrls: fields.webhookUrls,
    path: routed.path + query,
    verb: routed.verb,
    body: parsed === undefined ? undefined : JSON.stringify(parsed),
    parsed,
    ifacePath: routed.iface.path,
    legacy: routed.legacy,
  };
}
