/**
 * @module duplicate-answer
 * The answer to a retried copy of an admitted message: the first copy's task or Message, never a
 * second run upstream.
 */

import type { AdmissionOutcome } from 'a2a-ratelimit/server';
import type { Dispatcher } from 'undici';
import type { ClassifiedRequest } from './classify-request.js';
import { isStreaming } from './classify-request.js';
import { type GatewayAnswer, JSON_RPC_ERRORS, jsonRpcError, restError } from './gateway-answers.js';
import { getTask, type TaskQuery } from './upstream-client.js';

type Duplicate = Extract<AdmissionOutcome, { status: 'duplicate' }>;

function answerWith(
  request: ClassifiedRequest,
  key: 'task' | 'message',
  value: unknown,
  headers: Readonly<Record<string, string>>,
): GatewayAnswer {
  const result = request.binding === 'jsonrpc' && request.legacy ? value : { [key]: value };
  const payload =
    request.binding === 'jsonrpc' ? { jsonrpc: '2.0', id: request.id, result } : result;
  if (isStreaming(request.method)) {
    return {
      status: 200,
      headers: { ...headers, 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
      body: `data: ${JSON.stringify(payload)}\n\n`,
    };
  }
  return {
    status: 200,
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(payload),
  };
}

/**
 * The answer to a duplicate, which never reaches the upstream as a message again: the first
 * copy's task, fetched with GetTask from the upstream with this copy's own credentials, or the
 * Message the first copy was answered with; a stream gets it as its one SSE event. JSON-RPC in its
 * result shape (1.0 `{task}` / `{message}`, v0.3 the object itself), REST as `{task}` /
 * `{message}`.
 *
 * @example
 * ```ts
 * const answer = await duplicateAnswer(dispatcher, request, outcome, query, 5_000);
 * ```
 */
export async function duplicateAnswer(
  dispatcher: Dispatcher,
  request: ClassifiedRequest,
  outcome: Duplicate,
  query: TaskQuery,
  timeoutMs: number,
): Promise<GatewayAnswer | undefined> {
  if (outcome.taskId !== undefined) {
    const found = await getTask(dispatcher, query, outcome.taskId, timeoutMs);
    const body = found.body as { result?: unknown } | undefined;
    const task = request.binding === 'jsonrpc' ? body?.result : body;
    if (found.status === 200 && task !== undefined) return answerWith(request, 'task', task, {});
    return undefined;
  }
  if (outcome.answer !== undefined) {
    return answerWith(request, 'message', outcome.answer.message, {});
  }
  const message =
    'this message was already processed without a task (its answer was not kept); send a new message';
  return request.binding === 'jsonrpc'
    ? jsonRpcError(request.id, JSON_RPC_ERRORS.invalidRequest, message)
    : restError(409, message);
}
