/**
 * @module redis-leases
 * Release and renewal of a `RedisStore`'s leases, and of the insurance limiter's.
 */

import type { LeaseRef } from '../core/rejection.js';
import { SCRIPT_MODES } from './decision-script.js';
import { policyNameOfKey } from './redis-keys.js';
import type { RedisRooms } from './redis-rooms.js';
import { describeError, notify } from './redis-store-options.js';

/** Whether `lease` was taken on Redis (else by the insurance limiter). */
function isRedisLease(rooms: RedisRooms, lease: LeaseRef): boolean {
  return lease.leaseId.startsWith('r') && lease.key.startsWith(rooms.runner.prefix);
}

/**
 * `Store.release` on Redis: every lease, each in its own call; a failed release is logged (the
 * lease expires after its TTL).
 *
 * @internal
 */
export async function releaseLeases(rooms: RedisRooms, leases: readonly LeaseRef[]): Promise<void> {
  const { runner, policies, failure } = rooms;
  const own: LeaseRef[] = [];
  const insured: LeaseRef[] = [];
  for (const lease of leases) (isRedisLease(rooms, lease) ? own : insured).push(lease);
  const insurance = policies.insurance;
  if (insured.length > 0 && insurance !== undefined) insurance.releaseSync(insured);
  await Promise.all(
    own.map(async (lease) => {
      try {
        await runner.timed(
          policies.script,
          [lease.key],
          [SCRIPT_MODES.release, runner.now(), String(lease.policyIndex), lease.leaseId],
        );
      } catch (error) {
        failure.countError(error);
        notify(rooms.logger, 'warn', 'lease release failed; it will expire after its TTL', {
          lease: lease.leaseId,
          error: describeError(error),
        });
      }
    }),
  );
}

/**
 * `Store.renew` on Redis. When Redis cannot answer, a lease is reported alive (`true`): an outage
 * must not abort work that is already running. A lease is renewed under its policy's row in the
 * current set, found by the policy name in its key, so a reordered set renews it right; a lease of
 * a policy the set no longer has: `false` (left to expire).
 *
 * @internal
 */
export async function renewLeases(
  rooms: RedisRooms,
  leases: readonly LeaseRef[],
): Promise<boolean[]> {
  const { runner, policies, failure } = rooms;
  return Promise.all(
    leases.map(async (lease) => {
      if (!isRedisLease(rooms, lease)) {
        const insurance = policies.insurance;
        return insurance === undefined ? false : (insurance.renewSync([lease])[0] ?? false);
      }
      const name = policyNameOfKey(runner.prefix, lease.key);
      const policy = name === undefined ? undefined : policies.policyNamed(name);
      if (policy === undefined || policy.kind === 'rate') return false;
      if (failure.mode !== 'redis') return true;
      try {
        const reply = await runner.timed(
          policies.script,
          [lease.key],
          [SCRIPT_MODES.renew, runner.now(), String(policy.index), lease.leaseId],
        );
        return reply === 1;
      } catch (error) {
        failure.countError(error);
        return true;
      }
    }),
  );
}
