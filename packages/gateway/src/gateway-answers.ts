/**
 * @module gateway-answers
 * The answers the gateway writes itself, in each binding's own error shape. Pure.
 */

/** A complete HTTP answer. */
export interface GatewayAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** JSON-RPC error codes the gateway answers with. */
export const JSON_RPC_ERRORS = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
} as const;

const JSON_TYPE = 'application/json';

/**
 * A JSON-RPC error answer (HTTP `status`, 200 unless told).
 *
 * @example
 * ```ts
 * jsonRpcError(null, JSON_RPC_ERRORS.invalidRequest, 'batches are not accepted');
 * ```
 */
export function jsonRpcError(
  id: string | number | null,
  code: number,
  message: string,
  status = 200,
  extraHeaders: Readonly<Record<string, string>> = {},
): GatewayAnswer {
  return {
    status,
    headers: { 'content-type': JSON_TYPE, ...extraHeaders },
    body: JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } }),
  };
}

/** gRPC status names of the HTTP statuses the gateway answers REST requests with. */
const STATUS_NAMES: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  404: 'NOT_FOUND',
  405: 'UNIMPLEMENTED',
  409: 'ALREADY_EXISTS',
  413: 'INVALID_ARGUMENT',
  415: 'INVALID_ARGUMENT',
  503: 'UNAVAILABLE',
};

/**
 * A REST error answer: `{"error":{"code","status","message"}}` (google.rpc.Status as JSON).
 *
 * @example
 * ```ts
 * restError(404, 'no A2A route at this path');
 * ```
 */
export function restError(
  status: number,
  message: string,
  extraHeaders: Readonly<Record<string, string>> = {},
): GatewayAnswer {
  return {
    status,
    headers: { 'content-type': JSON_TYPE, ...extraHeaders },
    body: JSON.stringify({
      error: { code: status, status: STATUS_NAMES[status] ?? 'UNKNOWN', message },
    }),
  };
}

/**
 * The answer to a path outside every interface the card lists: 404 in JSON, never forwarded.
 *
 * @example
 * ```ts
 * notProxied('/admin'); // 404
 * ```
 */
export function notProxied(path: string): GatewayAnswer {
  return restError(
    404,
    `no A2A interface of this agent is at ${JSON.stringify(path.slice(0, 200))}; see /.well-known/agent-card.json`,
  );
}
