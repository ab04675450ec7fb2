/**
 * @module store-contract
 * The behaviour every `Store` must show, as framework-agnostic cases (each throws on failure):
 * the worked example, holds, refunds, all-or-nothing, bounds, leases. `MemoryStore` and
 * `RedisStore` both run it; a custom store should too.
 */

import { strict as assert } from 'node:assert';
import type { DecisionInput } from '../core/decide.js';
import type { HoldOptions, Policy } from '../core/policy.js';
import { type Decision, type Rejection, wireDelaySeconds } from '../core/rejection.js';
import { seededRandom } from '../simulation/seeded-random.js';
import type { Store } from '../store/store.js';
import { ManualClock } from './manual-clock.js';
import { WORKED_EXAMPLE_POLICY } from './worked-example-policy.js';

/**
 * Builds a fresh, empty store for one case, reading time from `clock`.
 *
 * @example
 * ```ts
 * const factory: StoreFactory = async (policies, holds, clock) => new MemoryStore({ policies, holds, clock });
 * ```
 */
export type StoreFactory = (
  policies: readonly Policy[],
  holds: HoldOptions | undefined,
  clock: ManualClock,
) => Promise<Store>;

/**
 * One contract case.
 *
 * @example
 * ```ts
 * for (const c of STORE_CONTRACT) test(c.name, () => c.run(factory));
 * ```
 */
export interface StoreContractCase {
  readonly name: string;
  run(factory: StoreFactory): Promise<void>;
}

/** A realistic epoch, so stores see Unix-scale timestamps (ms). */
const T0_MS = 1_760_000_000_000;

const PER_CALLER: Policy = WORKED_EXAMPLE_POLICY;

/** The simulation's seeded source, re-exported for the tests that import it from here. */
export { seededRandom } from '../simulation/seeded-random.js';

function send(caller: string, messageId?: string, extra?: Partial<DecisionInput>): DecisionInput {
  return {
    caller,
    method: 'SendMessage',
    ...(messageId === undefined ? {} : { messageId }),
    ...extra,
  };
}

function rejected(d: Decision, what: string): Rejection {
  assert.equal(d.admitted, false, `${what}: expected a rejection`);
  if (d.admitted) throw new Error('unreachable');
  return d.rejection;
}

async function setup(factory: StoreFactory, policies: readonly Policy[], holds?: HoldOptions) {
  const clock = new ManualClock(T0_MS);
  const store = await factory(policies, holds, clock);
  return { clock, store };
}

/** Moves the clock to `t0 + ms`. */
function at(clock: ManualClock, ms: number): void {
  clock.set(T0_MS + ms);
}

interface Pending {
  readonly messageId: string;
  readonly dueMs: number;
}

/** Retries every pending request at its due time (in time order); returns how many were admitted. */
async function retryAll(store: Store, clock: ManualClock, caller: string, pending: Pending[]) {
  let admitted = 0;
  const failures: string[] = [];
  for (const p of [...pending].sort((a, b) => a.dueMs - b.dueMs)) {
    at(clock, p.dueMs);
    const d = await store.decide(send(caller, p.messageId));
    if (d.admitted) admitted++;
    else failures.push(`${p.messageId}@${p.dueMs}ms: ${d.rejection.retryAfterMs}ms more`);
  }
  return { admitted, failures };
}

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
  {
    name: 'deduplication: set-if-absent per (caller, messageId), task id recorded, records expire',
    async run(factory) {
      const { clock, store } = await setup(factory, [PER_CALLER]);
      assert.deepEqual(await store.rememberMessage('a', 'm1', 60_000), { fresh: true });
      assert.deepEqual(await store.rememberMessage('a', 'm1', 60_000), { fresh: false });
      assert.deepEqual(
        await store.rememberMessage('b', 'm1', 60_000),
        { fresh: true },
        'another caller with the same messageId is a different message',
      );
      await store.recordMessageTask('a', 'm1', 'task-1', 60_000);
      assert.deepEqual(await store.rememberMessage('a', 'm1', 60_000), {
        fresh: false,
        taskId: 'task-1',
      });
      at(clock, 59_999);
      assert.deepEqual(await store.rememberMessage('a', 'm1', 60_000), {
        fresh: false,
        taskId: 'task-1',
      });
      at(clock, 60_000); // recorded at 0 with a 60 s TTL: gone now
      assert.deepEqual(await store.rememberMessage('a', 'm1', 60_000), { fresh: true });
      assert.deepEqual(await store.rememberMessage('a', 'm1', 60_000), { fresh: false });
      await store.close();
    },
  },
  {
    name: 'deduplication: concurrent copies of one message get exactly one fresh answer',
    async run(factory) {
      const { store } = await setup(factory, [PER_CALLER]);
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => store.rememberMessage('a', 'same', 60_000)),
      );
      assert.equal(answers.filter((a) => a.fresh).length, 1);
      await store.close();
    },
  },
];
