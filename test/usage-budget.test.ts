/**
 * Usage budgets through `createLimiter`, on a MemoryStore and on a real Redis: 10,000 tokens per
 * minute per caller, tasks that report 4,000 tokens each: the 3rd task is admitted (the budget is
 * still positive), the 4th refused with the exact time until it is positive again, and after that
 * delay one more is admitted; `RateLimit` r counts tokens; an estimate is charged up front.
 */

import type { Store } from 'a2a-ratelimit';
import {
  compilePolicies,
  encodeRestRejection,
  findDetail,
  type Policy,
  parseErrorBody,
} from 'a2a-ratelimit';
import { RedisStore } from 'a2a-ratelimit/redis';
import { type AdmissionOutcome, createLimiter } from 'a2a-ratelimit/server';
import { ManualClock } from 'a2a-ratelimit/testing';
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

const TOKENS: Policy = {
  name: 'tokens',
  kind: 'rate',
  unit: 'tokens',
  methods: ['SendMessage'],
  limit: 10_000,
  windowSeconds: 60,
};

let client: Redis | undefined;
const prefix = runPrefix('usage');
let seq = 0;
beforeAll(async () => {
  if (redisUp) client = await connectRedis();
});
afterAll(async () => {
  if (client !== undefined) {
    await deletePrefix(client, prefix);
    client.disconnect();
  }
});

const STORES: [string, ((policies: Policy[], clock: ManualClock) => Store) | undefined][] = [
  ['MemoryStore', undefined],
  [
    'RedisStore',
    (policies, clock) =>
      new RedisStore({
        client: client as Redis,
        policies,
        clock,
        keyPrefix: `${prefix}:${++seq}:`,
        keyTtlPaddingMs: 600_000,
        onError: 'fail-closed',
        timeoutMs: 2_000,
      }),
  ],
];

function limiterOn(policies: Policy[], clock: ManualClock, makeStore: (typeof STORES)[number][1]) {
  return createLimiter({
    ...(makeStore === undefined ? { policies } : { store: makeStore(policies, clock) }),
    clock,
    domain: 'agents.example.com',
    eventLoopDelay: false,
  });
}

describe.each(STORES)('usage budgets on %s', (name, makeStore) => {
  it.skipIf(name === 'RedisStore' && !redisUp)(
    '10,000 tokens/min, 4,000 per task: 3 admitted, the 4th refused for exactly the refill, then one more',
    async () => {
      const clock = new ManualClock(1_000_000);
      const limiter = limiterOn([TOKENS], clock, makeStore);
      const alice = { caller: 'alice', method: 'SendMessage' as const };
      const send = (i: number): Promise<AdmissionOutcome> =>
        Promise.resolve(limiter.admit({ ...alice, messageId: `m${i}`, binding: 'rest' }));
      const remaining: string[] = [];
      for (let i = 1; i <= 3; i++) {
        const o = await send(i);
        expect(o.status, `task ${i}`).toBe('admitted');
        if (o.status === 'admitted') {
          remaining.push(o.ticket.headers.ratelimit ?? '');
          o.ticket.end();
        }
        // The task's real use, after it ran: settles the whole budget its admission reserved.
        await limiter.reportUsage(alice, 4_000, { settle: true });
      }
      // r in tokens after each admission's reservation of the whole budget: none left; t until
      // the next token: 6 ms, then (6,000 left before the reservation) 24.006 s, then 48.006 s.
      expect(remaining).toEqual(['"tokens";r=0;t=1', '"tokens";r=0;t=25', '"tokens";r=0;t=49']);
      // 12,000 used of 10,000: 2,000 tokens in debt plus one to spend = 2,001 · 6 ms.
      const fourth = await send(4);
      expect(fourth.status).toBe('rejected');
      if (fourth.status !== 'rejected') return;
      expect(fourth.rejection).toMatchObject({
        policy: 'tokens',
        retryAfterMs: 12_006,
        quota: { limit: 10_000, windowSeconds: 60, unit: 'tokens' },
      });
      expect(fourth.rejection.message).toContain('10000 tokens per 60 s');
      // QuotaFailure names the unit too, never "10000 requests".
      const details =
        parseErrorBody(encodeRestRejection(fourth.rejection, { domain: 'agents.example.com' }).body)
          ?.details ?? [];
      expect(findDetail(details, 'QuotaFailure')?.violations[0]?.description).toBe(
        '10000 tokens per 60 s',
      );
      expect(fourth.rejection.reserved).toBe(false);
      clock.advance(12_005);
      expect((await send(5)).status).toBe('rejected');
      clock.advance(1);
      expect((await send(6)).status).toBe('admitted');
      await limiter.close();
    },
  );

  it.skipIf(name === 'RedisStore' && !redisUp)(
    'charges an estimate up front and admits only while the budget covers it',
    async () => {
      const clock = new ManualClock(1_000_000);
      const limiter = limiterOn(
        [{ ...TOKENS, limit: 100, burst: 100, estimate: 40 } as Policy],
        clock,
        makeStore,
      );
      const statuses: string[] = [];
      for (let i = 0; i < 3; i++) {
        statuses.push(
          (await limiter.admit({ caller: 'bob', method: 'SendMessage', binding: 'jsonrpc' }))
            .status,
        );
      }
      // 40 + 40 fit in 100; a third 40 does not (20 left).
      expect(statuses).toEqual(['admitted', 'admitted', 'rejected']);
      await limiter.close();
    },
  );
});

describe('usage policy validation', () => {
  it('names the policy and field', () => {
    expect(() => compilePolicies([{ ...TOKENS, unit: 'Tokens' }])).toThrow(
      'Policy "tokens": unit must match',
    );
    expect(() => compilePolicies([{ ...TOKENS, estimate: 10_001 }])).toThrow(
      'Policy "tokens": estimate must be an integer from 0 to burst (10000)',
    );
    expect(() =>
      compilePolicies([{ name: 'r', kind: 'rate', limit: 1, windowSeconds: 1, estimate: 1 }]),
    ).toThrow('Policy "r": estimate is for usage policies');
  });
});
