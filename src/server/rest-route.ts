/**
 * @module rest-route
 * Which A2A operation an HTTP+JSON request is, from its verb and path relative to the REST mount:
 * the A2A 1.0 routes, each with the optional `/{tenant}` prefix, SubscribeToTask by GET and POST,
 * and the v0.3 `/v1/...` routes the SDK serves in legacy mode. Pure.
 */

import type { A2AMethod } from '../core/a2a-methods.js';

/**
 * A matched REST route.
 *
 * @example
 * ```ts
 * const route: RestRoute = { method: 'SendMessage', tenant: 'acme', legacy: false };
 * ```
 */
export interface RestRoute {
  readonly method: A2AMethod;
  /** Tenant from the `/{tenant}` prefix (decoded), if any. */
  readonly tenant?: string;
  /** Task id from the path, for task routes. */
  readonly taskId?: string;
  /** Matched a v0.3 `/v1/...` route. */
  readonly legacy: boolean;
}

type Verb = 'GET' | 'POST' | 'DELETE';

function decode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** Matches the tenant-less part: `segments` are the raw path segments. */
function matchCore(
  verb: Verb,
  segments: readonly string[],
): { method: A2AMethod; taskId?: string } | undefined {
  const [a, b, c, d, ...rest] = segments;
  if (rest.length > 0 || a === undefined) return undefined;
  if (b === undefined) {
    if (verb === 'POST' && a === 'message:send') return { method: 'SendMessage' };
    if (verb === 'POST' && a === 'message:stream') return { method: 'SendStreamingMessage' };
    if (verb === 'GET' && a === 'extendedAgentCard') return { method: 'GetExtendedAgentCard' };
    if (verb === 'GET' && a === 'tasks') return { method: 'ListTasks' };
    return undefined;
  }
  if (a !== 'tasks' || b === '') return undefined;
  if (c === undefined) {
    if (b.endsWith(':cancel') && verb === 'POST') {
      const taskId = decode(b.slice(0, -':cancel'.length));
      return taskId ? { method: 'CancelTask', taskId } : undefined;
    }
    if (b.endsWith(':subscribe') && (verb === 'POST' || verb === 'GET')) {
      const taskId = decode(b.slice(0, -':subscribe'.length));
      return taskId ? { method: 'SubscribeToTask', taskId } : undefined;
    }
    const taskId = decode(b);
    return verb === 'GET' && taskId ? { method: 'GetTask', taskId } : undefined;
  }
  if (c !== 'pushNotificationConfigs') return undefined;
  const taskId = decode(b);
  if (!taskId) return undefined;
  if (d === undefined) {
    if (verb === 'POST') return { method: 'CreateTaskPushNotificationConfig', taskId };
    if (verb === 'GET') return { method: 'ListTaskPushNotificationConfigs', taskId };
    return undefined;
  }
  if (d === '') return undefined;
  if (verb === 'GET') return { method: 'GetTaskPushNotificationConfig', taskId };
  if (verb === 'DELETE') return { method: 'DeleteTaskPushNotificationConfig', taskId };
  return undefined;
}

/**
 * Identifies the A2A operation of a REST request. `path` is relative to the REST mount point
 * (Express `req.path`), without the query string. The tenant-less form wins over a tenant prefix
 * (as in the SDK's router). With `legacy`, v0.3 paths (`/v1/message:send`, `/v1/card`, …) match
 * too. Returns `undefined` for anything the SDK would not route (it answers those itself).
 *
 * @example
 * ```ts
 * matchRestRoute('POST', '/acme/message:send'); // { method: 'SendMessage', tenant: 'acme', legacy: false }
 * matchRestRoute('GET', '/tasks/t-1:subscribe'); // { method: 'SubscribeToTask', taskId: 't-1', legacy: false }
 * ```
 */
export function matchRestRoute(
  httpMethod: string,
  path: string,
  options: { readonly legacy?: boolean } = {},
): RestRoute | undefined {
  const verb = httpMethod.toUpperCase();
  if (verb !== 'GET' && verb !== 'POST' && verb !== 'DELETE') return undefined;
  if (!path.startsWith('/')) return undefined;
  const segments = path.slice(1).split('/');
  if (segments.at(-1) === '' && segments.length > 1) segments.pop();
  if (options.legacy === true && segments[0] === 'v1') {
    const rest = segments.slice(1);
    if (verb === 'GET' && rest.length === 1 && rest[0] === 'card') {
      return { method: 'GetExtendedAgentCard', legacy: true };
    }
    const core = matchCore(verb, rest);
    if (core !== undefined) return { ...core, legacy: true };
  }
  const plain = matchCore(verb, segments);
  if (plain !== undefined) return { ...plain, legacy: false };
  const [first, ...tail] = segments;
  if (first === undefined || first === '') return undefined;
  const tenant = decode(first);
  if (!tenant) return undefined;
  const prefixed = matchCore(verb, tail);
  return prefixed === undefined ? undefined : { ...prefixed, tenant, legacy: false };
}
