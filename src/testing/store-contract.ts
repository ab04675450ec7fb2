/**
 * @module store-contract
 * The behaviour every `Store` must show, as framework-agnostic cases that throw on failure; a
 * custom store should run it too.
 */

import { DEDUP_CONTRACT } from './store-contract-dedup.js';
import type { StoreContractCase } from './store-contract-kit.js';
import { LEASE_CONTRACT } from './store-contract-leases.js';
import { POLICY_CHANGE_CONTRACT } from './store-contract-policies.js';
import { RATE_CONTRACT } from './store-contract-rates.js';

/**
 * The contract cases.
 *
 * @example
 * ```ts
 * import { STORE_CONTRACT } from 'a2a-ratelimit/testing';
 * describe('my store', () => { for (const c of STORE_CONTRACT) it(c.name, () => c.run(factory)); });
 * ```
 */
export const STORE_CONTRACT: readonly StoreContractCase[] = [
  ...RATE_CONTRACT,
  ...LEASE_CONTRACT,
  ...DEDUP_CONTRACT,
  ...POLICY_CHANGE_CONTRACT,
];
