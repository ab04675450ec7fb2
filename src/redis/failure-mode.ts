/**
 * @module failure-mode
 * The failure-mode state machine of a `RedisStore`: who answers, the probes back to Redis, and the
 * failure policy's answer.
 */

import type { DecisionInput } from '../core/decision-state.js';
import type { Decision, Rejection } from '../core/rejection.js';
import type { MemoryStore } from '../store/memory-store.js';
import type { LivePolicySet } from './live-policy-set.js';
import {
  describeError,
  type FailurePolicy,
  type ModeChangeEvent,
  notify,
  type RedisStoreLogger,
  type RedisStoreMode,
} from './redis-store-options.js';
import { isStoreTimeoutError } from './store-timeout-error.js';

/**
 * The name of the pseudo-policy of fail-closed rejections.
 *
 * @example
 * ```ts
 * if (rejection.policy === STORE_UNAVAILABLE_POLICY) alert();
 * ```
 */
export const STORE_UNAVAILABLE_POLICY = 'store-unavailable';

function storeUnavailable(input: DecisionInput): Rejection {
  return {
    kind: 'overload',
    retryAfterMs: 1000,
    policy: STORE_UNAVAILABLE_POLICY,
    scope: 'agent',
    subject: 'agent',
    method: input.method,
    message:
      'Agent overloaded (store-unavailable: the rate-limit store cannot be reached); retry in 1 s',
  };
}

/**
 * What the state machine needs from its store.
 *
 * @internal
 */
export interface FailureModeOptions {
  readonly onError: FailurePolicy;
  readonly retryIntervalMs: number;
  readonly logger: RedisStoreLogger;
  /** One timed call that touches nothing; resolves when Redis answered. */
  readonly probe: () => Promise<unknown>;
  /** The store's policy set, whose insurance limiter answers `onError: 'insurance'`. */
  readonly policies: Pick<LivePolicySet, 'insurance'>;
}

/**
 * Decisions drive the mode: a failed or late decision switches to `onError`; then one decision
 * per `retryIntervalMs` probes Redis (and a background probe does while no decision comes), and
 * the first success switches back.
 *
 * @internal
 */
export class FailureMode {
  mode: RedisStoreMode = 'redis';
  degradedSinceMs: number | undefined;
  readonly listeners = new Set<(event: ModeChangeEvent) => void>();
  readonly counters = {
    redisDecisions: 0,
    fallbackDecisions: 0,
    errors: 0,
    timeouts: 0,
    degradations: 0,
    recoveries: 0,
  };
  private readonly options: FailureModeOptions;
  private nextProbeAtMs = 0;
  private probing = false;
  private closed = false;
  /** While degraded: probes Redis every `retryIntervalMs` even when no decision comes. */
  private probeTimer: ReturnType<typeof setInterval> | undefined;

  constructor(options: FailureModeOptions) {
    this.options = options;
  }

  /** The insurance limiter (`onError: 'insurance'` only; the policy set's current one). */
  get insurance(): MemoryStore | undefined {
    return this.options.policies.insurance;
  }

  /** A decision Redis made: counted; a probe switches back to Redis. */
  succeeded(decision: Decision, probe: boolean): Decision {
    this.counters.redisDecisions++;
    // Only a probe switches back: a reply to a call sent before the switch says nothing about
    // Redis now, and flapping back and forth would hand each switch a fresh insurance burst.
    if (probe) this.recovered();
    return decision;
  }

  /** A decision Redis did not make (`error`): the failure policy's answer to `input`. */
  failed(error: unknown, input: DecisionInput, probe: boolean): Decision {
    if (probe) this.probeFailed();
    this.noteFailure(error);
    return this.fallbackDecision(input);
  }

  /** Whether this call may probe Redis now (at most one probe per `retryIntervalMs`). */
  takeProbe(): boolean {
    const nowMs = performance.now();
    if (this.probing || nowMs < this.nextProbeAtMs) return false;
    this.probing = true;
    this.nextProbeAtMs = nowMs + this.options.retryIntervalMs;
    return true;
  }

  /** A probe ended without an answer from Redis. */
  probeFailed(): void {
    this.probing = false;
  }

  /** Counts a failed call (timeouts apart). */
  countError(error: unknown): void {
    if (isStoreTimeoutError(error)) this.counters.timeouts++;
    else this.counters.errors++;
  }

  /** A decision failed: counted, and the failure policy answers from now on. */
  noteFailure(error: unknown): void {
    this.countError(error);
    if (this.mode === 'redis') {
      this.nextProbeAtMs = performance.now() + this.options.retryIntervalMs;
      this.setMode(this.options.onError, describeError(error));
    }
  }

  /** A probe reached Redis: back on Redis. */
  recovered(): void {
    this.probing = false;
    if (this.mode !== 'redis') this.setMode('redis', 'recovered');
  }

  /** The failure policy's answer to `input`. */
  fallbackDecision(input: DecisionInput): Decision {
    this.counters.fallbackDecisions++;
    switch (this.options.onError) {
      case 'fail-open':
        return { admitted: true, limits: [], leases: [], claimedHold: false };
      case 'fail-closed':
        return { admitted: false, rejection: storeUnavailable(input), limits: [] };
      case 'insurance':
        try {
          return (this.options.policies.insurance as MemoryStore).decideSync(input);
        } catch {
          // Only a policy's own key function can throw here; answer as fail-closed would.
          return { admitted: false, rejection: storeUnavailable(input), limits: [] };
        }
    }
  }

  /** Stops the background probe and drops the listeners. */
  close(): void {
    this.closed = true;
    clearInterval(this.probeTimer);
    this.probeTimer = undefined;
    this.listeners.clear();
  }

  private setMode(to: RedisStoreMode, reason: string): void {
    const from = this.mode;
    if (from === to) return;
    this.mode = to;
    const atMs = Date.now();
    if (to === 'redis') {
      this.counters.recoveries++;
      this.degradedSinceMs = undefined;
      clearInterval(this.probeTimer);
      this.probeTimer = undefined;
    } else {
      this.counters.degradations++;
      this.degradedSinceMs = atMs;
      // Back to shared state as soon as Redis answers, not at the next decision that probes: a
      // replica left on its insurance limits after an outage would keep admitting its own share.
      if (this.probeTimer === undefined && !this.closed) {
        this.probeTimer = setInterval(this.backgroundProbe, this.options.retryIntervalMs);
        this.probeTimer.unref?.();
      }
    }
    const event: ModeChangeEvent = { from, to, reason, atMs };
    const { logger } = this.options;
    if (to === 'redis')
      notify(logger, 'info', 'Redis store recovered; decisions back on Redis', event);
    else notify(logger, 'warn', `Redis store unavailable; answering ${to}`, event);
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // Same for a failing listener.
      }
    }
  }

  private readonly backgroundProbe = (): void => {
    if (this.mode === 'redis' || !this.takeProbe()) return;
    this.options.probe().then(
      () => this.recovered(),
      (error: unknown) => {
        this.probing = false;
        this.countError(error);
      },
    );
  };
}
