/**
 * Deduplication across replicas on a real Redis, where a review found it lost its way: a
 * decision that throws leaves no pending record behind, and an orphaned message whose task the
 * shared task store holds beyond the lookup's pages is never run again.
 */

import { Task } from '@a2a-js/sdk';
import { InMemoryTaskStore, ServerCallContext } from '@a2a-js/sdk/server';
import type { Policy } from 'a2a-ratelimit';
import { RedisStore } from 'a2a-ratelimit/redis';
import {
  type AdmissionOutcome,
  type AdmissionRequest,
  createLimiter,
  findTaskByMessageId,
  type Limiter,
  type LimiterOptions,
} from 'a2a-ratelimit/server';
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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const send = (messageId: string, caller = 'orchestrator-7'): AdmissionRequest => ({
  caller,
  method: 'SendMessage',
  messageId,
  binding: 'jsonrpc',
});
function statusOf(outcome: AdmissionOutcome): string {
  if (outcome.status === 'rejected') return `rejected:${outcome.rejection.reason}`;
  if (outcome.status === 'duplicate') return `duplicate:${outcome.taskId ?? '-'}`;
  return 'admitted';
}

describe.runIf(redisUp)('review: dedup across replicas', () => {
  let client: Redis;
  const prefix = runPrefix('review-dedup');
  const limiters: Limiter[] = [];
  function replica(policies: Policy[], dedup: LimiterOptions['dedup'] = {}): Limiter {
    const store = new RedisStore({
      client,
      policies,
      onError: 'fail-closed',
      // A slow Redis on a loaded machine is not what these tests are about: no 50 ms refusals.
      timeoutMs: 5_000,
      keyPrefix: prefix,
      logger: false,
      retryIntervalMs: 100,
    });
    const limiter = createLimiter({ store, domain: 'agents.example.com', dedup });
    limiters.push(limiter);
    return limiter;
  }
  beforeAll(async () => {
    client = await connectRedis();
  });
  afterAll(async () => {
    await Promise.all(limiters.map((l) => l.close()));
    await deletePrefix(client, prefix);
    client.disconnect();
  });

  it('a decision that throws (a policy key function) leaves no pending record behind: a retry later is decided', async () => {
    let broken = true;
    const policies: Policy[] = [
      {
        name: 'per-tenant',
        kind: 'rate',
        scope: {
          name: 'tenant-key',
          callerScoped: false,
          key: (r) => {
            if (broken) throw new Error('tenant directory unavailable');
            return r.caller;
          },
        },
        limit: 600,
        windowSeconds: 60,
      },
    ];
    const a = replica(policies, { pendingTtlSeconds: 0.3 });
    const b = replica(policies, { pendingTtlSeconds: 0.3 });
    await expect(Promise.resolve().then(() => a.admit(send('throws-1')))).rejects.toThrow();
    broken = false;
    await sleep(1500); // 5 pending TTLs: nothing ran, nothing should still be pending
    expect(statusOf(await b.admit(send('throws-1')))).toBe('admitted');
  });

  it('an orphaned message whose task is in the task store, but older than the newest 1,000 tasks of its caller, is not run again', async () => {
    const policies: Policy[] = [
      { name: 'per-caller', kind: 'rate', scope: 'caller', limit: 6000, windowSeconds: 60 },
    ];
    const taskStore = new InMemoryTaskStore();
    const ctx = (caller: string) =>
      new ServerCallContext({ user: { isAuthenticated: true, userName: caller } });
    const findTask = findTaskByMessageId(taskStore, { contextOf: (r) => ctx(r.caller) });
    const a = replica(policies, { pendingTtlSeconds: 0.3, findTask });
    const b = replica(policies, { pendingTtlSeconds: 0.3, findTask });
    expect((await a.admit(send('busy-1'))).status).toBe('admitted');
    // A's executor started and saved its task (message busy-1 in its history), then A died
    // before the task id reached Redis (docs/redis.md: findTask is what covers this).
    const taskOf = (id: string, messageId: string, atMs: number) =>
      Task.fromJSON({
        id,
        contextId: `c-${id}`,
        status: { state: 'TASK_STATE_WORKING', timestamp: new Date(atMs).toISOString() },
        history: [{ messageId, role: 'ROLE_USER', parts: [{ text: 'x' }] }],
      });
    await taskStore.save(taskOf('task-busy-1', 'busy-1', 1_000), ctx('orchestrator-7'));
    for (let i = 0; i < 1001; i++) {
      await taskStore.save(taskOf(`other-${i}`, `o-${i}`, 2_000 + i), ctx('orchestrator-7'));
    }
    await a.close();
    await sleep(700);
    // Past the pages the lookup reads it cannot say "no task": the copy is told to come back,
    // never run a second time.
    expect(statusOf(await b.admit(send('busy-1')))).toBe('rejected:MESSAGE_IN_PROGRESS');
  });
});
