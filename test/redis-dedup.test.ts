/**
 * Deduplication across replicas on a real Redis (issue 13): pending records are owned by the
 * replica that admitted the message and live only as long as it renews them; a replica that dies
 * before its executor started leaves a record that a copy elsewhere takes over within seconds; an
 * orphaned record whose task is in the shared task store answers with that task; a late write
 * after a timeout leaves nothing pending; during an outage a copy is recognised (locally, or by
 * the shared task store) or refused with a retryable 503 — never run a second time.
 */

import { DefaultExecutionEventBusManager } from '@a2a-js/sdk/server';
import type { Policy } from 'a2a-ratelimit';
import type { RedisStoreOptions } from 'a2a-ratelimit/redis';
import { RedisStore } from 'a2a-ratelimit/redis';
import {
  type AdmissionOutcome,
  type AdmissionRequest,
  createLimiter,
  type Limiter,
  type LimiterOptions,
  PendingRecordLostError,
  TICKET_HEADER,
} from 'a2a-ratelimit/server';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** The policy a dedup refusal names while the store is unreachable. */
const DEDUP_UNAVAILABLE_POLICY = 'store-unavailable';

import {
  connectRedis,
  deletePrefix,
  haveRedisBinaries,
  probeRedis,
  REDIS_URL,
  type RedisServer,
  requireOrSkip,
  runPrefix,
  startRedisServer,
} from './fixtures/redis/redis-env.js';

const redisUp = await probeRedis();
const binaries = await haveRedisBinaries();
requireOrSkip(redisUp, `Redis at ${REDIS_URL}`);
requireOrSkip(binaries, 'redis-server on PATH');

const POLICIES: Policy[] = [
  { name: 'per-caller', kind: 'rate', scope: 'caller', limit: 600, windowSeconds: 60, burst: 100 },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const send = (messageId: string, caller = 'orchestrator-7'): AdmissionRequest => ({
  caller,
  method: 'SendMessage',
  messageId,
  binding: 'jsonrpc',
});

function statusOf(outcome: AdmissionOutcome): string {
  if (outcome.status === 'rejected') return `rejected:${outcome.rejection.policy}`;
  if (outcome.status === 'duplicate') return `duplicate:${outcome.taskId ?? '-'}`;
  return 'admitted';
}

/** A context as the SDK's routers build it: the ticket travels in the request headers. */
function contextWithTicket(ticketId: string) {
  const headers = { [TICKET_HEADER]: ticketId };
  return { state: new Map<string, unknown>([['headers', headers]]) };
}

/** Starts the SDK's side of an admitted message: the bus, then the task's first event. */
function startTask(manager: DefaultExecutionEventBusManager, ticketId: string, taskId: string) {
  const bus = manager.createOrGetByTaskId(taskId, contextWithTicket(ticketId) as never);
  bus.publish({
    kind: 'task',
    data: { id: taskId, contextId: 'c', status: { state: 2 }, history: [], artifacts: [] },
  } as never);
  return bus;
}

describe.runIf(redisUp && binaries)('deduplication across replicas (RedisStore)', () => {
  let client: Redis;
  const prefix = runPrefix('dedup');
  const limiters: Limiter[] = [];

  /** One replica: its own RedisStore and limiter on the shared prefix. */
  function replica(
    dedup: LimiterOptions['dedup'] = {},
    redis: Redis = client,
    onError: RedisStoreOptions['onError'] = 'fail-closed',
  ): Limiter {
    const store = new RedisStore({
      client: redis,
      policies: POLICIES,
      onError,
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

  it('a copy while the first copy is pending on a live replica is in progress, past the pending TTL too (renewed)', async () => {
    const a = replica({ pendingTtlSeconds: 0.6 });
    const b = replica({ pendingTtlSeconds: 0.6 });
    const first = await a.admit(send('live-1'));
    expect(first.status).toBe('admitted');
    await sleep(1500); // 2.5 pending TTLs: only renewals keep it pending
    const copy = await b.admit(send('live-1'));
    expect(copy.status).toBe('rejected');
    expect(copy.status === 'rejected' && copy.rejection.reason).toBe('MESSAGE_IN_PROGRESS');
  });

  it('a replica that died before its executor started: a copy elsewhere runs it once the pending TTL passed', async () => {
    const a = replica({ pendingTtlSeconds: 0.5 });
    const b = replica({ pendingTtlSeconds: 0.5 });
    expect((await a.admit(send('dies-1'))).status).toBe('admitted');
    await a.close(); // no more renewals: as if the process was killed
    expect(statusOf(await b.admit(send('dies-1')))).toBe('rejected:deduplication');
    await sleep(700);
    const retry = await b.admit(send('dies-1'));
    expect(retry.status).toBe('admitted');
    // B owns it now: a third replica sees it in progress, not orphaned.
    const c = replica({ pendingTtlSeconds: 0.5 });
    expect(statusOf(await c.admit(send('dies-1')))).toBe('rejected:deduplication');
  });

  it('an orphaned record whose task is in the shared task store: copies get that task, looked up once', async () => {
    const a = replica({ pendingTtlSeconds: 0.3 });
    const lookups: string[] = [];
    const findTask = async (r: AdmissionRequest) => {
      lookups.push(r.messageId ?? '');
      return r.messageId === 'ran-1' ? 'task-ran-1' : undefined;
    };
    const b = replica({ pendingTtlSeconds: 0.3, findTask });
    expect((await a.admit(send('ran-1'))).status).toBe('admitted');
    await a.close(); // died after its executor started, before the task id was recorded
    await sleep(500);
    expect(statusOf(await b.admit(send('ran-1')))).toBe('duplicate:task-ran-1');
    const c = replica({ pendingTtlSeconds: 0.3, findTask });
    await sleep(100); // the task id is recorded in the background
    expect(statusOf(await c.admit(send('ran-1')))).toBe('duplicate:task-ran-1');
    expect(lookups).toEqual(['ran-1']);
  });

  it('a replica whose pending record lapsed (store unreachable) does not start the executor', async () => {
    const server: RedisServer = await startRedisServer();
    const own = await connectRedis(server.url);
    try {
      const a = replica({ pendingTtlSeconds: 0.3 }, own);
      const manager = a.trackTasks(new DefaultExecutionEventBusManager());
      const outcome = await a.admit(send('lapsed-1'));
      expect(outcome.status).toBe('admitted');
      if (outcome.status !== 'admitted') return;
      await server.kill();
      await sleep(400);
      expect(() => startTask(manager, outcome.ticket.id, 'task-lapsed')).toThrow(
        PendingRecordLostError,
      );
      outcome.ticket.end();
    } finally {
      own.disconnect();
      await server.stop();
    }
  });

  it('outage: a copy admitted here is recognised locally, one in the task store is found, any other gets a retryable 503', async () => {
    const server: RedisServer = await startRedisServer();
    const own = await connectRedis(server.url);
    try {
      const findTask = async (r: AdmissionRequest) =>
        r.messageId === 'elsewhere-1' ? 'task-elsewhere' : undefined;
      const a = replica({ findTask }, own);
      const manager = a.trackTasks(new DefaultExecutionEventBusManager());
      const first = await a.admit(send('here-1'));
      if (first.status !== 'admitted') throw new Error('not admitted');
      await server.kill();
      startTask(manager, first.ticket.id, 'task-here'); // its task id cannot be written now
      expect(statusOf(await a.admit(send('here-1')))).toBe('duplicate:task-here');
      expect(statusOf(await a.admit(send('elsewhere-1')))).toBe('duplicate:task-elsewhere');
      const unknown = await a.admit(send('unknown-1'));
      expect(statusOf(unknown)).toBe(`rejected:${DEDUP_UNAVAILABLE_POLICY}`);
      if (unknown.status === 'rejected') {
        expect(unknown.rejection.kind).toBe('overload');
        expect(unknown.rejection.retryAfterMs).toBe(1000);
      }
      const runs = replica({ whenStoreUnavailable: 'run' }, own, 'insurance');
      expect((await runs.admit(send('unknown-2'))).status).toBe('admitted');
      // Back (empty: the private server keeps nothing): the outcome that could not be written
      // during the outage is written now, so another replica answers the copy with its task.
      await server.restart();
      const other = await connectRedis(server.url);
      try {
        const b = replica({}, other);
        for (let i = 0; i < 50; i++) {
          await sleep(100);
          if ((await other.keys(`${prefix}d*here-1`)).length > 0) break;
        }
        expect(statusOf(await b.admit(send('here-1')))).toBe('duplicate:task-here');
      } finally {
        other.disconnect();
      }
    } finally {
      own.disconnect();
      await server.stop();
    }
  });

  // On a private redis-server: CLIENT PAUSE stops every client of a server, and the shared one
  // serves the test files running beside this one.
  it('a write that lands after its timeout leaves no pending record (CLIENT PAUSE)', async () => {
    const server: RedisServer = await startRedisServer();
    const slow = await connectRedis(server.url);
    const pauser = await connectRedis(server.url);
    const reader = await connectRedis(server.url);
    try {
      const store = new RedisStore({
        client: slow,
        policies: POLICIES,
        onError: 'insurance',
        keyPrefix: prefix,
        logger: false,
        timeoutMs: 50,
        retryIntervalMs: 100,
      });
      const limiter = createLimiter({ store, domain: 'agents.example.com' });
      limiters.push(limiter);
      await pauser.call('CLIENT', 'PAUSE', '400', 'ALL');
      const during = await limiter.admit(send('late-1'));
      expect(statusOf(during)).toBe(`rejected:${DEDUP_UNAVAILABLE_POLICY}`);
      await sleep(700);
      const keys = await reader.keys(`${prefix}d*late-1`);
      expect(keys).toEqual([]);
      expect((await limiter.admit(send('late-1'))).status).toBe('admitted');
    } finally {
      slow.disconnect();
      pauser.disconnect();
      reader.disconnect();
      await server.stop();
    }
  });
});
