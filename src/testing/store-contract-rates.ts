/**
 * @module store-contract-rates
 * The rate-policy cases of the store contract.
 */

import { strict as assert } from 'node:assert';
import type { Policy } from '../core/policy.js';
import { wireDelaySeconds } from '../core/rejection.js';
import { seededRandom } from '../simulation/seeded-random.js';
import {
  at,
  PER_CALLER,
  type Pending,
  rejected,
  retryAll,
  type StoreContractCase,
  send,
  setup,
} from './store-contract-kit.js';

/** Store contract cases of rate policies: the worked example, holds and their claims, refunds, no-shows, all-or-nothing, the bound on holds, the reported states. */
export const RATE_CONTRACT: readonly StoreContractCase[] = [
  {
    name: 'worked example: 30 at once → 10 admitted, delays 1…20 s, all admitted on first retry; 5 late arrivals steal no hold',
    async run(factory) {
      const { clock, store } = await setup(factory, [PER_CALLER]);
      const random = seededRandom(7);
      const pending: Pending[] = [];
      const delays: number[] = [];
      for (let i = 0; i < 30; i++) {
        const d = await store.decide(send('orchestrator-7', `m${i}`));
        if (i < 10) {
          assert.equal(d.admitted, true, `request ${i} should be admitted from the burst`);
          continue;
        }
        const r = rejected(d, `request ${i}`);
        assert.equal(r.reserved, true);
        assert.equal(r.kind, 'quota');
        const s = wireDelaySeconds(r.retryAfterMs);
        delays.push(s);
        pending.push({ messageId: `m${i}`, dueMs: s * 1000 + Math.floor(random() * 1000) });
      }
      assert.deepEqual(
        delays,
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
      // Retries due before the late arrivals come first, in time order.
      const early = await retryAll(
        store,
        clock,
        'orchestrator-7',
        pending.filter((p) => p.dueMs < 3500),
      );
      const rest = pending.filter((p) => p.dueMs >= 3500);
      at(clock, 3500);
      for (let i = 0; i < 5; i++) {
        const r = rejected(await store.decide(send('orchestrator-7', `late${i}`)), `late ${i}`);
        const slotMs = 3500 + r.retryAfterMs;
        assert.ok(
          slotMs > 20_000,
          `late arrival ${i} got slot ${slotMs} ms, inside the held 1…20 s`,
        );
        rest.push({
          messageId: `late${i}`,
          dueMs: 3500 + wireDelaySeconds(r.retryAfterMs) * 1000 + Math.floor(random() * 1000),
        });
      }
      const late = await retryAll(store, clock, 'orchestrator-7', rest);
      assert.deepEqual([...early.failures, ...late.failures], []);
      assert.equal(early.admitted + late.admitted, 25);
      await store.close();
    },
  },
  {
    name: 'a hold is claimed once, only by its own caller, and an early retry keeps it',
    async run(factory) {
      const { clock, store } = await setup(factory, [PER_CALLER]);
      for (let i = 0; i < 10; i++) await store.decide(send('a', `x${i}`));
      const r = rejected(await store.decide(send('a', 'm')), 'first');
      assert.equal(r.retryAfterMs, 1000);
      // Another caller with the same messageId has its own bucket and no hold on a's key.
      for (let i = 0; i < 10; i++) await store.decide(send('b', `y${i}`));
      const other = rejected(await store.decide(send('b', 'm')), 'other caller');
      assert.equal(other.retryAfterMs, 1000);
      // Early retry: rejected with the remaining delay, hold kept.
      at(clock, 400);
      const early = rejected(await store.decide(send('a', 'm')), 'early retry');
      assert.equal(early.retryAfterMs, 600);
      assert.equal(early.reserved, true);
      at(clock, 1000);
      assert.equal((await store.decide(send('a', 'm'))).admitted, true, 'claim at slot');
      // A second claim finds no hold: it is a fresh request and the bucket is empty again.
      const again = rejected(await store.decide(send('a', 'm')), 'second claim');
      assert.ok(again.retryAfterMs >= 1000);
      await store.close();
    },
  },
  {
    name: 'a shared key never reserves, and a tenant rejection charges no per-caller token',
    async run(factory) {
      const policies: Policy[] = [
        PER_CALLER,
        {
          name: 'per-tenant',
          kind: 'rate',
          scope: 'tenant',
          limit: 2,
          windowSeconds: 10,
          burst: 2,
        },
      ];
      const { store } = await setup(factory, policies);
      const tenant = { tenant: 'acme' };
      assert.equal((await store.decide(send('a', 'm1', tenant))).admitted, true);
      assert.equal((await store.decide(send('b', 'm2', tenant))).admitted, true);
      const r = rejected(await store.decide(send('a', 'm3', tenant)), 'tenant full');
      assert.equal(r.policy, 'per-tenant');
      assert.equal(r.scope, 'tenant');
      assert.equal(r.reserved, false);
      // Caller a spent exactly one per-caller token: 9 more pass its own policy elsewhere.
      const d = await store.decide(send('a', 'm4', { tenant: 'other' }));
      assert.equal(d.admitted, true);
      const perCaller = d.admitted ? d.limits.find((l) => l.policy === 'per-caller') : undefined;
      assert.equal(perCaller?.remaining, 8);
      await store.close();
    },
  },
  {
    name: 'requests without a messageId reserve nothing',
    async run(factory) {
      const { clock, store } = await setup(factory, [PER_CALLER]);
      for (let i = 0; i < 10; i++) await store.decide(send('a'));
      for (let i = 0; i < 5; i++) {
        const r = rejected(await store.decide(send('a')), `anonymous ${i}`);
        assert.equal(r.reserved, false);
        assert.equal(r.retryAfterMs, 1000, 'no reservation: everyone is told the same next token');
      }
      at(clock, 1000);
      assert.equal((await store.decide(send('a'))).admitted, true);
      await store.close();
    },
  },
  {
    name: 'unclaimed holds are refunded after their grace; fresh requests then get the full refill rate',
    async run(factory) {
      const { clock, store } = await setup(factory, [PER_CALLER]);
      for (let i = 0; i < 10; i++) await store.decide(send('a', `b${i}`));
      for (let i = 0; i < 20; i++) {
        assert.equal(rejected(await store.decide(send('a', `ghost${i}`)), 'ghost').reserved, true);
      }
      // Long after every hold expired (slot 20 s + grace): the 20 no-shows were refunded, so the
      // bucket is as if only the 10 admitted happened.
      at(clock, 60_000);
      let admitted = 0;
      for (let i = 0; i < 12; i++)
        if ((await store.decide(send('a', `fresh${i}`))).admitted) admitted++;
      assert.equal(admitted, 10, 'a full burst after refunds');
      // And then one per second: the refill rate.
      let perSecond = 0;
      for (let s = 1; s <= 10; s++) {
        at(clock, 60_000 + s * 1000);
        if ((await store.decide(send('a'))).admitted) perSecond++;
      }
      assert.ok(perSecond >= 9, `refill rate after refunds: ${perSecond}/10`);
      await store.close();
    },
  },
  {
    name: 'no-shows stop new holds at maxNoShows, and claims restore credit',
    async run(factory) {
      const { clock, store } = await setup(factory, [PER_CALLER], { maxNoShows: 2 });
      for (let i = 0; i < 10; i++) await store.decide(send('a', `b${i}`));
      rejected(await store.decide(send('a', 'g1')), 'g1');
      rejected(await store.decide(send('a', 'g2')), 'g2');
      at(clock, 30_000); // both holds expired unclaimed: two no-shows
      for (let i = 0; i < 10; i++) await store.decide(send('a', `c${i}`));
      const r = rejected(await store.decide(send('a', 'g3')), 'g3');
      assert.equal(r.reserved, false, 'at maxNoShows the key makes no new holds');
      await store.close();
    },
  },
  {
    name: 'all-or-nothing across three policies',
    async run(factory) {
      const policies: Policy[] = [
        PER_CALLER,
        {
          name: 'per-method',
          kind: 'rate',
          scope: 'method',
          limit: 100,
          windowSeconds: 60,
          burst: 100,
        },
        {
          name: 'per-tenant',
          kind: 'rate',
          scope: 'tenant',
          limit: 3,
          windowSeconds: 60,
          burst: 3,
        },
      ];
      const { store } = await setup(factory, policies);
      for (let i = 0; i < 3; i++) {
        assert.equal((await store.decide(send(`c${i}`, `m${i}`, { tenant: 't' }))).admitted, true);
      }
      for (let i = 0; i < 5; i++) {
        const r = rejected(await store.decide(send('c0', `n${i}`, { tenant: 't' })), 'tenant');
        assert.equal(r.policy, 'per-tenant');
      }
      const d = await store.decide(send('c0', 'z', { tenant: 'u' }));
      assert.equal(d.admitted, true);
      if (d.admitted) {
        assert.equal(d.limits.find((l) => l.policy === 'per-caller')?.remaining, 8);
        assert.equal(d.limits.find((l) => l.policy === 'per-method')?.remaining, 96);
      }
      await store.close();
    },
  },
  {
    name: '10,000 requests at once hold at most one window of slots; the rest are told the true queue end',
    async run(factory) {
      const { store } = await setup(factory, [PER_CALLER]);
      let admitted = 0;
      let reserved = 0;
      let maxReservedMs = 0;
      const unreservedDelays = new Set<number>();
      for (let i = 0; i < 10_000; i++) {
        const d = await store.decide(send('flood', `f${i}`));
        if (d.admitted) {
          admitted++;
          continue;
        }
        assert.ok(d.rejection.retryAfterMs > 0, 'a delay is never 0');
        if (d.rejection.reserved) {
          reserved++;
          maxReservedMs = Math.max(maxReservedMs, d.rejection.retryAfterMs);
        } else {
          unreservedDelays.add(d.rejection.retryAfterMs);
        }
      }
      assert.equal(admitted, 10);
      assert.equal(reserved, 60, 'one window (60 s at 1/s) of holds');
      assert.ok(maxReservedMs <= 60_000);
      assert.deepEqual([...unreservedDelays], [61_000], 'everyone else: the true queue end');
      await store.close();
    },
  },
  {
    name: 'maxHoldsPerKey bounds holds',
    async run(factory) {
      const { store } = await setup(factory, [PER_CALLER], { maxHoldsPerKey: 5 });
      let reserved = 0;
      for (let i = 0; i < 40; i++) {
        const d = await store.decide(send('a', `m${i}`));
        if (!d.admitted && d.rejection.reserved) reserved++;
      }
      assert.equal(reserved, 5);
      await store.close();
    },
  },
  {
    name: 'admissions report r and t per rate policy; rejections r=0 and t = the delay',
    async run(factory) {
      const { store } = await setup(factory, [PER_CALLER]);
      const first = await store.decide(send('a', 'm0'));
      assert.ok(first.admitted);
      assert.deepEqual(first.limits, [
        { policy: 'per-caller', limit: 60, windowSeconds: 60, remaining: 9, resetSeconds: 1 },
      ]);
      for (let i = 1; i < 10; i++) await store.decide(send('a', `m${i}`));
      const d = await store.decide(send('a', 'm10'));
      assert.equal(d.admitted, false);
      assert.deepEqual(d.limits, [
        { policy: 'per-caller', limit: 60, windowSeconds: 60, remaining: 0, resetSeconds: 1 },
      ]);
      await store.close();
    },
  },
  {
    name: "a clock stepped back an hour after a spent 60/min burst: the delay is the policy's (1 s), never the step; the caller stays spent",
    async run(factory) {
      const perMinute: Policy = { name: 'per-minute', kind: 'rate', limit: 60, windowSeconds: 60 };
      const { clock, store } = await setup(factory, [perMinute]);
      for (let i = 0; i < 60; i++) {
        assert.equal((await store.decide(send('c', `m${i}`))).admitted, true, `burst ${i}`);
      }
      // Three retries hold slots 1, 2 and 3 s ahead, written on the clock before the step.
      for (let i = 0; i < 3; i++) {
        const r = rejected(await store.decide(send('c', `held${i}`)), `held ${i}`);
        assert.equal(r.retryAfterMs, (i + 1) * 1000);
        assert.equal(r.reserved, true);
      }
      clock.stepBack(3_600_000);
      // A timestamp an hour (and more) ahead is one the policy never writes: a bucket spent now.
      const first = rejected(await store.decide(send('c', 'after-step')), 'after the step');
      assert.equal(first.retryAfterMs, 1000, 'one emission interval, not an hour');
      // The holds were an hour ahead too: dropped, so a held request is a new one in line.
      const held = rejected(await store.decide(send('c', 'held0')), 'held retry');
      assert.ok(held.retryAfterMs <= 60_000, `held retry told ${held.retryAfterMs} ms`);
      clock.advance(1000);
      assert.equal((await store.decide(send('c', 'after-step'))).admitted, true, 'its own slot');
      // Still spent: one request per emission interval, no fresh burst.
      const next = rejected(await store.decide(send('c', 'fresh')), 'next');
      assert.ok(next.retryAfterMs <= 60_000 && next.retryAfterMs > 0);
    },
  },
];
