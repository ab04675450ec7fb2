import type { Policy } from 'a2a-ratelimit';
import { type AdmissionOutcome, createLimiter, type Limiter } from 'a2a-ratelimit/server';
import { describe, expect, it } from 'vitest';
import { bothStores } from './fixtures/redis/both-stores.js';
import { probeRedis, REDIS_URL, requireOrSkip } from './fixtures/redis/redis-env.js';

const redisUp = await probeRedis();
requireOrSkip(redisUp, `Redis at ${REDIS_URL}`);

const tasks: Policy = { name: 'tasks', kind: 'concurrency', scope: 'caller', max: 2 };
const rate: Policy = {
  name: 'per-caller',
  kind: 'rate',
  scope: 'caller',
  limit: 1000,
  windowSeconds: 60,
  burst: 1000,
};

const stores = bothStores('attack-live-conc', redisUp);

let n = 0;
const send = (limiter: Limiter, caller = 'alice'): Promise<AdmissionOutcome> =>
  Promise.resolve(
    limiter.admit({ caller, method: 'SendMessage', binding: 'rest', messageId: `m${++n}` }),
  );
const end = (o: AdmissionOutcome) => {
  if (o.status === 'admitted') o.ticket.end();
};

describe.each(Object.keys(stores) as (keyof typeof stores)[])(
  'attack: live concurrency (%s)',
  (kind) => {
    it('leases from before a remove + re-add: the same trace on both stores, no slot freed twice or leaked', async () => {
      const store = stores[kind]([tasks, rate]);
      const limiter = createLimiter({
        store,
        domain: 'agents.example.com',
        eventLoopDelay: false,
        dedup: false,
      });
      const trace: string[] = [];
      const a = await send(limiter);
      const b = await send(limiter);
      trace.push(`before: ${a.status} ${b.status}`);
      await limiter.updatePolicies([rate]);
      await limiter.updatePolicies([rate, tasks]);
      // Documented: the re-added policy starts empty, so two more are admitted.
      const c = await send(limiter);
      const d = await send(limiter);
      const e = await send(limiter);
      trace.push(`re-added: ${c.status} ${d.status} ${e.status}`);
      end(a);
      end(b);
      end(e);
      await new Promise((resolve) => setTimeout(resolve, 50));
      // c and d still run: a third must wait.
      const f = await send(limiter);
      trace.push(`old ended: ${f.status}`);
      end(f);
      end(c);
      end(d);
      await new Promise((resolve) => setTimeout(resolve, 50));
      // Everything ended: the caller's slots must be free again (not held until a lease TTL).
      const g = await send(limiter);
      trace.push(`all ended: ${g.status}`);
      end(g);
      expect(trace).toEqual([
        'before: admitted admitted',
        're-added: admitted admitted rejected',
        'old ended: rejected',
        'all ended: admitted',
      ]);
      await limiter.close();
      await store.close?.();
    });

    it('leases taken under a set stay counted through a change that keeps the policy (no fresh slots)', async () => {
      const store = stores[kind]([tasks, rate]);
      const limiter = createLimiter({
        store,
        domain: 'agents.example.com',
        eventLoopDelay: false,
        dedup: false,
      });
      const held = [await send(limiter), await send(limiter)];
      // Reorder and loosen the other policy: tasks keeps its name and its two live leases.
      await limiter.updatePolicies([{ ...rate, limit: 2000, burst: 2000 }, tasks]);
      expect((await send(limiter)).status).toBe('rejected');
      end(held[0] as AdmissionOutcome);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const next = await send(limiter);
      expect(next.status).toBe('admitted');
      expect((await send(limiter)).status).toBe('rejected');
      end(held[1] as AdmissionOutcome);
      end(next);
      await limiter.close();
      await store.close?.();
    });

    it('a policy that changes kind under one name neither throws on admission nor opens', async () => {
      const store = stores[kind]([{ ...rate, name: 'x', limit: 2, burst: 2, windowSeconds: 3600 }]);
      const limiter = createLimiter({
        store,
        domain: 'agents.example.com',
        eventLoopDelay: false,
        dedup: false,
      });
      await send(limiter, 'bob');
      await send(limiter, 'bob');
      expect((await send(limiter, 'bob')).status).toBe('rejected');
      const changed = await limiter.updatePolicies([{ ...tasks, name: 'x', max: 1 }]).then(
        () => 'changed',
        () => 'refused',
      );
      const first = await send(limiter, 'bob').catch((e: unknown) => `threw ${String(e)}`);
      const second = await send(limiter, 'bob').catch((e: unknown) => `threw ${String(e)}`);
      const statusOf = (o: AdmissionOutcome | string) => (typeof o === 'string' ? o : o.status);
      if (changed === 'refused') {
        // The old rate policy still in force: bob stays spent.
        expect([statusOf(first), statusOf(second)]).toEqual(['rejected', 'rejected']);
      } else {
        // A concurrency policy of max 1: one in, the next refused.
        expect([statusOf(first), statusOf(second)]).toEqual(['admitted', 'rejected']);
      }
      if (typeof first !== 'string') end(first);
      await limiter.close();
      await store.close?.();
    });
  },
);
