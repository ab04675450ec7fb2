/**
 * @module probe-origins
 * `probe --direct`: whether each part that did not arrive was never sent by the agent or lost on
 * the way.
 */

import type { ProbeCheck } from './probe-check.js';

/**
 * Where a part that did not arrive went, when `direct` could tell: `agent` — the agent's own
 * answer lacks it too (the agent never sent it); `path` — the agent's own answer has it (it was
 * lost between the agent and the caller).
 */
export type LossOrigin = 'agent' | 'path';

/**
 * Of each check that failed or warned through the gateway, where it went: the agent's own answer
 * (`direct`) has it → `path`; lacks it too → `agent`. A check the direct run skipped says nothing.
 *
 * @example
 * ```ts
 * originsOf(throughGateway.checks, direct.checks); // { 'retry-after': 'path', ratelimit: 'agent' }
 * ```
 */
export function originsOf(
  through: readonly ProbeCheck[],
  direct: readonly ProbeCheck[],
): Record<string, LossOrigin> {
  const origins: Record<string, LossOrigin> = {};
  for (const check of through) {
    if (check.status !== 'fail' && check.status !== 'warn') continue;
    const there = direct.find((c) => c.name === check.name);
    if (there === undefined) {
      // `a2a-answer` exists only when the answer was no A2A one; the retry is not run directly.
      if (check.name !== 'retry') origins[check.name] = 'path';
    } else if (there.status === 'pass') origins[check.name] = 'path';
    else if (there.status === 'fail' || there.status === 'warn') origins[check.name] = 'agent';
  }
  return origins;
}
