/**
 * @module insurance-policies
 * The policies of the in-memory insurance limiter a `RedisStore` falls back to when Redis is
 * unreachable: the same names, scopes and windows, with every limit divided by the number of
 * replicas that share the Redis store, so the replicas together stay within the shared limit.
 */

import type { CompiledPolicy, CompiledPolicySet, HoldOptions, Policy } from '../core/policy.js';

function share(total: number, replicas: number): number {
  return Math.max(1, Math.floor(total / replicas));
}

/**
 * Per-replica copies of `policySet`: rate `limit` and `burst`, concurrency `max` and overload
 * `maxInFlight` divided by `replicas`, rounded down, at least 1. Windows, scopes, methods, names
 * and the event-loop threshold are unchanged.
 *
 * @example
 * ```ts
 * const set = compilePolicies([{ name: 'r', kind: 'rate', limit: 200, windowSeconds: 1, burst: 50 }]);
 * insurancePolicies(set, 4).policies; // [{ name: 'r', …, limit: 50, burst: 12 }]
 * ```
 */
export function insurancePolicies(
  policySet: CompiledPolicySet,
  replicas: number,
): { policies: Policy[]; holds: HoldOptions } {
  if (!Number.isSafeInteger(replicas) || replicas < 1) {
    throw new RangeError(`RedisStore: replicas must be a positive integer, got ${replicas}`);
  }
  const policies = policySet.policies.map((p): Policy => {
    switch (p.kind) {
      case 'rate':
        if (p.tierVariants.length > 0) {
          // Every tier divided alike.
          const tiers: Record<string, { limit: number; windowSeconds: number; burst: number }> = {};
          for (const v of p.tierVariants) {
            tiers[v.tier as string] = {
              limit: share(v.limit, replicas),
              windowSeconds: v.windowSeconds,
              burst: share(v.burst, replicas),
            };
          }
          return { ...(p.source as Policy & { kind: 'rate' }), tiers };
        }
        return {
          ...(p.source as Policy & { kind: 'rate' }),
          limit: share(p.limit, replicas),
          burst: share(p.burst, replicas),
        };
      case 'concurrency':
        return { ...(p.source as Policy & { kind: 'concurrency' }), max: share(p.max, replicas) };
      case 'overload': {
        const source = p.source as Policy & { kind: 'overload' };
        return Number.isFinite(p.maxInFlight)
          ? { ...source, maxInFlight: share(p.maxInFlight, replicas) }
          : source;
      }
      default:
        throw new TypeError(
          `insurancePolicies: unknown policy kind of ${(p as CompiledPolicy).name}`,
        );
    }
  });
  const h = policySet.holds;
  return {
    policies,
    holds: {
      maxNoShows: h.maxNoShows,
      maxHoldsPerKey: h.maxHoldsPerKey,
      minGraceMs: h.minGraceUs / 1000,
      graceFraction: h.graceFraction,
    },
  };
}
