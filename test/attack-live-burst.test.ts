import type { Policy } from 'a2a-ratelimit';
import { type AdmissionOutcome, createLimiter } from 'a2a-ratelimit/server';
import { describe, expect, it } from 'vitest';
import { bothStores } from './fixtures/redis/both-stores.js';
import { probeRedis, REDIS_URL, requireOrSkip } from './fixtures/redis/redis-env.js';

const redisUp = await probeRedis();
requireOrSkip(redisUp, `Redis at ${REDIS_URL}`);

const perCaller: Policy = {
  name: 'per-caller',
  kind: 'rate',
  scope: 'caller',
  limit: 10,
  windowSeconds: 3600,
  burst: 10,
};
const tasks: Policy = { name: 'tasks', kind: 'concurrency', scope: 'agent', max: 1000 };
const other: Policy = { name: 'other', kind: 'rate', scope: 'agent', limit: 1e5, windowSeconds: 1 };

const stores = bothStores('attack-live-burst', redisUp);

describe.each(Object.keys(stores) as (keyof typeof stores)[])(
  'attack: swap during a burst (%s)',
  (kind) => {
    it('200 concurrent admissions with 5 swaps among them: at most the limit, every lease freed', async () => {
      const store = stores[kind]([perCaller, tasks]);
      const limiter = createLimiter({
        store,
        domain: 'agents.example.com',
        eventLoopDelay: false,
        dedup: false,
      });
      const sets: Policy[][] = [
        [other, tasks, perCaller],
        [perCaller, { ...tasks, max: 999 }],
        [tasks, perCaller, other],
        [{ ...perCaller, limit: 10, burst: 10 }, tasks],
        [perCaller, tasks],
      ];
      const outcomes: Promise<AdmissionOutcome>[] = [];
      const swaps: Promise<void>[] = [];
      for (let i = 0; i < 200; i++) {
        outcomes.push(
          Promise.resolve(
            limiter.admit({
              caller: 'burst',
              method: 'SendMessage',
              binding: 'rest',
              messageId: `m${i}`,
            }),
          ),
        );
        if (i % 40 === 20) swaps.push(limiter.updatePolicies(sets[(i - 20) / 40] as Policy[]));
      }
      const settled = await Promise.all(outcomes);
      await Promise.all(swaps);
      const admitted = settled.filter((o) => o.status === 'admitted');
      expect(admitted.length).toBe(10);
      for (const o of admitted) if (o.status === 'admitted') o.ticket.end();
      await expect.poll(() => limiter.leasesHeld(), { timeout: 10_000 }).toBe(0);
      // The agent-wide concurrency policy holds no lease in the store either: 1000 fit again.
      const probe = await Promise.all(
        Array.from({ length: 1000 }, (_, i) =>
          Promise.resolve(
            limiter.admit({
              caller: `p${i}`,
              method: 'SendMessage',
              binding: 'rest',
              messageId: `p${i}`,
            }),
          ),
        ),
      );
      expect(probe.filter((o) => o.status === 'admitted').length).toBe(1000);
      for (const o of probe) if (o.status === 'admitted') o.ticket.end();
      await limiter.close();
      await store.close?.();
    });
  },
);
