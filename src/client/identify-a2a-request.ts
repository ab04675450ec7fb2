/**
 * @module identify-a2a-request
 * Which A2A operation an outgoing HTTP request is (JSON-RPC or REST, 1.0 or v0.3) and the
 * `messageId` a retry must carry. Pure.
 */

import { type A2AMethod, toA2AMethod } from '../core/a2a-methods.js';

/**
 * An identified A2A request.
 */
export interface A2ARequestInfo {
  /** `jsonrpc` or `rest`. */
  readonly binding: 'jsonrpc' | 'rest';
  /** The A2A 1.0 operation. */
  readonly method: A2AMethod;
  /** `message.messageId` of SendMessage / SendStreamingMessage. */
  readonly messageId?: string;
  /** SendStreamingMessage / SubscribeToTask: the answer is an SSE stream. */
  readonly streaming: boolean;
}

/**
 * The parts of an HTTP request needed to identify it.
 */
export interface HttpRequestParts {
  /** `GET`, `POST`, `DELETE`… */
  readonly httpMethod: string;
  /** Absolute URL. */
  readonly url: string;
  /** Body as text, if any. */
  readonly bodyText?: string | undefined;
}

const STREAMING: ReadonlySet<A2AMethod> = new Set<A2AMethod>([
  'SendStreamingMessage',
  'SubscribeToTask',
]);

/**
 * Identifies an A2A request, or returns `undefined` for anything else (the agent card, other
 * endpoints).
 *
 * @example
 * ```ts
 * identifyA2ARequest({ httpMethod: 'POST', url: 'http://a/rpc', bodyText: '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}' });
 * // { binding: 'jsonrpc', method: 'GetTask', streaming: false }
 * ```
 */
export function identifyA2ARequest(request: HttpRequestParts): A2ARequestInfo | undefined {
  const body = parseJson(request.bodyText);
  const httpMethod = request.httpMethod.toUpperCase();
  if (isRecord(body) && body.jsonrpc === '2.0' && typeof body.method === 'string') {
    const method = toA2AMethod(body.method);
    if (method === undefined) return undefined;
    return info('jsonrpc', method, messageIdOf(isRecord(body.params) ? body.params : undefined));
  }
  let pathname: string;
  try {
    pathname = new URL(request.url).pathname;
  } catch {
    return undefined;
  }
  const method = restMethod(httpMethod, pathname);
  if (method === undefined) return undefined;
  return info('rest', method, isRecord(body) ? messageIdOf(body) : undefined);
}

function info(
  binding: 'jsonrpc' | 'rest',
  method: A2AMethod,
  messageId: string | undefined,
): A2ARequestInfo {
  const streaming = STREAMING.has(method);
  return messageId === undefined || !(method === 'SendMessage' || method === 'SendStreamingMessage')
    ? { binding, method, streaming }
    : { binding, method, messageId, streaming };
}

/** REST routes of A2A 1.0 (and v0.3's `/v1/…`), matched on the end of the path. */
function restMethod(httpMethod: string, pathname: string): A2AMethod | undefined {
  const path = pathname.replace(/\/+$/, '');
  if (httpMethod === 'POST' && /\/message:send$/.test(path)) return 'SendMessage';
  if (httpMethod === 'POST' && /\/message:stream$/.test(path)) return 'SendStreamingMessage';
  if (/\/tasks\/[^/]+:subscribe$/.test(path)) return 'SubscribeToTask';
  if (httpMethod === 'POST' && /\/tasks\/[^/]+:cancel$/.test(path)) return 'CancelTask';
  if (/\/tasks\/[^/]+\/pushNotificationConfigs\/[^/]+$/.test(path)) {
    if (httpMethod === 'GET') return 'GetTaskPushNotificationConfig';
    if (httpMethod === 'DELETE') return 'DeleteTaskPushNotificationConfig';
    return undefined;
  }
  if (/\/tasks\/[^/]+\/pushNotificationConfigs$/.test(path)) {
    if (httpMethod === 'POST') return 'CreateTaskPushNotificationConfig';
    if (httpMethod === 'GET') return 'ListTaskPushNotificationConfigs';
    return undefined;
  }
  if (httpMethod === 'GET' && /\/tasks\/[^/:]+$/.test(path)) return 'GetTask';
  if (httpMethod === 'GET' && /\/tasks$/.test(path)) return 'ListTasks';
  if (httpMethod === 'GET' && /\/(extendedAgentCard|card)$/.test(path))
    return 'GetExtendedAgentCard';
  return undefined;
}

function messageIdOf(params: Record<string, unknown> | undefined): string | undefined {
  const message = params?.message;
  if (!isRecord(message)) return undefined;
  return typeof message.messageId === 'string' ? message.messageId : undefined;
}

function parseJson(text: string | undefined): unknown {
  if (text === undefined || text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
