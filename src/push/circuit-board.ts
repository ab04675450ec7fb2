/**
 * @module circuit-board
 * `CircuitBoard`: a sender's circuits, one `WebhookCircuit` per webhook origin, and the waiting
 * they cause.
 */

import type { Sleep } from '../client/sleep.js';
import type { Clock } from '../core/clock.js';
import {
  type CircuitOptions,
  type CircuitOutcome,
  type CircuitPermit,
  type CircuitState,
  WebhookCircuit,
} from './webhook-circuit.js';

/**
 * A circuit changed state, as reported to `onCircuitChange`.
 *
 * @example
 * ```ts
 * const onCircuitChange = (e: PushCircuitEvent) => e.to === 'open' && alert(`${e.origin} down`);
 * ```
 */
export interface PushCircuitEvent {
  /** The webhook origin (`https://hooks.example.com:8443`). */
  readonly origin: string;
  readonly from: CircuitState;
  readonly to: CircuitState;
  /** Consecutive failed POSTs counted. */
  readonly failures: number;
  /** Open: when a probe will be let through, ms on the sender's clock. */
  readonly reopenAtMs?: number;
  /** Open: the last failure (an error, or `HTTP 502`). */
  readonly lastFailure?: string;
}

/**
 * Options of {@link CircuitBoard}.
 *
 * @example
 * ```ts
 * const board = new CircuitBoard({ circuit: { failureThreshold: 20, openMs: 30_000 }, clock, sleep, onChange: log });
 * ```
 */
export interface CircuitBoardOptions {
  readonly circuit?: CircuitOptions;
  readonly clock: Clock;
  readonly sleep: Sleep;
  readonly onChange: (event: PushCircuitEvent) => void;
}

/**
 * The circuits of one sender, one per webhook origin. A delivery asks {@link CircuitBoard.waitFor}
 * before it runs (it waits while the circuit is open, or gives up when it stays open past the
 * deadline) and takes a {@link CircuitBoard.permit} before each POST; every end of a POST is
 * recorded. Each state change is reported once (metrics, log). Idle circuits are forgotten, so
 * memory follows the origins that are failing, not every origin ever seen.
 *
 * @example
 * ```ts
 * if (!(await board.waitFor(origin, deadlineMs, signal))) drop('circuit-open');
 * const permit = board.permit(origin);
 * ```
 */
export class CircuitBoard {
  private readonly circuits = new Map<string, WebhookCircuit>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly options: CircuitBoardOptions;
  private openings = 0;

  constructor(options: CircuitBoardOptions) {
    // Validate the options once, at construction.
    new WebhookCircuit(options.circuit);
    this.options = options;
  }

  /** Circuits not closed now, and how many times one opened. */
  stats(): { readonly open: number; readonly openings: number } {
    let open = 0;
    for (const c of this.circuits.values()) if (c.state !== 'closed') open++;
    return { open, openings: this.openings };
  }

  /** The state of an origin's circuit (`closed` when it has none). */
  stateOf(origin: string): CircuitState {
    return this.circuits.get(origin)?.state ?? 'closed';
  }

  /**
   * Waits until a POST to `origin` may be tried: resolves `true` then, `false` as soon as the
   * circuit is known to stay open past `deadlineMs` (or the deadline passed while waiting for a
   * probe). Rejects with `signal.reason` on abort.
   */
  async waitFor(origin: string, deadlineMs: number, signal: AbortSignal): Promise<boolean> {
    for (;;) {
      signal.throwIfAborted();
      const circuit = this.circuits.get(origin);
      if (circuit === undefined) return true;
      const nowMs = this.options.clock.nowMs();
      const { pass, untilMs } = circuit.peek(nowMs);
      if (pass) return true;
      if (untilMs !== undefined ? untilMs >= deadlineMs : nowMs >= deadlineMs) return false;
      await this.nextChange(origin, untilMs === undefined ? undefined : untilMs - nowMs, signal);
    }
  }

  /** Asks to send one POST to `origin` now. */
  permit(origin: string): CircuitPermit {
    const circuit = this.circuits.get(origin);
    if (circuit === undefined) return { go: true, probe: false };
    const permit = circuit.permit(this.options.clock.nowMs());
    if (permit.go && permit.transition !== undefined) this.changed(origin, permit.transition);
    return permit;
  }

  /** Records how a permitted POST to `origin` ended; `lastFailure` describes a failure. */
  record(origin: string, outcome: CircuitOutcome, probe: boolean, lastFailure?: string): void {
    let circuit = this.circuits.get(origin);
    if (circuit === undefined) {
      if (outcome !== 'failed') return;
      circuit = new WebhookCircuit(this.options.circuit);
      this.circuits.set(origin, circuit);
    }
    const transition = circuit.record(outcome, this.options.clock.nowMs(), probe);
    if (transition !== undefined) this.changed(origin, transition, lastFailure);
    else if (probe) this.wake(origin);
    if (circuit.isIdle()) this.circuits.delete(origin);
  }

  private changed(
    origin: string,
    t: { from: CircuitState; to: CircuitState; failures: number; reopenAtMs?: number },
    lastFailure?: string,
  ): void {
    if (t.to === 'open') this.openings++;
    this.wake(origin);
    try {
      this.options.onChange({
        origin,
        from: t.from,
        to: t.to,
        failures: t.failures,
        ...(t.reopenAtMs === undefined ? {} : { reopenAtMs: t.reopenAtMs }),
        ...(t.to === 'open' && lastFailure !== undefined ? { lastFailure } : {}),
      });
    } catch {
      // A reporting hook must not break delivery.
    }
  }

  private wake(origin: string): void {
    const set = this.waiters.get(origin);
    if (set === undefined) return;
    this.waiters.delete(origin);
    for (const resolve of set) resolve();
  }

  /** Resolves at the next change of `origin`'s circuit or after `ms` (when given). */
  private async nextChange(
    origin: string,
    ms: number | undefined,
    signal: AbortSignal,
  ): Promise<void> {
    const local = new AbortController();
    const onAbort = (): void => local.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    let set = this.waiters.get(origin);
    if (set === undefined) {
      set = new Set();
      this.waiters.set(origin, set);
    }
    let resolveChange: () => void = () => {};
    const change = new Promise<void>((resolve) => {
      resolveChange = resolve;
    });
    set.add(resolveChange);
    const aborted = new Promise<never>((_, reject) => {
      local.signal.addEventListener('abort', () => reject(local.signal.reason), { once: true });
    });
    aborted.catch(() => undefined);
    const timer = ms === undefined ? undefined : this.options.sleep(Math.max(0, ms), local.signal);
    timer?.catch(() => undefined);
    try {
      await Promise.race([change, aborted, ...(timer === undefined ? [] : [timer])]);
    } finally {
      set.delete(resolveChange);
      signal.removeEventListener('abort', onAbort);
      if (!local.signal.aborted) local.abort(new Error('circuit wait over'));
    }
  }
}
