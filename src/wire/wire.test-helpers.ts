/**
 * @module wire.test-helpers
 * fast-check arbitraries shared by the wire tests: valid `Rejection`s and `LimitState`s.
 */

import fc from 'fast-check';
import { ALL_A2A_METHODS } from '../core/a2a-methods.js';
import type { LimitState, Rejection } from '../core/rejection.js';

/**
 * A policy name as the core accepts it: 1–64 printable ASCII characters (quotes, backslashes and
 * separators included, to exercise sf-string escaping), not space-padded.
 *
 * @example
 * ```ts
 * fc.assert(fc.property(policyNameArb, (name) => name.length <= 64));
 * ```
 */
export const policyNameArb: fc.Arbitrary<string> = fc
  .string({
    unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz-_.0123456789 "\\:;,='),
    minLength: 1,
    maxLength: 64,
  })
  .filter((s) => s.trim() === s);

/**
 * Any valid rejection, quota or overload, with or without quota / reservation; `retryAfterMs`
 * from 0 to a day, integer or fractional.
 *
 * @example
 * ```ts
 * fc.assert(fc.property(rejectionArb, (r) => wireDelaySeconds(r.retryAfterMs) >= 1));
 * ```
 */
export const rejectionArb: fc.Arbitrary<Rejection> = fc
  .record({
    kind: fc.constantFrom('quota' as const, 'overload' as const),
    retryAfterMs: fc.oneof(
      fc.integer({ min: 0, max: 86_400_000 }),
      fc.double({ min: 0, max: 1e7, noNaN: true }),
    ),
    policy: policyNameArb,
    scope: fc.constantFrom(
      'caller',
      'tenant',
      'skill',
      'method',
      'agent',
      'caller+method',
      'region',
    ),
    subject: fc.string({ minLength: 1, maxLength: 40 }),
    method: fc.constantFrom(...ALL_A2A_METHODS),
    quota: fc.option(
      fc.record(
        {
          limit: fc.integer({ min: 1, max: 1_000_000 }),
          windowSeconds: fc.integer({ min: 1, max: 86_400 }),
          remaining: fc.constant(0),
        },
        { requiredKeys: ['limit', 'remaining'] },
      ),
      { nil: undefined },
    ),
    reserved: fc.option(fc.boolean(), { nil: undefined }),
    message: fc.string({ maxLength: 120 }),
  })
  .map(({ quota, reserved, ...rest }) => ({
    ...rest,
    ...(quota === undefined ? {} : { quota }),
    ...(reserved === undefined ? {} : { reserved }),
  }));

/**
 * Rate states for the RateLimit headers (0–3 others, names possibly repeated), with one state named
 * `policy` at a random position when `policy` is given.
 *
 * @example
 * ```ts
 * fc.assert(fc.property(limitsArb('per-caller'), (ls) => ls.some((l) => l.policy === 'per-caller')));
 * ```
 */
export function limitsArb(policy?: string): fc.Arbitrary<LimitState[]> {
  const state = (name: fc.Arbitrary<string>) =>
    fc.record({
      policy: name,
      limit: fc.integer({ min: 1, max: 100_000 }),
      windowSeconds: fc.integer({ min: 1, max: 86_400 }),
      remaining: fc.integer({ min: 0, max: 100_000 }),
      resetSeconds: fc.integer({ min: 0, max: 86_400 }),
    });
  const others = fc.array(state(policyNameArb.filter((n) => n !== policy)), { maxLength: 3 });
  if (policy === undefined) return others;
  return fc.tuple(state(fc.constant(policy)), others, fc.nat()).map(([own, rest, at]) => {
    const out = [...rest];
    out.splice(at % (rest.length + 1), 0, own);
    return out;
  });
}
