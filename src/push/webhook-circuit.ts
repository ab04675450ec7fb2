/**
 * @module webhook-circuit
 * `WebhookCircuit`: the circuit breaker of one webhook origin, a pure state machine.
 */

/**
 * Circuit states.
 *
 * @example
 * ```ts
 * if (event.state === CIRCUIT_STATES.open) page('webhook down');
 * ```
 */
export const CIRCUIT_STATES = {
  closed: 'closed',
  open: 'open',
  halfOpen: 'half-open',
} as const;

/**
 * One of {@link CIRCUIT_STATES}.
 */
export type CircuitState = (typeof CIRCUIT_STATES)[keyof typeof CIRCUIT_STATES];

/**
 * How one POST ended, for the circuit: `answered` (any HTTP answer but a 5xx without a delay),
 * `failed` (connection, DNS or TLS error, timeout, or a 5xx without a delay), `neutral` (nothing
 * was learnt: refused by the policy before connecting, or aborted by `close()`).
 *
 * @example
 * ```ts
 * circuit.record('failed', clock.nowMs(), permit.probe);
 * ```
 */
export type CircuitOutcome = 'answered' | 'failed' | 'neutral';

/**
 * Options of `WebhookCircuit`. Durations in milliseconds.
 */
export interface CircuitOptions {
  /** Consecutive failed POSTs that open the circuit (integer ≥ 1). @defaultValue 20 */
  readonly failureThreshold?: number;
  /** How long an open circuit sends nothing before a probe, ms. @defaultValue 30_000 */
  readonly openMs?: number;
}

/**
 * A change of state.
 */
export interface CircuitTransition {
  readonly from: CircuitState;
  readonly to: CircuitState;
  /** Consecutive failures counted when it changed. */
  readonly failures: number;
  /** When an open circuit lets a probe through, ms (open only). */
  readonly reopenAtMs?: number;
}

/**
 * May a POST go now? `probe`: it is the one POST of a half-open circuit (record it as such).
 * Otherwise wait: until `untilMs` (open), or until the probe in flight ends (`untilMs` absent).
 *
 * @example
 * ```ts
 * const permit = circuit.permit(nowMs);
 * if (!permit.go) await waitUntil(permit.untilMs);
 * ```
 */
export type CircuitPermit =
  | { readonly go: true; readonly probe: boolean; readonly transition?: CircuitTransition }
  | { readonly go: false; readonly untilMs?: number };

/**
 * The circuit of one webhook origin; time is passed in. Closed, it counts consecutive failed
 * POSTs; at `failureThreshold` it opens for `openMs`, during which no POST is sent; then one probe
 * POST is let through (half-open): an answer closes it, a failure opens it again for `openMs`. Any
 * answer from the webhook (2xx, a 429 with its delay, a 404) proves it is up and resets the count;
 * POSTs refused by the policy before connecting do not count at all.
 *
 * @example
 * ```ts
 * const circuit = new WebhookCircuit({ failureThreshold: 20, openMs: 30_000 });
 * const permit = circuit.permit(now);
 * if (permit.go) circuit.record(await post(), clock.nowMs(), permit.probe);
 * ```
 */
export class WebhookCircuit {
  readonly failureThreshold: number;
  readonly openMs: number;
  private current: CircuitState = CIRCUIT_STATES.closed;
  private failures = 0;
  private reopenAt = 0;
  private probing = false;

  constructor(options: CircuitOptions = {}) {
    const threshold = options.failureThreshold ?? 20;
    const openMs = options.openMs ?? 30_000;
    if (!Number.isInteger(threshold) || threshold < 1) {
      throw new RangeError(`circuit.failureThreshold must be an integer ≥ 1, got ${threshold}`);
    }
    if (!(openMs > 0) || !Number.isFinite(openMs)) {
      throw new RangeError(`circuit.openMs must be a positive number of ms, got ${openMs}`);
    }
    this.failureThreshold = threshold;
    this.openMs = openMs;
  }

  /** The state as of the last call (an open circuit turns half-open in {@link permit}). */
  get state(): CircuitState {
    return this.current;
  }

  /** Consecutive failures counted. */
  get consecutiveFailures(): number {
    return this.failures;
  }

  /** When an open circuit lets its probe through, ms; 0 when not open. */
  get reopenAtMs(): number {
    return this.current === CIRCUIT_STATES.open ? this.reopenAt : 0;
  }

  /** Nothing to remember: closed with no failure counted (the entry can be forgotten). */
  isIdle(): boolean {
    return this.current === CIRCUIT_STATES.closed && this.failures === 0;
  }

  /**
   * Whether a POST could go now, without taking the probe. When not: wait until `untilMs`
   * (open), or — `untilMs` absent — until the probe in flight ends (half-open).
   */
  peek(nowMs: number): { readonly pass: boolean; readonly untilMs?: number } {
    if (this.current === CIRCUIT_STATES.open && nowMs < this.reopenAt) {
      return { pass: false, untilMs: this.reopenAt };
    }
    if (this.current === CIRCUIT_STATES.halfOpen && this.probing) return { pass: false };
    return { pass: true };
  }

  /** Asks to send one POST now (see {@link CircuitPermit}). */
  permit(nowMs: number): CircuitPermit {
    switch (this.current) {
      case CIRCUIT_STATES.closed:
        return { go: true, probe: false };
      case CIRCUIT_STATES.open: {
        if (nowMs < this.reopenAt) return { go: false, untilMs: this.reopenAt };
        const transition = this.move(CIRCUIT_STATES.halfOpen);
        this.probing = true;
        return { go: true, probe: true, transition };
      }
      default:
        if (this.probing) return { go: false };
        this.probing = true;
        return { go: true, probe: true };
    }
  }

  /** Records how a permitted POST ended; returns the transition it caused, if any. */
  record(outcome: CircuitOutcome, nowMs: number, probe: boolean): CircuitTransition | undefined {
    if (probe) this.probing = false;
    if (outcome === 'neutral') return undefined;
    if (outcome === 'answered') {
      this.failures = 0;
      return this.current === CIRCUIT_STATES.closed ? undefined : this.move(CIRCUIT_STATES.closed);
    }
    if (this.current === CIRCUIT_STATES.closed) {
      this.failures++;
      if (this.failures < this.failureThreshold) return undefined;
      this.reopenAt = nowMs + this.openMs;
      return this.move(CIRCUIT_STATES.open);
    }
    if (this.current === CIRCUIT_STATES.halfOpen && probe) {
      this.failures++;
      this.reopenAt = nowMs + this.openMs;
      return this.move(CIRCUIT_STATES.open);
    }
    return undefined; // a POST sent before it opened failed too: already open
  }

  private move(to: CircuitState): CircuitTransition {
    const from = this.current;
    this.current = to;
    if (to === CIRCUIT_STATES.closed) this.probing = false;
    return {
      from,
      to,
      failures: this.failures,
      ...(to === CIRCUIT_STATES.open ? { reopenAtMs: this.reopenAt } : {}),
    };
  }
}
