/**
 * @module describe-policy
 * The ready banners' one line per policy (`serve`, `gateway`).
 */

import type { compilePolicies } from 'a2a-ratelimit';

/** One compiled policy, as a limiter's `policySet` lists it. */
type CompiledPolicy = ReturnType<typeof compilePolicies>['policies'][number];

/**
 * One line per policy for the ready banner: a usage policy's unit, every tier of a tiered policy
 * (the default one marked), shadow mode.
 *
 * @example
 * ```ts
 * describePolicy(limiter.policySet.policies[0]); // 'per-caller (rate, per caller): 60 per 60 s, burst 10, on SendMessage, SendStreamingMessage'
 * // tiered: 'per-caller (rate, per caller): tier free (default) 60 per 60 s, burst 10; tier pro 600 per 60 s, burst 100, on …'
 * ```
 */
export function describePolicy(p: CompiledPolicy): string {
  const on = p.methods.size >= 11 ? 'on every method' : `on ${[...p.methods].join(', ')}`;
  const shadow = p.shadow ? ', shadow (decided and counted, never refused)' : '';
  switch (p.kind) {
    case 'rate': {
      const limits = (v: typeof p): string =>
        `${v.limit}${v.unit === undefined ? '' : ` ${v.unit}`} per ${v.windowSeconds} s, burst ${v.burst}`;
      const tiers =
        p.tierVariants.length === 0
          ? limits(p)
          : p.tierVariants
              .map((v) => `tier ${v.tier}${v.tier === p.tier ? ' (default)' : ''} ${limits(v)}`)
              .join('; ');
      return `${p.name} (rate, per ${p.scopeName}): ${tiers}, ${on}${shadow}`;
    }
    case 'concurrency':
      return `${p.name} (concurrency, per ${p.scopeName}): at most ${p.max} in flight, ${on}${shadow}`;
    default: {
      const limits = [
        Number.isFinite(p.maxInFlight) ? `${p.maxInFlight} in flight` : undefined,
        Number.isFinite(p.maxEventLoopDelayMs)
          ? `${p.maxEventLoopDelayMs} ms event-loop delay`
          : undefined,
      ].filter((x) => x !== undefined);
      return `${p.name} (overload, agent-wide): ${limits.join(' or ')}, ${on}${shadow}`;
    }
  }
}
