/**
 * @module shadow-log
 * The throttled log line of a shadow policy that would have refused a request (at most one per
 * policy per second).
 */

import type { Rejection } from '../core/rejection.js';

/** Smallest gap between two lines of one policy, ms. */
const LINE_EVERY_MS = 1000;

/**
 * Writes shadow refusals as lines, at most one per policy per second; a line after a quiet
 * spell names the refusal, and counts the ones folded into it since the last line.
 *
 * @example
 * ```ts
 * const log = new ShadowLog(console.warn);
 * log.refused(rejection, Date.now()); // "a2a-ratelimit: shadow policy per-caller would have refused …"
 * ```
 */
export class ShadowLog {
  private readonly last = new Map<string, { atMs: number; folded: number }>();

  /** @param write where a line goes (e.g. `console.warn`). */
  constructor(private readonly write: (line: string) => void) {}

  /** Notes one would-be refusal at `nowMs`; writes a line unless one for its policy is < 1 s old. */
  refused(rejection: Rejection, nowMs: number): void {
    const seen = this.last.get(rejection.policy);
    if (seen !== undefined && nowMs - seen.atMs < LINE_EVERY_MS) {
      seen.folded++;
      return;
    }
    const folded = seen?.folded ?? 0;
    this.last.set(rejection.policy, { atMs: nowMs, folded: 0 });
    const tier = rejection.tier === undefined ? '' : ` (tier ${rejection.tier})`;
    const more = folded > 0 ? `; ${folded} more since the last line` : '';
    this.write(
      `a2a-ratelimit: shadow policy ${rejection.policy} would have refused ${rejection.subject}${tier} ${rejection.method}, retry in ${rejection.retryAfterMs} ms (not refused: dry run)${more}`,
    );
  }
}
