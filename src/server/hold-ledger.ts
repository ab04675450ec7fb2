/**
 * @module hold-ledger
 * The metrics-only ledger of holds this process saw made, so the observer counts them made, claimed
 * or expired. It decides nothing.
 */

import type { Admission, Rejection } from '../core/rejection.js';
import { messageRecordKey } from '../store/message-records.js';
import type { AdmissionRequest, LimiterObserver } from './limiter-options.js';

/**
 * Tracks holds this process has seen made, to count made / claimed / expired (at most 100,000
 * open; past that the oldest are counted expired).
 */
export class HoldLedger {
  /** Open holds by `messageRecordKey(caller, messageId)` (a request holds in at most a few policies). */
  private readonly open = new Map<string, { policy: string; expiresMs: number }[]>();
  private count = 0;

  /** @param graceMs The grace after a hold's slot, ms, for a delay of `delayMs`. */
  constructor(
    private readonly observer: LimiterObserver | undefined,
    private readonly graceMs: (delayMs: number) => number,
  ) {}

  rejected(request: AdmissionRequest, rejection: Rejection, nowMs: number): void {
    if (rejection.reserved !== true || request.messageId === undefined) return;
    const key = messageRecordKey(request.caller, request.messageId);
    const list = this.open.get(key);
    if (list?.some((h) => h.policy === rejection.policy)) return;
    if (this.count >= 100_000) this.shed();
    const hold = {
      policy: rejection.policy,
      expiresMs: nowMs + rejection.retryAfterMs + this.graceMs(rejection.retryAfterMs),
    };
    if (list === undefined) this.open.set(key, [hold]);
    else list.push(hold);
    this.count++;
    this.observer?.holds?.('made', rejection.policy, 1);
  }

  admitted(request: AdmissionRequest, admission: Admission): void {
    if (admission.claimedHold && request.messageId !== undefined) {
      const key = messageRecordKey(request.caller, request.messageId);
      const list = this.open.get(key);
      const hold = list?.shift();
      if (hold !== undefined) {
        this.count--;
        if (list?.length === 0) this.open.delete(key);
        this.observer?.holds?.('claimed', hold.policy, 1);
      }
    }
  }

  /** Counts expired holds and forgets them. */
  sweep(nowMs: number): void {
    for (const [key, list] of this.open) {
      const kept = list.filter((h) => h.expiresMs >= nowMs);
      if (kept.length === list.length) continue;
      for (const hold of list) {
        if (hold.expiresMs < nowMs) this.observer?.holds?.('expired', hold.policy, 1);
      }
      this.count -= list.length - kept.length;
      if (kept.length === 0) this.open.delete(key);
      else this.open.set(key, kept);
    }
  }

  /** Forgets whole keys, oldest first, counted as expired, until under 90,000 holds (memory bound). */
  private shed(): void {
    for (const [key, list] of this.open) {
      for (const hold of list) this.observer?.holds?.('expired', hold.policy, 1);
      this.count -= list.length;
      this.open.delete(key);
      if (this.count < 90_000) return;
    }
  }
}
