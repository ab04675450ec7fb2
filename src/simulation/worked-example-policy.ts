/**
 * @module worked-example-policy
 * The worked example's policy: 60 messages per minute per caller, burst 10.
 */

import type { RatePolicy } from '../core/policy.js';

/**
 * 60 SendMessage / SendStreamingMessage calls per minute per caller, burst 10: 30 calls at once
 * get 10 admissions and delays of exactly 1, 2, …, 20 s.
 *
 * @example
 * ```ts
 * const store = new MemoryStore({ policies: [WORKED_EXAMPLE_POLICY] });
 * ```
 */
export const WORKED_EXAMPLE_POLICY: RatePolicy & {
  readonly limit: number;
  readonly windowSeconds: number;
} = {
  name: 'per-caller',
  kind: 'rate',
  scope: 'caller',
  methods: ['SendMessage', 'SendStreamingMessage'],
  limit: 60,
  windowSeconds: 60,
  burst: 10,
  description: '60 messages per minute per caller, burst 10',
};
