/**
 * @module insurance-policies
 * The insurance limiter's policies: the shared ones with every limit divided among the replicas.
 */

import type { CompiledPolicy, CompiledPolicySet } from '../core/compiled-policy.js';
import type { HoldOptions, Policy } from '../core/policy.js';
import { holdOptionsOf } from './policy-set-sync.js';

function share(total: number, replicas: number): number {
  return Math.max(1, Math.floor(total / replicas));
}

/**
 * Per-replica copies of `policySet`: rate `limit` and `burst`, concurrency `max` and overload
 * `maxInFlight` (and a `maxInFlightPerCaller` given as a number) divided by `replicas`, rounded down, at least 1. Windows, scopes, methods, names
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
    const source = p.source;
    switch (p.kind) {
      case 'rate':
        if (source.kind !== 'rate') break;
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
          return { ...source, tiers };
        }
        return {
          ...source,
          limit: share(p.limit, replicas),
          burst: share(p.burst, replicas),
        };
      case 'concurrency':
        if (source.kind !== 'concurrency') break;
        return { ...source, max: share(p.max, replicas) };
      case 'overload':
        if (source.kind !== 'overload') break;
        if (!Number.isFinite(p.maxInFlight)) return source;
        // A caller's share given as a number is divided too; the default follows maxInFlight.
        return typeof source.maxInFlightPerCaller === 'number'
          ? {
              ...source,
              maxInFlight: share(p.maxInFlight, replicas),
              maxInFlightPerCaller: share(source.maxInFlightPerCaller, replicas),
            }
          : { ...source, maxInFlight: share(p.maxInFlight, replicas) };
    }
    throw new TypeError(
      `insurancePolicies: policy ${(p as CompiledPolicy).name} does not match its declaration`,
    );
  });
  return { policies, holds: holdOptionsOf(policySet) };
}
