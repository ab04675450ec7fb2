/**
 * @module client/grpc
 * The `a2a-ratelimit/client/grpc` entry: `createRetryInterceptor`, the grpc-js client interceptor
 * that retries through the shared `RetryScheduler`. The only client file importing `@grpc/grpc-js`.
 */

import {
  status as grpcStatus,
  InterceptingCall,
  type InterceptingListener,
  type Interceptor,
  type InterceptorOptions,
  Metadata,
  type NextCall,
  type StatusObject,
} from '@grpc/grpc-js';
import { type A2AMethod, toA2AMethod } from '../core/a2a-methods.js';
import { extractRetryHint } from '../wire/extract-retry-hint.js';
import { readRateLimitHeaders } from '../wire/ratelimit-headers.js';
import { callerFingerprint } from './caller-fingerprint.js';
import { isRetryError, RETRY_ERROR_PROPERTY } from './retry-errors.js';
import {
  type AttemptOutcome,
  RetryScheduler,
  type RetrySchedulerOptions,
} from './retry-scheduler.js';

/**
 * Options of {@link createRetryInterceptor}: the scheduler's options (used when no `scheduler` is
 * given) plus how to tell agents and callers apart.
 *
 * @example
 * ```ts
 * const interceptor = createRetryInterceptor({ agent: 'research-agent:50051', budgetMs: 30_000 });
 * ```
 */
export interface RetryInterceptorOptions extends RetrySchedulerOptions {
  /** A scheduler to share pacing with other transports (its own options then apply). */
  readonly scheduler?: RetryScheduler;
  /**
   * The agent this interceptor talks to; pacing is per agent. grpc-js does not tell an interceptor
   * its channel's target, so use one interceptor per agent or name it here. @defaultValue 'grpc'
   */
  readonly agent?: string;
  /**
   * The caller identity the agent limits by. @defaultValue a fingerprint of the `authorization`
   * metadata (never stored in clear)
   */
  readonly callerKey?: (metadata: Metadata) => string;
}

/**
 * Creates the retrying client interceptor. Unary and server-streaming methods of the A2A service
 * are retried; client- and bidi-streaming calls and unknown methods pass through. Responses are
 * held back until the attempt that will be kept is known, so the caller sees exactly one call.
 *
 * @example
 * ```ts
 * import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
 * import { createRetryInterceptor } from 'a2a-ratelimit/client/grpc';
 *
 * const grpcTransport = new GrpcTransportFactory({
 *   grpcCallOptions: { interceptors: [createRetryInterceptor({ agent: 'agent.example:50051' })] },
 * });
 * ```
 */
export function createRetryInterceptor(options: RetryInterceptorOptions = {}): Interceptor {
  const scheduler = options.scheduler ?? new RetryScheduler(options);
  const agent = options.agent ?? 'grpc';
  const callerKey =
    options.callerKey ??
    ((metadata: Metadata) => {
      const value = metadata.get('authorization')[0];
      return callerFingerprint(typeof value === 'string' ? value : undefined);
    });
  return (callOptions, nextCall) => {
    const definition = callOptions.method_definition;
    const method = methodOf(definition.path);
    if (method === undefined || definition.requestStream) {
      return new InterceptingCall(nextCall(callOptions));
    }
    return new InterceptingCall(
      new RetryingCall({
        callOptions,
        nextCall,
        scheduler,
        agent,
        callerKey,
        method,
        streaming: definition.responseStream,
      }),
    );
  };
}

/** The next layer's call, as grpc-js types it. */
type CallLike = ReturnType<NextCall>;
type MessageContext = Parameters<CallLike['sendMessageWithContext']>[0];

/** What an attempt that ended without streaming anything to the caller left to deliver. */
interface HeldResult {
  readonly headers: Metadata | undefined;
  readonly hasMessage: boolean;
  readonly message: unknown;
  readonly status: StatusObject;
}

/** `committed`: a stream delivered its first message; the rest flows straight through. */
type AttemptResult = { readonly committed: true } | ({ readonly committed: false } & HeldResult);

interface RetryingCallDeps {
  readonly callOptions: InterceptorOptions;
  readonly nextCall: NextCall;
  readonly scheduler: RetryScheduler;
  readonly agent: string;
  readonly callerKey: (metadata: Metadata) => string;
  readonly method: A2AMethod;
  readonly streaming: boolean;
}

const noop = (): void => {};

/**
 * Sits where grpc-js expects the next call: buffers the single request, runs attempts (each a fresh
 * call from `nextCall`) through the scheduler, and replays to the caller only the attempt kept.
 */
class RetryingCall implements CallLike {
  private readonly deps: RetryingCallDeps;
  private readonly abort = new AbortController();
  private metadata = new Metadata();
  private listener: InterceptingListener = {
    onReceiveMetadata: noop,
    onReceiveMessage: noop,
    onReceiveStatus: noop,
  };
  private message: unknown;
  private context: MessageContext = {};
  private current: CallLike | undefined;
  private wantsRead = false;
  private lastHeld: HeldResult | undefined;
  private statusDelivered = false;
  private markEnded: () => void = noop;
  /** Settles when the caller got the final status (a stream's end). */
  private readonly ended = new Promise<void>((resolve) => {
    this.markEnded = resolve;
  });

  constructor(deps: RetryingCallDeps) {
    this.deps = deps;
  }

  start(metadata: Metadata, listener?: Partial<InterceptingListener>): void {
    this.metadata = metadata;
    this.listener = {
      onReceiveMetadata: listener?.onReceiveMetadata?.bind(listener) ?? noop,
      onReceiveMessage: listener?.onReceiveMessage?.bind(listener) ?? noop,
      onReceiveStatus: listener?.onReceiveStatus?.bind(listener) ?? noop,
    };
  }

  sendMessageWithContext(context: MessageContext, message: unknown): void {
    this.context = context;
    this.message = message;
  }

  sendMessage(message: unknown): void {
    this.sendMessageWithContext({}, message);
  }

  startRead(): void {
    this.wantsRead = true;
    this.current?.startRead();
  }

  halfClose(): void {
    void this.run();
  }

  cancelWithStatus(code: grpcStatus, details: string): void {
    this.abort.abort(new Error(details));
    if (this.current !== undefined) this.current.cancelWithStatus(code, details);
    else this.deliverStatus({ code, details, metadata: new Metadata() });
  }

  getPeer(): string {
    return this.current?.getPeer() ?? '';
  }

  getAuthContext(): ReturnType<CallLike['getAuthContext']> {
    return this.current?.getAuthContext() ?? null;
  }

  private async run(): Promise<void> {
    const { scheduler, callOptions } = this.deps;
    const deadline = callOptions.deadline;
    const deadlineMs =
      deadline === undefined
        ? undefined
        : scheduler.nowMs() + (new Date(deadline).getTime() - Date.now());
    try {
      const caller = this.deps.callerKey(this.metadata);
      const result = await scheduler.run(
        {
          agent: this.deps.agent,
          caller,
          method: this.deps.method,
          signal: this.abort.signal,
          deadlineMs,
        },
        (attemptIndex) => this.attempt(attemptIndex),
      );
      if (!result.committed) {
        const answered = result.hasMessage && result.status.code === grpcStatus.OK;
        if (this.deps.method === 'GetExtendedAgentCard' && answered) {
          scheduler.learnAgentCard(result.message, { agents: [this.deps.agent], caller });
        }
        this.deliver(result);
      }
    } catch (error) {
      this.fail(error);
    }
  }

  /** One attempt: a fresh call below us with the same metadata and the same request. */
  private attempt(attemptIndex: number): Promise<AttemptOutcome<AttemptResult>> {
    return new Promise((resolve) => {
      const call = this.deps.nextCall(this.deps.callOptions);
      this.current = call;
      let headers: Metadata | undefined;
      let committed = false;
      let hasMessage = false;
      let message: unknown;
      call.start(this.metadata.clone(), {
        onReceiveMetadata: (metadata) => {
          if (committed) this.listener.onReceiveMetadata(metadata);
          else headers = metadata;
        },
        onReceiveMessage: (received) => {
          if (committed) {
            this.wantsRead = false;
            this.listener.onReceiveMessage(received);
            return;
          }
          if (this.deps.streaming) {
            // First message of a stream: from here on it is the caller's, never retried.
            committed = true;
            if (headers !== undefined) this.listener.onReceiveMetadata(headers);
            this.wantsRead = false;
            this.listener.onReceiveMessage(received);
            resolve({
              ok: true,
              value: { committed: true },
              rateLimit: rateLimitOf(headers),
              busyUntil: this.ended,
            });
            return;
          }
          hasMessage = true;
          message = received;
        },
        onReceiveStatus: (status) => {
          if (committed) {
            this.deliverStatus(status);
            return;
          }
          const held: HeldResult = { headers, hasMessage, message, status };
          if (status.code === grpcStatus.OK) {
            resolve({
              ok: true,
              value: { committed: false, ...held },
              rateLimit: rateLimitOf(headers, status.metadata),
            });
            return;
          }
          this.lastHeld = held;
          const hint = extractRetryHint(
            {
              kind: 'grpc',
              code: status.code,
              message: status.details,
              metadata: status.metadata.toJSON(),
            },
            this.deps.scheduler.nowMs(),
          );
          resolve({ ok: false, hint, failure: { value: { committed: false, ...held } } });
        },
      });
      if (attemptIndex === 0) call.sendMessageWithContext(this.context, this.message);
      else call.sendMessage(this.message);
      call.halfClose();
      if (this.deps.streaming && this.wantsRead) call.startRead();
    });
  }

  private deliver(held: HeldResult, extra?: Record<string, unknown>): void {
    if (this.statusDelivered) return;
    if (held.headers !== undefined) this.listener.onReceiveMetadata(held.headers);
    if (held.hasMessage) this.listener.onReceiveMessage(held.message);
    this.deliverStatus(extra === undefined ? held.status : { ...held.status, ...extra });
  }

  /** Ends the call on a thrown error: a typed retry error rides on the last status. */
  private fail(error: unknown): void {
    if (isRetryError(error)) {
      const held = this.lastHeld ?? {
        headers: undefined,
        hasMessage: false,
        message: undefined,
        status: {
          code:
            error.hint.kind === 'overload' ? grpcStatus.UNAVAILABLE : grpcStatus.RESOURCE_EXHAUSTED,
          details: error.message,
          metadata: new Metadata(),
        },
      };
      this.deliver(held, { [RETRY_ERROR_PROPERTY]: error });
      return;
    }
    const details = error instanceof Error ? error.message : String(error);
    this.deliverStatus({
      code: this.abort.signal.aborted ? grpcStatus.CANCELLED : grpcStatus.INTERNAL,
      details,
      metadata: new Metadata(),
    });
  }

  private deliverStatus(status: StatusObject): void {
    if (this.statusDelivered) return;
    this.statusDelivered = true;
    this.markEnded();
    this.listener.onReceiveStatus(status);
  }
}

function methodOf(path: string): A2AMethod | undefined {
  const name = path.slice(path.lastIndexOf('/') + 1);
  return toA2AMethod(name) ?? LEGACY_GRPC_METHODS[name];
}

/** v0.3 gRPC rpc names that differ from the 1.0 ones. */
const LEGACY_GRPC_METHODS: Readonly<Record<string, A2AMethod>> = {
  TaskSubscription: 'SubscribeToTask',
  GetAgentCard: 'GetExtendedAgentCard',
  ListTaskPushNotificationConfig: 'ListTaskPushNotificationConfigs',
};

function rateLimitOf(
  ...sources: (Metadata | undefined)[]
): ReturnType<typeof readRateLimitHeaders> {
  const headers: Record<string, string> = {};
  for (const metadata of sources) {
    if (metadata === undefined) continue;
    for (const [name, value] of Object.entries(metadata.getMap())) {
      if (typeof value === 'string') headers[name] = value;
    }
  }
  return readRateLimitHeaders(headers);
}
