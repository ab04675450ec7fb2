/**
 * @module redis-leases
 * Release and renewal of a `RedisStore`'s leases, and of the insurance limiter's.
 */

import type { CompiledPolicy } from '../core/compiled-policy.js';
import type { LeaseRef } from '../core/rejection.js';
import { SCRIPT_MODES } from './decision-script.js';
import type { FailureMode } from './failure-mode.js';
import { policyNameOfKey } from './redis-keys.js';
import { describeError, notify, type RedisStoreLogger } from './redis-store-options.js';
import type { RedisCallHost } from './script-runner.js';

/**
 * What lease handling needs from its store.
 *
 * @internal
 */
export interface LeaseHost extends RedisCallHost {
  readonly failure: FailureMode;
  readonly logger: RedisStoreLogger;
  /** The current set's policy of that name. */
  policyNamed(name: string): CompiledPolicy | undefined;
}

/** Whether `lease` was taken on Redis (else by the insurance limiter). */
function isRedisLease(host: LeaseHost, lease: LeaseRef): boolean {
  return lease.leaseId.startsWith('r') && lease.key.startsWith(host.prefix);
}

/**
 * `Store.release` on Redis: every lease, each in its own call; a failed release is logged (the
 * lease expires after its TTL).
 *
 * @internal
 */
export async function releaseLeases(host: LeaseHost, leases: readonly LeaseRef[]): Promise<void> {
  const own: LeaseRef[] = [];
  const insured: LeaseRef[] = [];
  for (const lease of leases) (isRedisLease(host, lease) ? own : insured).push(lease);
  const insurance = host.failure.insurance;
  if (insured.length > 0 && insurance !== undefined) insurance.releaseSync(insured);
  await Promise.all(
    own.map(async (lease) => {
      try {
        await host.timed(
          [lease.key],
          [SCRIPT_MODES.release, host.now(), String(lease.policyIndex), lease.leaseId],
        );
      } catch (error) {
        host.failure.countError(error);
        notify(host.logger, 'warn', 'lease release failed; it will expire after its TTL', {
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
  host: LeaseHost,
  leases: readonly LeaseRef[],
): Promise<boolean[]> {
  return Promise.all(
    leases.map(async (lease) => {
      if (!isRedisLease(host, lease)) {
        const insurance = host.failure.insurance;
        return insurance === undefined ? false : (insurance.renewSync([lease])[0] ?? false);
      }
      const name = policyNameOfKey(host.prefix, lease.key);
      const policy = name === undefined ? undefined : host.policyNamed(name);
      if (policy === undefined || policy.kind === 'rate') return false;
      if (host.failure.mode !== 'redis') return true;
      try {
        const reply = await host.timed(
          [lease.key],
          [SCRIPT_MODES.renew, host.now(), String(policy.index), lease.leaseId],
        );
        return reply === 1;
      } catch (error) {
        host.failure.countError(error);
        return true;
      }
    }),
  );
}
