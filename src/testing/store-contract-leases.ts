/**
 * @module store-contract-leases
 * The lease-policy cases of the store contract.
 */

import { strict as assert } from 'node:assert';
import type { Policy } from '../core/policy.js';
import { at, rejected, type StoreContractCase, send, setup } from './store-contract-kit.js';

/** Store contract cases of lease policies: concurrency caps, release, expiry, delays from observed hold times, renewal, the overload cap. */
export const LEASE_CONTRACT: readonly StoreContractCase[] = [
  {
    name: 'concurrency: at most max in flight, release frees, abandoned leases expire',
    async run(factory) {
      const policies: Policy[] = [
        { name: 'tasks', kind: 'concurrency', scope: 'caller', max: 2, leaseTtlSeconds: 60 },
      ];
      const { clock, store } = await setup(factory, policies);
      const a = await store.decide(send('a', 'm1'));
      const b = await store.decide(send('a', 'm2'));
      assert.ok(a.admitted && b.admitted);
      const r = rejected(await store.decide(send('a', 'm3')), 'third');
      assert.equal(r.kind, 'quota');
      assert.equal(r.policy, 'tasks');
      assert.ok(r.retryAfterMs >= 1000, 'concurrency delays are at least 1 s');
      assert.equal(
        (await store.decide(send('b', 'm1'))).admitted,
        true,
        'other callers unaffected',
      );
      at(clock, 5_000);
      await store.release(a.leases);
      await store.release(a.leases); // idempotent
      assert.equal((await store.decide(send('a', 'm4'))).admitted, true);
      at(clock, 120_000); // every lease is past its TTL: abandoned and freed
      assert.equal((await store.decide(send('a', 'm5'))).admitted, true);
      assert.equal((await store.decide(send('a', 'm6'))).admitted, true);
      await store.close();
    },
  },
  {
    name: 'concurrency delays track the observed hold time, the holders’ age and the position in line',
    async run(factory) {
      const policies: Policy[] = [
        { name: 'slots', kind: 'concurrency', scope: 'caller', max: 2, leaseTtlSeconds: 600 },
      ];
      const { clock, store } = await setup(factory, policies);
      // Two tasks held 4.5 s each teach the key its hold time.
      for (const [id, startMs] of [
        ['h1', 0],
        ['h2', 5_000],
      ] as const) {
        at(clock, startMs);
        const d = await store.decide(send('a', id));
        assert.ok(d.admitted);
        at(clock, startMs + 4_500);
        await store.release(d.leases);
      }
      at(clock, 10_000);
      const x = await store.decide(send('a', 'x'));
      at(clock, 11_000);
      const y = await store.decide(send('a', 'y'));
      assert.ok(x.admitted && y.admitted);
      at(clock, 11_500);
      // x ends at 14.5 s (3 s from now): not the constant 1 s.
      assert.equal(rejected(await store.decide(send('a', 'z1')), 'z1').retryAfterMs, 3_000);
      at(clock, 13_000);
      assert.equal(rejected(await store.decide(send('a', 'z2')), 'z2').retryAfterMs, 1_500);
      at(clock, 14_000); // past x's end: at least 1 s
      assert.equal(rejected(await store.decide(send('a', 'z3')), 'z3').retryAfterMs, 1_000);
      at(clock, 16_000); // both overdue: half a mean hold time
      assert.equal(rejected(await store.decide(send('a', 'z4')), 'z4').retryAfterMs, 2_250);
      await store.close();
    },
  },
  {
    name: 'renewal keeps a lease alive past its TTL',
    async run(factory) {
      const policies: Policy[] = [
        { name: 'streams', kind: 'concurrency', scope: 'caller', max: 1, leaseTtlSeconds: 10 },
      ];
      const { clock, store } = await setup(factory, policies);
      const a = await store.decide(send('a', 'm1'));
      assert.ok(a.admitted);
      at(clock, 8_000);
      assert.deepEqual(await store.renew(a.leases), [true]);
      at(clock, 15_000);
      assert.equal(
        (await store.decide(send('a', 'm2'))).admitted,
        false,
        'renewed lease still held',
      );
      at(clock, 30_000);
      assert.deepEqual(await store.renew(a.leases), [false], 'expired lease cannot be renewed');
      await store.close();
    },
  },
  {
    name: 'overload: agent-wide in-flight cap answers overload, scope agent, no quota',
    async run(factory) {
      const policies: Policy[] = [{ name: 'agent-overload', kind: 'overload', maxInFlight: 2 }];
      const { store } = await setup(factory, policies);
      assert.equal((await store.decide(send('a', 'm1'))).admitted, true);
      assert.equal((await store.decide(send('b', 'm1'))).admitted, true);
      const r = rejected(await store.decide(send('c', 'm1')), 'third');
      assert.equal(r.kind, 'overload');
      assert.equal(r.scope, 'agent');
      assert.equal(r.quota, undefined);
      assert.ok(r.retryAfterMs >= 1000);
      await store.close();
    },
  },
];
