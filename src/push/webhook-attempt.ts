/**
 * @module webhook-attempt
 * One POST of one notification, as the retry scheduler runs it.
 */

import type { AttemptOutcome } from '../client/retry-scheduler.js';
import { BrandedError } from '../core/branded-error.js';
import type { Clock } from '../core/clock.js';
import { extractRetryHint } from '../wire/extract-retry-hint.js';
import { readRateLimitHeaders } from '../wire/ratelimit-headers.js';
import type { RetryHint } from '../wire/retry-hint.js';
import type { CircuitBoard } from './circuit-board.js';
import { isWebhookRefusedError, type WebhookTransport } from './webhook-transport.js';

/**
 * Stable `code` strings of a webhook attempt's errors.
 *
 * @example
 * ```ts
 * if (e.code === WEBHOOK_ATTEMPT_ERROR_CODES.circuitPause) continue;
 * ```
 */
export const WEBHOOK_ATTEMPT_ERROR_CODES = {
  circuitPause: 'ERR_A2A_WEBHOOK_CIRCUIT_PAUSE',
} as const;

/**
 * Thrown out of an attempt when the webhook's circuit does not let it go now: the delivery waits
 * for the circuit and runs again (the scheduler passes it through unchanged).
 *
 * @example
 * ```ts
 * if (error instanceof CircuitPause) continue; // wait for the circuit, then try again
 * ```
 */
export class CircuitPause extends BrandedError<typeof WEBHOOK_ATTEMPT_ERROR_CODES.circuitPause> {
  declare readonly name: 'CircuitPause';
  /** Brand set by the base class. */
  declare readonly isCircuitPause: true;

  constructor() {
    super('CircuitPause', WEBHOOK_ATTEMPT_ERROR_CODES.circuitPause, 'webhook circuit not closed');
  }
}

/**
 * What the sender gives every attempt.
 */
export interface AttemptContext {
  readonly transport: WebhookTransport;
  readonly board: CircuitBoard;
  readonly clock: Clock;
  readonly timeoutSignal: (ms: number) => AbortSignal;
  readonly postTimeoutMs: number;
  /** Aborted when the sender closes. */
  readonly closing: AbortSignal;
  /** Called for each POST sent; `resend` when it repeats an earlier one. */
  onPost(resend: boolean): void;
}

/**
 * The POST of one notification.
 */
export interface WebhookPostSpec {
  readonly url: string;
  /** The circuit it belongs to. */
  readonly origin: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/**
 * What the attempts of one notification learnt, across scheduler runs.
 */
export interface AttemptTrace {
  attempts: number;
  lastStatus?: number | undefined;
  lastHint?: RetryHint | undefined;
  lastError?: unknown;
}

/** The status a POST came back with. */
export interface PostResult {
  readonly status: number;
}

/**
 * The attempt function for `RetryScheduler.run`: one POST of `post` per call, recorded in
 * `trace` and in the circuit. The circuit's permit comes first (a circuit closed for now throws
 * {@link CircuitPause}); the POST runs under the per-POST timeout and the sender's closing signal,
 * and what came back becomes the scheduler's outcome (429/503 delays, 5xx and network failures to
 * back off from, final answers) and the circuit's (answered, failed, neutral).
 *
 * @example
 * ```ts
 * const result = await scheduler.run(call, webhookAttempt(ctx, post, trace));
 * ```
 */
export function webhookAttempt(
  ctx: AttemptContext,
  post: WebhookPostSpec,
  trace: AttemptTrace,
): () => Promise<AttemptOutcome<PostResult>> {
  const { closing, board, clock } = ctx;
  return async () => {
    const permit = board.permit(post.origin);
    if (!permit.go) throw new CircuitPause();
    const sent = (): void => {
      ctx.onPost(trace.attempts > 0);
      trace.attempts++;
    };
    const timeout = ctx.timeoutSignal(ctx.postTimeoutMs);
    // One controller per POST (not AbortSignal.any, whose dependants the long-lived closing
    // signal would keep until it fires).
    const controller = new AbortController();
    const onAbort = (): void => {
      controller.abort(closing.aborted ? closing.reason : timeout.reason);
    };
    closing.addEventListener('abort', onAbort, { once: true });
    timeout.addEventListener('abort', onAbort, { once: true });
    if (closing.aborted || timeout.aborted) onAbort();
    try {
      const answer = await ctx.transport.post({
        url: post.url,
        headers: post.headers,
        body: post.body,
        signal: controller.signal,
      });
      sent();
      trace.lastStatus = answer.status;
      const nowMs = clock.nowMs();
      if (answer.status >= 200 && answer.status < 300) {
        board.record(post.origin, 'answered', permit.probe);
        return {
          ok: true,
          value: { status: answer.status },
          rateLimit: readRateLimitHeaders(answer.headers, nowMs),
        };
      }
      const hint = extractRetryHint(
        { kind: 'http', status: answer.status, headers: answer.headers, body: answer.body },
        nowMs,
      );
      trace.lastHint = hint;
      // A 5xx that names no delay is a failure; any other answer shows the webhook is up.
      const failed = answer.status >= 500 && hint.delayMs === undefined;
      board.record(
        post.origin,
        failed ? 'failed' : 'answered',
        permit.probe,
        failed ? `HTTP ${answer.status}` : undefined,
      );
      return { ok: false, hint, failure: { value: { status: answer.status } } };
    } catch (error) {
      trace.lastStatus = undefined;
      trace.lastError = error;
      if (closing.aborted) {
        sent();
        board.record(post.origin, 'neutral', permit.probe);
        throw error;
      }
      if (isWebhookRefusedError(error)) {
        // Refused before connecting: nothing was sent.
        board.record(post.origin, 'neutral', permit.probe);
        trace.lastHint = { kind: 'not-retryable', message: error.message };
        return { ok: false, hint: trace.lastHint, failure: { error } };
      }
      // Connection, DNS and TLS errors and timeouts: no answer, back off and count a failure.
      sent();
      const message = timeout.aborted
        ? `webhook did not answer within ${ctx.postTimeoutMs} ms`
        : describeError(error);
      trace.lastHint = { kind: 'transient-unknown', message };
      board.record(post.origin, 'failed', permit.probe, message);
      return { ok: false, hint: trace.lastHint, failure: { error } };
    } finally {
      closing.removeEventListener('abort', onAbort);
      timeout.removeEventListener('abort', onAbort);
    }
  };
}

function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' && !error.message.includes(code)
      ? `${code}: ${error.message}`
      : error.message;
  }
  return String(error);
}
