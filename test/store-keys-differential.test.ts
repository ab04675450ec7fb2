/**
 * Distinct identities stay apart in both stores, and both stores decide identically: runs of
 * tuples (caller, skill, tenant, messageId) of arbitrary strings — lone surrogates, NUL, `/`, `:`,
 * `|`, `-`, the hash prefix, empty, absent tenant — go through a `MemoryStore` and a `RedisStore`
 * on the real Redis (own prefix), one policy of limit 1 per scope (each on its own method, so
 * every scope is observed on its own). The oracle needs no key encoding: a tuple is admitted under
 * a scope exactly when no earlier tuple of its run had the same parts for that scope (JS string
 * equality, an absent tenant equal to no tenant name). Deduplication records likewise: a
 * (caller, messageId) is fresh exactly when no earlier tuple had it.
 */

import type { A2AMethod, Decision, DecisionInput, Policy } from 'a2a-ratelimit';
import { MemoryStore } from 'a2a-ratelimit';
import { RedisStore } from 'a2a-ratelimit/redis';
import { ManualClock } from 'a2a-ratelimit/testing';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectRedis,
  deletePrefix,
  probeRedis,
  REDIS_URL,
  requireOrSkip,
  runPrefix,
} from './fixtures/redis/redis-env.js';

const redisUp = await probeRedis();
requireOrSkip(redisUp, `Redis at ${REDIS_URL}`);

/** Runs of the property (each run on both stores). */
const RUNS = 10_000;

interface Tuple {
  readonly caller: string;
  readonly skill: string | undefined;
  readonly tenant: string | undefined;
  readonly messageId: string | undefined;
}

/** Each scope on a method of its own, and the parts that make its identity (the oracle). */
const SCOPES: readonly {
  readonly scope: NonNullable<Extract<Policy, { kind: 'rate' }>['scope']>;
  readonly name: string;
  readonly method: A2AMethod;
  /** The identity under the scope, or undefined when the policy does not apply. */
  readonly parts: (t: Tuple) => readonly (string | undefined)[] | undefined;
}[] = [
  { name: 'caller', scope: 'caller', method: 'SendMessage', parts: (t) => [t.caller] },
  {
    name: 'caller-skill',
    scope: 'caller+skill',
    method: 'SendStreamingMessage',
    parts: (t) => (t.skill ? [t.caller, t.skill] : undefined),
  },
  { name: 'caller-method', scope: 'caller+method', method: 'GetTask', parts: (t) => [t.caller] },
  { name: 'tenant', scope: 'tenant', method: 'CancelTask', parts: (t) => [t.tenant] },
  { name: 'tenant-method', scope: 'tenant+method', method: 'ListTasks', parts: (t) => [t.tenant] },
  {
    name: 'skill',
    scope: 'skill',
    method: 'SubscribeToTask',
    parts: (t) => (t.skill ? [t.skill] : undefined),
  },
  {
    // A custom key that splits surrogate pairs (code units reversed): lone surrogates that Redis
    // would merge unless the key is made well-formed. Distinct callers, distinct keys.
    name: 'custom',
    scope: {
      name: 'reversed',
      key: (r) => r.caller.split('').reverse().join(''),
      callerScoped: false,
    },
    method: 'GetExtendedAgentCard',
    parts: (t) => [t.caller],
  },
];

const POLICIES: Policy[] = SCOPES.map((s) => ({
  name: s.name,
  kind: 'rate',
  scope: s.scope,
  methods: [s.method],
  limit: 1,
  windowSeconds: 1,
}));

/** Pieces of the strings: separators of the old joins, NUL, lone and paired surrogates, prefixes. */
const ATOMS = [
  'a',
  'b',
  '/',
  ':',
  '|',
  '-',
  '\u0000',
  '\ud800',
  '\udc00',
  '\ud83d\ude00',
  '/skill:',
  'caller:',
  '#sha256:',
  'x',
] as const;
const text = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.array(fc.constantFrom(...ATOMS), { maxLength: 4 }).map((a) => a.join('')),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }) },
  { weight: 1, arbitrary: fc.constantFrom('', '-', `${'y'.repeat(300)}\ud800`, 'y'.repeat(300)) },
);

/** A run: a small pool of strings, and tuples drawing their parts from it (so parts meet often). */
const runArb = fc.array(text, { minLength: 2, maxLength: 5 }).chain((pool) => {
  const pick = fc.nat({ max: pool.length - 1 }).map((i) => pool[i] as string);
  const maybe = fc.option(pick, { nil: undefined, freq: 4 });
  return fc.array(fc.record({ caller: pick, skill: maybe, tenant: maybe, messageId: maybe }), {
    minLength: 2,
    maxLength: 6,
  });
});

const sameParts = (a: readonly (string | undefined)[], b: readonly (string | undefined)[]) =>
  a.length === b.length && a.every((x, i) => x === b[i]);

/** Decisions compared without lease ids (none here: rate policies only). */
const strip = (d: Decision) => (d.admitted ? { ...d, leases: [] } : d);

describe.skipIf(!redisUp)(
  'table keys: distinct identities apart, both stores alike (property)',
  () => {
    let client: Redis;
    const prefix = runPrefix('keys-diff');

    beforeAll(async () => {
      client = await connectRedis();
    });
    afterAll(async () => {
      await deletePrefix(client, prefix);
      client.disconnect();
    });

    it(`${RUNS} runs on both stores: spending one identity never affects another`, async () => {
      const t0 = 1_760_000_000_000;
      const memClock = new ManualClock(t0);
      const redisClock = new ManualClock(t0);
      const memory = new MemoryStore({ policies: POLICIES, clock: memClock, maxKeys: 1_000_000 });
      const redis = new RedisStore({
        client,
        policies: POLICIES,
        clock: redisClock,
        keyPrefix: prefix,
        keyTtlPaddingMs: 600_000,
        onError: 'fail-closed',
        timeoutMs: 10_000,
        logger: false,
      });
      let run = 0;
      let decisions = 0;
      let rejected = 0;
      let copies = 0;
      const started = performance.now();
      try {
        await fc.assert(
          fc.asyncProperty(runArb, async (tuples) => {
            // Each run an hour later (every bucket full again, every hold settled); its messageIds
            // end with the run's number, so records of earlier runs meet none of this run's.
            run++;
            memClock.advance(3_600_000);
            redisClock.advance(3_600_000);
            const inputs: DecisionInput[] = [];
            const expected: boolean[] = [];
            tuples.forEach((t, i) => {
              for (const s of SCOPES) {
                const mine = s.parts(t);
                const input: DecisionInput = {
                  caller: t.caller,
                  method: s.method,
                  ...(t.skill === undefined ? {} : { skill: t.skill }),
                  ...(t.tenant === undefined ? {} : { tenant: t.tenant }),
                  ...(t.messageId === undefined ? {} : { messageId: `${t.messageId}#${run}` }),
                };
                inputs.push(input);
                expected.push(
                  mine === undefined ||
                    !tuples.slice(0, i).some((u) => {
                      const theirs = s.parts(u);
                      return theirs !== undefined && sameParts(mine, theirs);
                    }),
                );
              }
            });
            // One batch per store: Redis gets every decision of the run at once (coalesced in
            // arrival order), then every record.
            const fromMemory = inputs.map((input) => memory.decideSync(input));
            const fromRedis = await Promise.all(inputs.map((input) => redis.decide(input)));
            inputs.forEach((input, i) => {
              const m = fromMemory[i] as Decision;
              expect(strip(fromRedis[i] as Decision), JSON.stringify(input)).toEqual(strip(m));
              expect(m.admitted, `admitted ${JSON.stringify(input)}`).toBe(expected[i]);
            });
            decisions += inputs.length;
            rejected += expected.filter((e) => !e).length;
            const messages = tuples.flatMap((t, i) =>
              t.messageId === undefined
                ? []
                : [
                    {
                      caller: t.caller,
                      messageId: `${t.messageId}#${run}`,
                      fresh: !tuples
                        .slice(0, i)
                        .some((u) => u.caller === t.caller && u.messageId === t.messageId),
                    },
                  ],
            );
            const memSeen = messages.map((m) =>
              memory.rememberMessageSync(m.caller, m.messageId, 60_000),
            );
            const redisSeen = await Promise.all(
              messages.map((m) => redis.rememberMessage(m.caller, m.messageId, 60_000)),
            );
            messages.forEach((m, i) => {
              expect(redisSeen[i], JSON.stringify(m)).toEqual(memSeen[i]);
              expect(memSeen[i]?.fresh, JSON.stringify(m)).toBe(m.fresh);
            });
            copies += messages.filter((m) => !m.fresh).length;
          }),
          { numRuns: RUNS },
        );
      } finally {
        await redis.close();
      }
      const seconds = (performance.now() - started) / 1000;
      // Not an assertion on time: the figure for the report.
      console.log(
        JSON.stringify({ runs: run, storesPerRun: 2, decisions, rejected, copies, seconds }),
      );
      // The runs were not trivial: shared identities were refused, copies recognised.
      expect(rejected).toBeGreaterThan(RUNS);
      expect(copies).toBeGreaterThan(RUNS / 10);
    }, 600_000);

    it('reported usage meets the bucket of its decisions: long and ill-formed callers alike', async () => {
      const policies: Policy[] = [
        { name: 'tokens', kind: 'rate', unit: 'tokens', limit: 100, windowSeconds: 3600 },
      ];
      const clock = new ManualClock(1_760_000_000_000);
      const memory = new MemoryStore({ policies, clock });
      const redis = new RedisStore({
        client,
        policies,
        clock,
        keyPrefix: `${prefix}usage:`,
        onError: 'fail-closed',
        timeoutMs: 10_000,
        logger: false,
      });
      try {
        for (const caller of ['short', 'z'.repeat(300), 'x\ud800']) {
          const input = { caller, method: 'SendMessage' } as const;
          for (const store of [memory, redis]) {
            expect((await store.decide(input)).admitted).toBe(true);
            await store.chargeUsage(input, 100);
            expect((await store.decide(input)).admitted, caller).toBe(false);
          }
        }
      } finally {
        await redis.close();
      }
    });
  },
);
