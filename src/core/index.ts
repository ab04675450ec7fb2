/**
 * @module core
 * Pure policy model and decision: no I/O, no clock reads, no Node APIs.
 */
export * from './a2a-methods.js';
export { chargeUsage } from './charge-usage.js';
export * from './clock.js';
export { compilePolicies } from './compile-policies.js';
export type {
  CompiledConcurrencyPolicy,
  CompiledHoldOptions,
  CompiledOverloadPolicy,
  CompiledPolicy,
  CompiledPolicySet,
  CompiledRatePolicy,
} from './compiled-policy.js';
export * from './decide.js';
export type {
  DecisionInput,
  DecisionState,
  Hold,
  Lease,
  LeasePolicy,
  LeaseSet,
  RateExtra,
} from './decision-state.js';
export { OVERFLOW_KEY } from './decision-state.js';
export * from './gcra.js';
export {
  LEASE_EWMA_ALPHA,
  LEASE_MIN_DELAY_MS,
  LEASE_OVERDUE_FRACTION,
  pruneLeases,
  releaseLease,
  renewLease,
} from './lease-step.js';
export { limitStateOf, rejectingLimitState } from './limit-state.js';
export { policiesOf } from './policies-of.js';
export * from './policy.js';
export { isPolicyError, POLICY_ERROR_CODES, PolicyError } from './policy-error.js';

export { holdKeyOf } from './rate-holds.js';
export * from './rejection.js';
export { rejectedDecision, rejectionOf } from './rejection-of.js';
