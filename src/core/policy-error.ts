/**
 * @module policy-error
 * `PolicyError`, the one error a malformed policy set raises, and its guard `isPolicyError`.
 */

import { BrandedError, isBrandedError } from './branded-error.js';

/**
 * Stable `code` strings of policy errors.
 */
export const POLICY_ERROR_CODES = {
  invalid: 'ERR_A2A_INVALID_POLICY',
} as const;

/**
 * A malformed policy set, found at construction. `policy` names the policy (or its index when it
 * has no usable name) and `field` the offending field; `code` is
 * `POLICY_ERROR_CODES.invalid`.
 *
 * @example
 * ```ts
 * try { compilePolicies([{ name: 'x', kind: 'rate', limit: 0, windowSeconds: 60 }]); }
 * catch (e) { if (e instanceof PolicyError) console.log(e.code, e.policy, e.field); } // … 'x' 'limit'
 * ```
 */
export class PolicyError extends BrandedError<typeof POLICY_ERROR_CODES.invalid> {
  declare readonly name: 'PolicyError';
  /** Brand checked by `instanceof` (across copies of this package). */
  declare readonly isPolicyError: true;
  /** Policy name, or `#<index>` when the policy has no valid name. */
  readonly policy: string;
  /** The field that is wrong. */
  readonly field: string;

  constructor(policy: string, field: string, problem: string) {
    super('PolicyError', POLICY_ERROR_CODES.invalid, `Policy "${policy}": ${field} ${problem}`);
    this.policy = policy;
    this.field = field;
  }

  /**
   * `instanceof` recognises a PolicyError of any installed copy of this package: it checks the brand
   * (`isPolicyError: true`, an own property), not the prototype chain.
   */
  static override [Symbol.hasInstance](value: unknown): value is PolicyError {
    return isPolicyError(value);
  }
}

/**
 * Whether `value` is a {@link PolicyError} (of any installed copy of this package): it carries
 * the own brand property `isPolicyError: true`.
 */
export function isPolicyError(value: unknown): value is PolicyError {
  return isBrandedError(value, 'PolicyError');
}

/**
 * A value as a policy error message shows it: strings quoted, objects and arrays by kind.
 * @internal
 */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'object' && value !== null)
    return Array.isArray(value) ? 'an array' : 'an object';
  return String(value);
}
