/**
 * Shadow (dry-run) policies through `createLimiter`, on a MemoryStore and on a real Redis: a
 * shadow policy at 1/min sees a flood and refuses nothing; the metrics count exactly the
 * refusals it would have made; the enforced policy's bucket is charged once per admission; the
 * log names what would have been refused, at most one line per policy per second.
 */

import type { Policy, Store } from 'a2a-ratelimit';
import { RedisStore } from 'a2a-ratelimit/redis';
import { type AdmissionOutcome, createLimiter } from 'a2a-ratelimit/server';
import { createRateLimitMetrics } from 'a2a-ratelimit/server/metrics';
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
import { publishedParams } from './rate-limit-card.helpers.js';

const redisUp = await probeRedis();
requireOrSkip(redisUp, `Redis at ${REDIS_URL}`);

const POLICIES: Policy[] = [
  {
    name: 'per-caller',
    kind: 'rate',
    methods: ['SendMessage'],
    limit: 60,
    windowSeconds: 60,
    burst: 5,
  },
  {
    name: 'trial',
    kind: 'rate',
    methods: ['SendMessage'],
    limit: 1,
    windowSeconds: 60,
    mode: 'shadow',
  },
  { name: 'trial-tasks', kind: 'concurrency', methods: ['SendMessage'], max: 1, mode: 'shadow' },
];

let client: Redis | undefined;
const prefix = runPrefix('shadow');
beforeAll(async () => {
  if (redisUp) client = await connectRedis();
});
afterAll(async () => {
  if (client !== undefined) {
    await deletePrefix(client, prefix);
    client.disconnect();
  }
});

const STORES = [
  ['MemoryStore', undefined],
  [
    'RedisStore',
    (clock: ManualClock): Store =>
      new RedisStore({
        client: client as Redis,
        policies: POLICIES,
        clock,
        keyPrefix: `${prefix}:`,
        keyTtlPaddingMs: 600_000,
        onError: 'fail-closed',
        timeoutMs: 2_000,
      }),
  ],
] as const;

describe.each(STORES)('shadow policies on %s', (name, makeStore) => {
  it.skipIf(name === 'RedisStore' && !redisUp)(
    'refuse nothing, count every would-be refusal exactly, charge the enforced bucket once',
    async () => {
      const clock = new ManualClock(1_000_000);
      const metrics = createRateLimitMetrics();
      const lines: string[] = [];
      const limiter = createLimiter({
        ...(makeStore === undefined ? { policies: POLICIES } : { store: makeStore(clock) }),
        clock,
        domain: 'agents.example.com',
        eventLoopDelay: false,
        dedup: false,
        observer: metrics.observer,
        shadowLog: (line) => lines.push(line),
      });
      const outcomes: AdmissionOutcome[] = [];
      for (let i = 0; i < 10; i++) {
        outcomes.push(
          await limiter.admit({
            caller: 'a',
            method: 'SendMessage',

            binding: 'rest',
          }),
        );
      }
      // (No messageIds: no refused request holds a slot.) The enforced burst of 5 decides alone: 5 admitted, 5 refused by per-caller.
      expect(outcomes.map((o) => o.status)).toEqual([
        ...Array<string>(5).fill('admitted'),
        ...Array<string>(5).fill('rejected'),
      ]);
      for (const o of outcomes) {
        if (o.status === 'rejected') expect(o.rejection.policy).toBe('per-caller');
      }
      // per-caller charged once per admission (r = 4, 3, 2, 1, 0); the shadow states never in the headers.
      expect(
        outcomes.flatMap((o) =>
          o.status === 'admitted' ? [o.ticket.headers.ratelimit ?? ''] : [],
        ),
      ).toEqual([0, 1, 2, 3, 4].map((k) => `"per-caller";r=${4 - k};t=1`));
      const text = await metrics.registry.metrics();
      // Of the 5 admitted, the shadow 1/min rate took the 1st and would have refused 4; the
      // shadow concurrency (max 1) is all-or-nothing with it: it took one lease, with the 1st.
      expect(text).toContain(
        'a2a_ratelimit_shadow_rejections_total{policy="trial",method="SendMessage",binding="rest"} 4',
      );
      expect(text).toContain(
        'a2a_ratelimit_rejections_total{reason="RATE_LIMIT_EXCEEDED",policy="per-caller",method="SendMessage",binding="rest",caller="a"} 5',
      );
      // One line for the first second, naming the policy, the subject and the method.
      expect(lines).toEqual([
        'a2a-ratelimit: shadow policy trial would have refused caller:a SendMessage, retry in 60000 ms (not refused: dry run)',
      ]);
      clock.advance(1_000);
      await limiter.admit({
        caller: 'a',
        method: 'SendMessage',

        binding: 'rest',
      });
      expect(lines[1]).toMatch(
        /^a2a-ratelimit: shadow policy trial would have refused caller:a SendMessage, retry in 59000 ms .*; 3 more since the last line$/,
      );
      // Shadow policies are left off the card: no client plans with them.
      expect(publishedParams(limiter).policies.map((p) => p.name)).toEqual(['per-caller']);
      for (const o of outcomes) if (o.status === 'admitted') o.ticket.end();
      await limiter.close();
    },
  );
});
