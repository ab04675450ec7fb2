/**
 * @module mediation
 * The backstop that makes "nothing runs undecided" hold by construction: a request handler that
 * refuses every operation the limiter did not admit.
 */

import { randomBytes } from 'node:crypto';
import {
  type A2ARequestHandler,
  defaultServerCallContextBuilder,
  type ServerCallContext,
  type ServerCallContextBuilder,
} from '@a2a-js/sdk/server';
import type { A2AMethod } from '../core/a2a-methods.js';

/**
 * gRPC metadata key that carries an admission from the interceptor to the SDK's context builder.
 * The interceptor removes what a caller sent under it on every call.
 */
export const ADMISSION_HEADER = 'x-a2a-ratelimit-admission';

/** Unguessable per process: a mark a caller could send is worthless even where not stripped. */
const SECRET = randomBytes(16).toString('hex');

/** Express: admitted requests by their `req.headers` object. */
const admittedHeaders = new WeakMap<object, A2AMethod>();
/** Call contexts built for admitted requests, and the operation each was admitted for. */
const admittedContexts = new WeakMap<ServerCallContext, A2AMethod>();

/**
 * Marks an Express request as admitted for `method` (the object is the request's `req.headers`).
 * A later mark replaces it (a duplicate message admitted as its resubscription).
 */
export function markAdmitted(headers: object, method: A2AMethod): void {
  admittedHeaders.set(headers, method);
}

/**
 * The metadata value that marks a gRPC call as admitted for `method`.
 */
export function admissionMark(method: A2AMethod): string {
  return `${SECRET}:${method}`;
}

function methodOfMark(value: unknown): A2AMethod | undefined {
  if (typeof value !== 'string' || !value.startsWith(SECRET)) return undefined;
  return value.slice(SECRET.length + 1) as A2AMethod;
}

/**
 * Counts of requests the backstop refused, for `stats()`-style reporting and tests.
 *
 * @example
 * ```ts
 * mediationStats().undecided; // 0 while every route is classified
 * ```
 */
export function mediationStats(): { readonly undecided: number } {
  return { undecided };
}
let undecided = 0;
/** The last minute a refusal was logged, so a flood of them logs one line a minute. */
let loggedAtMinute = -1;

/**
 * Wraps the context builder the SDK is given (yours, or the SDK's default): the context of an
 * admitted request carries its admission.
 *
 * @example
 * ```ts
 * jsonRpcHandler({ requestHandler: guardRequestHandler(handler), contextBuilder: guardContextBuilder(), userBuilder });
 * ```
 */
export function guardContextBuilder(inner?: ServerCallContextBuilder): ServerCallContextBuilder {
  const build = inner ?? defaultServerCallContextBuilder;
  return (options) => {
    const headers = options.headers;
    let method = admittedHeaders.get(headers);
    if (method === undefined && headers[ADMISSION_HEADER] !== undefined) {
      method = methodOfMark(headers[ADMISSION_HEADER]);
      // The mark (and its secret) stops here: the agent's context never sees it.
      delete headers[ADMISSION_HEADER];
    }
    const context = build(options);
    if (method !== undefined) admittedContexts.set(context, method);
    return context;
  };
}

/** The error an undecided operation fails with (the SDK answers it as an internal error). */
function undecidedError(method: A2AMethod, admittedAs: A2AMethod | undefined): Error {
  undecided++;
  const minute = Math.floor(performance.now() / 60_000);
  const detail =
    admittedAs === undefined
      ? 'no admission decision was made for it'
      : `it was admitted as ${admittedAs}`;
  if (minute !== loggedAtMinute) {
    loggedAtMinute = minute;
    console.error(
      `a2a-ratelimit: refused ${method}: ${detail} (is the admission middleware / interceptor in front of this SDK handler?)`,
    );
  }
  return new Error(
    `${method} refused: the request reached the agent without a rate-limit decision`,
  );
}

function check(context: ServerCallContext, method: A2AMethod): void {
  const admittedAs = admittedContexts.get(context);
  if (admittedAs !== method) throw undecidedError(method, admittedAs);
}

/**
 * Wraps the SDK request handler given to the SDK's routers / `grpcService`: each operation runs
 * only when its call context carries an admission for that operation (see
 * {@link guardContextBuilder}, which must build the contexts). Streaming operations refuse
 * synchronously, before a stream exists.
 *
 * @example
 * ```ts
 * const guarded = guardRequestHandler(requestHandler);
 * app.use('/a2a/rest', restAdmission(limiter, { requestHandler, userBuilder }), restHandler({ requestHandler: guarded, contextBuilder: guardContextBuilder(), userBuilder }));
 * ```
 */
export function guardRequestHandler(inner: A2ARequestHandler): A2ARequestHandler {
  return {
    getAgentCard: () => inner.getAgentCard(),
    getAuthenticatedExtendedAgentCard(params, context) {
      check(context, 'GetExtendedAgentCard');
      return inner.getAuthenticatedExtendedAgentCard(params, context);
    },
    sendMessage(params, context) {
      check(context, 'SendMessage');
      return inner.sendMessage(params, context);
    },
    sendMessageStream(params, context) {
      check(context, 'SendStreamingMessage');
      return inner.sendMessageStream(params, context);
    },
    getTask(params, context) {
      check(context, 'GetTask');
      return inner.getTask(params, context);
    },
    cancelTask(params, context) {
      check(context, 'CancelTask');
      return inner.cancelTask(params, context);
    },
    createTaskPushNotificationConfig(params, context) {
      check(context, 'CreateTaskPushNotificationConfig');
      return inner.createTaskPushNotificationConfig(params, context);
    },
    getTaskPushNotificationConfig(params, context) {
      check(context, 'GetTaskPushNotificationConfig');
      return inner.getTaskPushNotificationConfig(params, context);
    },
    listTaskPushNotificationConfigs(params, context) {
      check(context, 'ListTaskPushNotificationConfigs');
      return inner.listTaskPushNotificationConfigs(params, context);
    },
    deleteTaskPushNotificationConfig(params, context) {
      check(context, 'DeleteTaskPushNotificationConfig');
      return inner.deleteTaskPushNotificationConfig(params, context);
    },
    resubscribe(params, context) {
      check(context, 'SubscribeToTask');
      return inner.resubscribe(params, context);
    },
    listTasks(params, context) {
      check(context, 'ListTasks');
      return inner.listTasks(params, context);
    },
  };
}
