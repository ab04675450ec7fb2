/**
 * @module server/grpc
 * A grpc-js server interceptor for `lf.a2a.v1.A2AService` (and the v0.3 `a2a.v1.A2AService`):
 * the request message is already deserialized in `onReceiveMessage`, so messageId and tenant are
 * read there, the limiter decides, and a rejection goes out as a Trailers-Only status
 * (RESOURCE_EXHAUSTED / UNAVAILABLE with binary `grpc-status-details-bin`,
 * `grpc-retry-pushback-ms`, `retry-after`) before the SDK's handler ever runs — for unary and
 * server-streaming methods alike. The only file importing `@grpc/grpc-js`.
 */

import {
  type A2ARequestHandler,
  defaultServerCallContextBuilder,
  UnauthenticatedUser,
  type User,
} from '@a2a-js/sdk/server';
import { grpcService, type UserBuilder } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import { type A2AMethod, isA2AMethod } from '../core/a2a-methods.js';
import {
  type AddressKeyOptions,
  anonymousKeyOf,
  authenticatedCallerKey,
  createAddressKey,
} from './caller-key.js';
import type { AdmissionOutcome, AdmissionTicket, Limiter } from './limiter.js';
import { TICKET_HEADER } from './limiter.js';
import {
  ADMISSION_HEADER,
  admissionMark,
  guardContextBuilder,
  guardRequestHandler,
} from './mediation.js';

export { guardContextBuilder, guardRequestHandler, mediationStats } from './mediation.js';

import { TERMINAL_TASK_STATES } from './task-lease-tracker.js';

/**
 * Who the caller is, from a gRPC call's metadata.
 *
 * @example
 * ```ts
 * const identify: GrpcIdentify = (metadata) => String(metadata.get('x-caller')[0] ?? 'anonymous');
 * ```
 */
export type GrpcIdentify = (
  metadata: grpc.Metadata,
  call: grpc.ServerInterceptingCallInterface,
) => string | Promise<string>;

/**
 * Options of {@link grpcAdmissionInterceptor}.
 *
 * @example
 * ```ts
 * const options: GrpcAdmissionOptions = { userBuilder, requestHandler };
 * ```
 */
export interface GrpcAdmissionOptions {
  /**
   * The same `UserBuilder` the agent gives the SDK's `grpcService`. It is called with a call-like
   * object `{ metadata, request, getPeer() }` (the interceptor runs before the SDK's call object
   * exists). Default identity: `User.userName` of an authenticated user.
   */
  readonly userBuilder?: UserBuilder;
  /** Replaces the default identity entirely. */
  readonly identify?: GrpcIdentify;
  /**
   * Key of unauthenticated callers; default `addr:<remote address>`, IPv6 by prefix (never a
   * metadata value). A key that does not begin with `addr:` gets it.
   */
  readonly unauthenticatedKey?: (call: grpc.ServerInterceptingCallInterface) => string;
  /** IPv6 callers keyed by address share a key per prefix of this many bits (1–128); default 64. */
  readonly ipv6PrefixLength?: number;
  /** The skill a request targets, for skill-scoped policies. */
  readonly skill?: (request: unknown, metadata: grpc.Metadata) => string | undefined;
  /** The SDK request handler, to answer a duplicate message with its task (required while dedup is on). */
  readonly requestHandler?: A2ARequestHandler;
}

const SERVICES: ReadonlySet<string> = new Set(['lf.a2a.v1.A2AService', 'a2a.v1.A2AService']);
const LEGACY_RPC: Readonly<Record<string, A2AMethod>> = {
  TaskSubscription: 'SubscribeToTask',
  ListTaskPushNotificationConfig: 'ListTaskPushNotificationConfigs',
  GetAgentCard: 'GetExtendedAgentCard',
};

/**
 * The A2A method of a gRPC method path, or undefined for other services.
 *
 * @example
 * ```ts
 * grpcMethodOf('/lf.a2a.v1.A2AService/SendMessage'); // 'SendMessage'
 * ```
 */
export function grpcMethodOf(path: string): A2AMethod | undefined {
  const match = /^\/([^/]+)\/([^/]+)$/.exec(path);
  if (match === null || !SERVICES.has(match[1] as string)) return undefined;
  const name = match[2] as string;
  return isA2AMethod(name) ? name : LEGACY_RPC[name];
}

function remoteKeyOf(
  options: AddressKeyOptions,
): (call: grpc.ServerInterceptingCallInterface) => string {
  const keyOf = createAddressKey(options);
  return (call) => {
    const address = call.getConnectionInfo().remoteAddress;
    if (address) return keyOf(address);
    const peer = call.getPeer().replace(/^ipv[46]:/, '');
    return keyOf(peer.replace(/:\d+$/, '').replace(/^\[|\]$/g, ''));
  };
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function toMetadata(values: Readonly<Record<string, string | Uint8Array>>): grpc.Metadata {
  const md = new grpc.Metadata();
  for (const [key, value] of Object.entries(values)) {
    md.set(key, typeof value === 'string' ? value : Buffer.from(value));
  }
  return md;
}

/** Calls of other services pass through, less any admission mark a caller sent. */
const STRIP_ADMISSION: ConstructorParameters<typeof grpc.ServerInterceptingCall>[1] = {
  start(next) {
    next({
      onReceiveMetadata(md, nextMetadata) {
        md.remove(ADMISSION_HEADER);
        nextMetadata(md);
      },
    });
  },
};

/**
 * Creates the admission interceptor. Pass it to `new grpc.Server({ interceptors: [...] })`; calls
 * to other services pass through untouched.
 *
 * @example
 * ```ts
 * const server = new grpc.Server({ interceptors: [grpcAdmissionInterceptor(limiter, { userBuilder, requestHandler })] });
 * server.addService(A2AService, rateLimitedGrpcService({ requestHandler, userBuilder }));
 * ```
 */
export function grpcAdmissionInterceptor(
  limiter: Limiter,
  options: GrpcAdmissionOptions = {},
): grpc.ServerInterceptor {
  if (limiter.dedupMethods.size > 0 && options.requestHandler === undefined) {
    throw new TypeError(
      'a2a-ratelimit: deduplication is on, so the gRPC interceptor needs `requestHandler` (the SDK handler) to answer a duplicate with its task; or create the limiter with `dedup: false`',
    );
  }
  const fallback =
    options.unauthenticatedKey === undefined
      ? remoteKeyOf(options)
      : anonymousKeyOf(options.unauthenticatedKey);
  const builder = options.userBuilder;
  const identify: GrpcIdentify =
    options.identify ??
    (builder === undefined
      ? (_md, call) => fallback(call)
      : async (metadata, call) => {
          const shim = { metadata, getPeer: () => call.getPeer() };
          const user: User = await builder(shim as unknown as Parameters<UserBuilder>[0]);
          return user.isAuthenticated && user.userName
            ? authenticatedCallerKey(user.userName)
            : fallback(call);
        });

  return (descriptor, call) => {
    const method = grpcMethodOf(descriptor.path);
    if (method === undefined) return new grpc.ServerInterceptingCall(call, STRIP_ADMISSION);
    let metadata: grpc.Metadata | undefined;
    let ticket: AdmissionTicket | undefined;
    let done = false;
    let abort: (() => void) | undefined;
    const finish = (): void => {
      done = true;
      ticket?.end();
      abort?.();
    };
    const fail = (code: grpc.status, details: string): void => {
      if (done) return;
      finish();
      call.sendStatus({ code, details, metadata: new grpc.Metadata() });
    };
    /** Request messages received: every A2A rpc takes exactly one. */
    let messages = 0;

    const reject = (outcome: Extract<AdmissionOutcome, { status: 'rejected' }>): void => {
      const encoded = limiter.encodeGrpc(outcome.rejection, outcome.limits);
      done = true;
      call.sendStatus({
        code: encoded.code,
        details: encoded.message,
        metadata: toMetadata(encoded.trailers),
      });
    };

    const answerDuplicate = async (
      request: { tenant?: unknown },
      caller: string,
      taskId: string | undefined,
      messageId: string | undefined,
    ): Promise<void> => {
      if (taskId === undefined) {
        fail(
          grpc.status.ALREADY_EXISTS,
          `Message ${messageId ?? ''} was already received and processed without creating a task; it is not run again`,
        );
        return;
      }
      const handler = options.requestHandler as A2ARequestHandler;
      const tenant = text(request.tenant);
      const user = builder
        ? await builder({
            metadata,
            getPeer: () => call.getPeer(),
          } as unknown as Parameters<UserBuilder>[0])
        : new UnauthenticatedUser();
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(metadata?.getMap() ?? {})) headers[k] = v.toString();
      const requestedVersion = headers['a2a-version'];
      const context = defaultServerCallContextBuilder({
        extensions: undefined,
        user,
        headers,
        ...(requestedVersion === undefined ? {} : { requestedVersion }),
        ...(tenant === undefined ? {} : { tenant }),
      });
      let task: Awaited<ReturnType<A2ARequestHandler['getTask']>>;
      try {
        task = await handler.getTask({ id: taskId, tenant: tenant ?? '' }, context);
      } catch (error) {
        fail(grpc.status.NOT_FOUND, error instanceof Error ? error.message : String(error));
        return;
      }
      const send = (message: unknown): Promise<void> =>
        new Promise((resolve) => call.sendMessage(message, resolve));
      if (method === 'SendMessage') {
        await send({ payload: { $case: 'task', value: task } });
      } else if (TERMINAL_TASK_STATES.has(task.status?.state ?? 0)) {
        await send({ payload: { $case: 'task', value: task } });
      } else {
        // The resubscription is a stream like any other: decided before it opens.
        const outcome = await limiter.admitResubscription({
          caller,
          method,
          binding: 'grpc',
          tenant,
        });
        if (outcome.status !== 'admitted') {
          if (outcome.status === 'rejected') reject(outcome);
          else fail(grpc.status.INTERNAL, 'a resubscription cannot be a duplicate');
          return;
        }
        ticket = outcome.ticket;
        if (done) {
          ticket.end();
          return;
        }
        const stream = handler.resubscribe({ id: taskId, tenant: tenant ?? '' }, context);
        const iterator = stream[Symbol.asyncIterator]();
        abort = () => void iterator.return?.(undefined);
        try {
          for (;;) {
            const next = await iterator.next();
            if (next.done || done) break;
            await send(next.value);
          }
        } catch (error) {
          fail(grpc.status.INTERNAL, error instanceof Error ? error.message : String(error));
          return;
        }
      }
      if (!done) {
        done = true;
        call.sendStatus({ code: grpc.status.OK, details: 'OK', metadata: new grpc.Metadata() });
      }
    };

    const listener: grpc.ServerListener = {
      onReceiveMetadata(md, next) {
        md.remove(TICKET_HEADER);
        md.remove(ADMISSION_HEADER);
        metadata = md;
        next(md);
      },
      onReceiveMessage(message, next) {
        if (++messages > 1) {
          // Decided once per call: a second message is refused, never decided (or run) again.
          fail(grpc.status.UNIMPLEMENTED, 'Received a second request message');
          return;
        }
        const request = (message ?? {}) as {
          tenant?: unknown;
          message?: { messageId?: unknown };
          request?: { messageId?: unknown };
        };
        const md = metadata ?? new grpc.Metadata();
        const messageId =
          method === 'SendMessage' || method === 'SendStreamingMessage'
            ? text(request.message?.messageId ?? request.request?.messageId)
            : undefined;
        const apply = (caller: string, outcome: AdmissionOutcome): void => {
          if (done) {
            if (outcome.status === 'admitted') outcome.ticket.end();
            return;
          }
          if (outcome.status === 'admitted') {
            ticket = outcome.ticket;
            // The SDK side looks a ticket up only when it holds something.
            if (ticket.needsEnd) md.set(TICKET_HEADER, ticket.id);
            md.set(ADMISSION_HEADER, admissionMark(method));
            next(message);
            return;
          }
          if (outcome.status === 'duplicate') {
            answerDuplicate(request, caller, outcome.taskId, messageId).catch((error: unknown) =>
              fail(grpc.status.INTERNAL, error instanceof Error ? error.message : String(error)),
            );
            return;
          }
          reject(outcome);
        };
        /** `step`, with what it throws (a `skill` function, the limiter) failing the call. */
        const guarded =
          <T>(step: (value: T) => void) =>
          (value: T): void => {
            try {
              step(value);
            } catch (error) {
              fail(grpc.status.INTERNAL, `rate limiter failed: ${String(error)}`);
            }
          };
        const withCaller = (caller: string): void => {
          const outcome = limiter.admit({
            caller,
            method,
            binding: 'grpc',
            tenant: text(request.tenant),
            messageId,
            skill: options.skill?.(message, md),
          });
          if (outcome instanceof Promise) {
            outcome.then(
              guarded((o: AdmissionOutcome) => apply(caller, o)),
              (error: unknown) =>
                fail(grpc.status.INTERNAL, `rate limiter failed: ${String(error)}`),
            );
          } else apply(caller, outcome);
        };
        let caller: string | Promise<string>;
        try {
          caller = identify(md, call);
        } catch (error) {
          fail(grpc.status.UNAUTHENTICATED, `identity failed: ${String(error)}`);
          return;
        }
        const decide = guarded(withCaller);
        if (typeof caller === 'string') decide(caller);
        else {
          caller.then(decide, (error: unknown) =>
            fail(grpc.status.UNAUTHENTICATED, `identity failed: ${String(error)}`),
          );
        }
      },
      onCancel() {
        finish();
      },
    };

    return new grpc.ServerInterceptingCall(call, {
      start(next) {
        next(listener);
      },
      sendMetadata(md, next) {
        if (ticket !== undefined) {
          for (const [name, value] of Object.entries(ticket.headers)) md.set(name, value);
        }
        next(md);
      },
      sendStatus(status, next) {
        finish();
        next(status);
      },
    });
  };
}

/**
 * The SDK's `grpcService` for an agent whose server has {@link grpcAdmissionInterceptor}: the same
 * options, with the request handler and context builder wrapped so that an operation runs only
 * for a call the interceptor admitted for it (see `guardRequestHandler`). Without the interceptor
 * in front, every operation fails with INTERNAL.
 *
 * @example
 * ```ts
 * server.addService(A2AService, rateLimitedGrpcService({ requestHandler, userBuilder }));
 * ```
 */
export function rateLimitedGrpcService(
  options: Parameters<typeof grpcService>[0],
): ReturnType<typeof grpcService> {
  return grpcService({
    ...options,
    requestHandler: guardRequestHandler(options.requestHandler),
    contextBuilder: guardContextBuilder(options.contextBuilder),
  });
}
