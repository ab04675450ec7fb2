/**
 * @module rest-route
 * Which A2A operation an HTTP+JSON request is, matched exactly as the SDK's Express router matches
 * it, and what that router would refuse. Pure.
 */

import type { A2AMethod } from '../core/a2a-methods.js';

/**
 * A matched REST route.
 */
export interface RestRoute {
  readonly method: A2AMethod;
  /** Tenant from the `/{tenant}` prefix (decoded), if any. */
  readonly tenant?: string;
  /** Task id from the path, for task routes. */
  readonly taskId?: string;
  /** Push config id from the path, for the routes of one push config. */
  readonly configId?: string;
  /**
   * The request's path in its canonical spelling: the route's literal segments as the A2A spec
   * spells them (`/message:send`, `/tasks/{id}/pushNotificationConfigs`), each parameter
   * re-encoded with `encodeURIComponent`, no trailing slash. A proxy forwards this path, so the
   * agent behind it is handed exactly the route that was decided.
   */
  readonly path: string;
  /** Matched a v0.3 `/v1/...` route. */
  readonly legacy: boolean;
}

/**
 * Why a REST request matches no route: `bad-escape` (a parameter segment is not valid
 * percent-encoding; the router answers 400), `no-route` (no route has this path; 404),
 * `wrong-verb` (routes have the path but not the verb; `allow` lists theirs).
 */
export type RestRouteMiss =
  | { readonly miss: 'bad-escape' }
  | { readonly miss: 'no-route' }
  | { readonly miss: 'wrong-verb'; readonly allow: readonly string[] };

type Verb = 'GET' | 'POST' | 'DELETE';
type Param = 'tenant' | 'taskId' | 'configId';
/**
 * A path segment: a literal (as the spec spells it; matched case-insensitively) or a parameter,
 * optionally ending in a literal suffix.
 */
type Token = string | { readonly param: Param; readonly suffix?: string };

interface RouteSpec {
  readonly verb: Verb;
  readonly tokens: readonly Token[];
  readonly method: A2AMethod;
  readonly legacy: boolean;
}

const TASK: Token = { param: 'taskId' };
const CONFIG: Token = { param: 'configId' };
const TENANT: Token = { param: 'tenant' };

/** The SDK's 1.0 routes (`restHandler`), in its registration order. */
const CORE_ROUTES: readonly (readonly [Verb, readonly Token[], A2AMethod])[] = [
  ['GET', ['extendedAgentCard'], 'GetExtendedAgentCard'],
  ['POST', ['message:send'], 'SendMessage'],
  ['POST', ['message:stream'], 'SendStreamingMessage'],
  ['GET', ['tasks', { param: 'taskId', suffix: ':subscribe' }], 'SubscribeToTask'],
  ['POST', ['tasks', { param: 'taskId', suffix: ':subscribe' }], 'SubscribeToTask'],
  ['POST', ['tasks', { param: 'taskId', suffix: ':cancel' }], 'CancelTask'],
  ['GET', ['tasks', TASK], 'GetTask'],
  ['GET', ['tasks'], 'ListTasks'],
  ['POST', ['tasks', TASK, 'pushNotificationConfigs'], 'CreateTaskPushNotificationConfig'],
  ['GET', ['tasks', TASK, 'pushNotificationConfigs'], 'ListTaskPushNotificationConfigs'],
  ['GET', ['tasks', TASK, 'pushNotificationConfigs', CONFIG], 'GetTaskPushNotificationConfig'],
  [
    'DELETE',
    ['tasks', TASK, 'pushNotificationConfigs', CONFIG],
    'DeleteTaskPushNotificationConfig',
  ],
];

/** The SDK's v0.3 routes (`legacyRestRouter`), in its registration order; no tenant form. */
const LEGACY_ROUTES: readonly (readonly [Verb, readonly Token[], A2AMethod])[] = [
  ['GET', ['v1', 'card'], 'GetExtendedAgentCard'],
  ['POST', ['v1', 'message:send'], 'SendMessage'],
  ['POST', ['v1', 'message:stream'], 'SendStreamingMessage'],
  ['POST', ['v1', 'tasks', { param: 'taskId', suffix: ':cancel' }], 'CancelTask'],
  ['GET', ['v1', 'tasks', { param: 'taskId', suffix: ':subscribe' }], 'SubscribeToTask'],
  ['POST', ['v1', 'tasks', { param: 'taskId', suffix: ':subscribe' }], 'SubscribeToTask'],
  ['GET', ['v1', 'tasks', TASK], 'GetTask'],
  ['POST', ['v1', 'tasks', TASK, 'pushNotificationConfigs'], 'CreateTaskPushNotificationConfig'],
  ['GET', ['v1', 'tasks', TASK, 'pushNotificationConfigs'], 'ListTaskPushNotificationConfigs'],
  [
    'GET',
    ['v1', 'tasks', TASK, 'pushNotificationConfigs', CONFIG],
    'GetTaskPushNotificationConfig',
  ],
  [
    'DELETE',
    ['v1', 'tasks', TASK, 'pushNotificationConfigs', CONFIG],
    'DeleteTaskPushNotificationConfig',
  ],
];

const spec = (legacy: boolean) =>
  function toSpec([verb, tokens, method]: readonly [Verb, readonly Token[], A2AMethod]): RouteSpec {
    return { verb, tokens, method, legacy };
  };

const PLAIN: readonly RouteSpec[] = CORE_ROUTES.flatMap((route) => [
  spec(false)(route),
  spec(false)([route[0], [TENANT, ...route[1]], route[2]]),
]);
const WITH_LEGACY: readonly RouteSpec[] = [...LEGACY_ROUTES.map(spec(true)), ...PLAIN];

/** Decoded parameters of a route whose shape matched, or undefined when one is malformed. */
interface Params {
  tenant?: string | undefined;
  taskId?: string | undefined;
  configId?: string | undefined;
}

/**
 * Fills `out` from `segments` when they have the route's shape; `false` when they do not, and
 * `'bad-escape'` when the shape matches but a parameter does not decode (the router decodes
 * while it matches, so that is its 400 whatever the verb).
 */
function matchShape(
  tokens: readonly Token[],
  segments: readonly string[],
  lower: readonly string[],
  out: Params,
): boolean | 'bad-escape' {
  if (tokens.length !== segments.length) return false;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as Token;
    const segment = lower[i] as string;
    if (typeof token === 'string') {
      if (segment !== token.toLowerCase()) return false;
    } else if (token.suffix === undefined) {
      if (segment === '') return false;
    } else if (segment.length <= token.suffix.length || !segment.endsWith(token.suffix)) {
      return false;
    }
  }
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as Token;
    if (typeof token === 'string') continue;
    const segment = segments[i] as string;
    const value = token.suffix === undefined ? segment : segment.slice(0, -token.suffix.length);
    try {
      out[token.param] = decodeURIComponent(value);
    } catch {
      return 'bad-escape';
    }
  }
  return true;
}

/** The canonical spelling of a matched route's path (see {@link RestRoute.path}). */
function canonicalPath(tokens: readonly Token[], params: Params): string {
  let path = '';
  for (const token of tokens) {
    path += '/';
    if (typeof token === 'string') path += token;
    else path += encodeURIComponent(params[token.param] ?? '') + (token.suffix ?? '');
  }
  return path;
}

/**
 * Identifies the A2A operation of a REST request as the SDK's router would route it. `path` is
 * relative to the REST mount point (Express `req.path`: no query string, not decoded). With
 * `legacy` (a v0.3 request to an SDK with `legacyCompat` on), the `/v1/...` routes are tried
 * first. Returns the route, or why there is none (`RestRouteMiss`).
 *
 * @example
 * ```ts
 * matchRestRoute('POST', '/acme/Message:Send'); // { method: 'SendMessage', tenant: 'acme', legacy: false, path: '/acme/message:send' }
 * matchRestRoute('HEAD', '/tasks/t-1/'); // { method: 'GetTask', taskId: 't-1', legacy: false, path: '/tasks/t-1' }
 * matchRestRoute('GET', '/%ff/tasks'); // { miss: 'bad-escape' }
 * ```
 */
export function matchRestRoute(
  httpMethod: string,
  path: string,
  options: { readonly legacy?: boolean } = {},
): RestRoute | RestRouteMiss {
  const upper = httpMethod.toUpperCase();
  const verb = upper === 'HEAD' ? 'GET' : upper;
  if (!path.startsWith('/')) return { miss: 'no-route' };
  const segments = path.slice(1).split('/');
  // One trailing slash is optional (the router's non-strict matching); `/` alone is no route.
  if (segments.length > 1 && segments.at(-1) === '') segments.pop();
  const lower = segments.map((s) => s.toLowerCase());
  let allow: Set<string> | undefined;
  const params: Params = {};
  for (const route of options.legacy === true ? WITH_LEGACY : PLAIN) {
    const shape = matchShape(route.tokens, segments, lower, params);
    if (shape === false) continue;
    if (shape === 'bad-escape') return { miss: 'bad-escape' };
    if (route.verb !== verb) {
      allow ??= new Set();
      allow.add(route.verb);
      params.tenant = params.taskId = params.configId = undefined;
      continue;
    }
    return {
      method: route.method,
      legacy: route.legacy,
      ...(params.tenant === undefined ? {} : { tenant: params.tenant }),
      ...(params.taskId === undefined ? {} : { taskId: params.taskId }),
      ...(params.configId === undefined ? {} : { configId: params.configId }),
      path: canonicalPath(route.tokens, params),
    };
  }
  if (allow === undefined) return { miss: 'no-route' };
  if (allow.has('GET')) allow.add('HEAD');
  return { miss: 'wrong-verb', allow: [...allow].sort() };
}

/**
 * Whether a matched REST request is an A2A route (`RestRoute`) or a miss.
 *
 * @example
 * ```ts
 * const found = matchRestRoute('GET', '/tasks');
 * if (isRestRoute(found)) found.method; // 'ListTasks'
 * ```
 */
export function isRestRoute(found: RestRoute | RestRouteMiss): found is RestRoute {
  return 'method' in found;
}
