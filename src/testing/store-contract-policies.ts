/**
 * @module store-contract-policies
 * The store contract cases of live policy changes (`Store.updatePolicies`).
 */

import { strict as assert } from 'node:assert';
import { compilePolicies } from '../core/compile-policies.js';
import type { DecisionInput } from '../core/decision-state.js';
import type { Policy } from '../core/policy.js';
import { rejected, type StoreContractCase, setup } from './store-contract-kit.js';

const call = (method: DecisionInput['method'], caller = 'a'): DecisionInput => ({ caller, method });

/** The live policy-change cases of the store contract. */
export const POLICY_CHANGE_CONTRACT: readonly StoreContractCase[] = [
  {
    name: 'live policy change: state kept per name (order changed), new limits at once, removed policy stops, new one starts empty',
    async run(factory) {
      const before: Policy[] = [
        {
          name: 'per-caller',
          kind: 'rate',
          methods: ['GetTask'],
          limit: 60,
          windowSeconds: 60,
          burst: 2,
        },
        { name: 'slots', kind: 'concurrency', methods: ['CancelTask'], max: 1 },
        {
          name: 'old',
          kind: 'rate',
          methods: ['ListTasks'],
          limit: 1,
          windowSeconds: 60,
          burst: 1,
        },
      ];
      const { store } = await setup(factory, before);
      if (store.updatePolicies === undefined) {
        await store.close();
        return;
      }
      for (let i = 0; i < 2; i++) assert.ok((await store.decide(call('GetTask'))).admitted);
      rejected(await store.decide(call('GetTask')), 'spent');
      const held = await store.decide(call('CancelTask'));
      assert.ok(held.admitted && held.leases.length === 1);
      rejected(await store.decide(call('CancelTask')), 'slot taken');
      assert.ok((await store.decide(call('ListTasks'))).admitted);
      rejected(await store.decide(call('ListTasks')), 'old spent');

      const after = compilePolicies([
        {
          name: 'fresh',
          kind: 'rate',
          methods: ['ListTasks'],
          limit: 1,
          windowSeconds: 60,
          burst: 1,
        },
        { name: 'slots', kind: 'concurrency', methods: ['CancelTask'], max: 2 },
        {
          name: 'per-caller',
          kind: 'rate',
          methods: ['GetTask'],
          limit: 60,
          windowSeconds: 60,
          burst: 3,
        },
      ]);
      await store.updatePolicies(after);
      assert.deepEqual(
        store.policySet.policies.map((p) => p.name),
        ['fresh', 'slots', 'per-caller'],
      );
      // The spent caller stays spent: burst 3 leaves room for one more, not a fresh bucket of 3.
      assert.ok((await store.decide(call('GetTask'))).admitted, 'the larger burst applies at once');
      assert.equal(rejected(await store.decide(call('GetTask')), 'kept').policy, 'per-caller');
      assert.ok((await store.decide(call('GetTask', 'b'))).admitted, 'other callers unaffected');
      // The lease taken before the change still counts under the new max.
      const second = await store.decide(call('CancelTask'));
      assert.ok(second.admitted, 'max 2: one more next to the kept lease');
      rejected(await store.decide(call('CancelTask')), 'both slots held');
      const slots = after.policies.find((p) => p.name === 'slots')?.index as number;
      const [lease] = held.leases;
      await store.release([{ ...(lease as (typeof held.leases)[number]), policyIndex: slots }]);
      assert.ok((await store.decide(call('CancelTask'))).admitted, 'the kept lease was released');
      // 'old' is gone; 'fresh' is new and starts full.
      assert.ok((await store.decide(call('ListTasks'))).admitted, 'new policy starts empty');
      assert.equal(rejected(await store.decide(call('ListTasks')), 'fresh').policy, 'fresh');
      await store.close();
    },
  },
];
