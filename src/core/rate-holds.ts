/**
 * @module rate-holds
 * Holds of caller-scoped rate policies: who may hold a slot, its grace, and settling expired holds
 * and no-shows.
 */

import { MESSAGE_METHODS } from './a2a-methods.js';
import type { CompiledHoldOptions, CompiledPolicy, CompiledRatePolicy } from './compiled-policy.js';
import type { Hold, RateExtra } from './decision-state.js';
import { refundTatUs } from './gcra.js';
import type { RequestIdentity } from './policy.js';
import { pairKey } from './table-key.js';

/**
 * The key under which a request may hold or claim a slot in a caller-scoped rate policy:
 * the pair (caller, messageId) by `pairKey` (injective), or undefined when the request cannot hold
 * (no messageId, or a method that carries none).
 *
 * @example
 * ```ts
 * holdKeyOf({ caller: 'a', method: 'SendMessage', messageId: 'm1' }); // '1:a/m1'
 * holdKeyOf({ caller: 'a', method: 'GetTask' }); // undefined
 * ```
 */
export function holdKeyOf(input: RequestIdentity): string | undefined {
  return input.messageId !== undefined && MESSAGE_METHODS.has(input.method)
    ? pairKey(input.caller, input.messageId)
    : undefined;
}

/**
 * Refunds holds that expired unclaimed, counts them as no-shows and decays no-shows by one per
 * window. Returns the refunded timestamp.
 */
export function settleExtra(
  extra: RateExtra,
  tatUs: number | undefined,
  nowUs: number,
  p: CompiledRatePolicy,
): number | undefined {
  let tat = tatUs;
  if (nowUs > extra.nextExpiryUs) {
    let next = Number.POSITIVE_INFINITY;
    for (const [k, h] of extra.holds) {
      if (nowUs > h.expiresUs) {
        extra.holds.delete(k);
        if (tat !== undefined && tat > nowUs) tat = refundTatUs(tat, nowUs, p);
        if (extra.noShows === 0) extra.noShowsAtUs = nowUs;
        extra.noShows += 1;
      } else if (h.expiresUs < next) {
        next = h.expiresUs;
      }
    }
    extra.nextExpiryUs = next;
  }
  if (extra.noShows > 0) {
    const forgiven = Math.floor((nowUs - extra.noShowsAtUs) / p.windowUs);
    if (forgiven > 0) {
      extra.noShows = Math.max(0, extra.noShows - forgiven);
      extra.noShowsAtUs += forgiven * p.windowUs;
    }
  }
  return tat;
}

/** Whether a key keeps nothing besides its timestamp (no holds, no no-shows). */
export function isEmptyExtra(extra: RateExtra | undefined): boolean {
  return extra === undefined || (extra.holds.size === 0 && extra.noShows === 0);
}

/** The grace after a held slot during which the retry may claim it, µs. */
export function graceUs(delayUs: number, holds: CompiledHoldOptions): number {
  return Math.max(holds.minGraceUs, Math.floor(delayUs * holds.graceFraction));
}

/** What {@link reservableSlotUs} reads of the rate step that set a rejection's delay. */
export interface HoldCandidate {
  readonly policy: CompiledPolicy;
  /** This request's hold key in the policy, when it may hold. */
  readonly holdKey: string | undefined;
  /** The request's existing hold, if any. */
  readonly hold: Hold | undefined;
  readonly extra: RateExtra | undefined;
  /** µs until the policy admits. */
  readonly delayUs: number;
}

/**
 * Whether the setter may reserve a slot for this request, and if so the slot, µs.
 * Conditions: caller-scoped rate policy, a messageId, no existing hold, fewer than
 * `maxNoShows` no-shows, fewer than `maxHoldsPerKey` holds, slot at most one window ahead.
 */
export function reservableSlotUs(
  step: HoldCandidate,
  nowUs: number,
  holds: CompiledHoldOptions,
): number | undefined {
  const p = step.policy;
  if (p.kind !== 'rate' || step.holdKey === undefined || step.hold !== undefined) return undefined;
  const extra = step.extra;
  if (extra !== undefined) {
    if (extra.noShows >= holds.maxNoShows) return undefined;
    if (extra.holds.size >= holds.maxHoldsPerKey) return undefined;
  } else if (holds.maxHoldsPerKey === 0 || holds.maxNoShows === 0) {
    return undefined;
  }
  if (step.delayUs > p.windowUs) return undefined;
  return nowUs + step.delayUs;
}
