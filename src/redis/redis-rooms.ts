/**
 * @module redis-rooms
 * The collaborators a `RedisStore` builds, whole, before its smaller rooms (the coalescing batcher,
 * the cross-slot protocol, leases, message records): those rooms are given them, not a host.
 */

import type { FailureMode } from './failure-mode.js';
import type { LivePolicySet } from './live-policy-set.js';
import type { RedisStoreLogger } from './redis-store-options.js';
import type { ScriptRunner } from './script-runner.js';

/**
 * One store's collaborators.
 *
 * @internal
 */
export interface RedisRooms {
  /** Every call to Redis (prefix, deadlines, time argument). */
  readonly runner: ScriptRunner;
  /** The policy set: its script, insurance limiter and policies by name. */
  readonly policies: LivePolicySet;
  /** Who answers now (Redis or the failure policy), and the counters. */
  readonly failure: FailureMode;
  readonly logger: RedisStoreLogger;
}
