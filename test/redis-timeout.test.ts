/**
 * Store timeouts measure the store (issue 13): a decision whose reply arrived while this
 * process's own event loop was busy is Redis's answer, not a timeout — even when the stall is
 * four times the timeout — while a Redis that really does not answer (CLIENT PAUSE) still times
 * out and falls to the failure policy. Also: insurance after a switch admits at most one burst
 * beyond what the shared state allowed.
 */

import type { Policy } from 'a2a-ratelimit';
import { RECOMMENDED_IOREDIS_OPTIONS, RedisStore } from 'a2a-ratelimit/redis';
import type { Redis } from 'ioredis';
import { Redis as IORedis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectRedis,
  deletePrefix,
  freePort,
  haveRedisBinaries,
  probeRedis,
  REDIS_URL,
  requireOrSkip,
  runPrefix,
  startRedisServer,
} from './fixtures/redis/redis-env.js';

const redisUp = await probeRedis();
requireOrSkip(redisUp, `Redis at ${REDIS_URL}`);
const binaries = await haveRedisBinaries();
requireOrSkip(binaries, 'redis-server and redis-cli on PATH');

const POLICIES: Policy[] = [
  { name: 'per-caller', kind: 'rate', scope: 'caller', limit: 60, windowSeconds: 60, burst: 10 },
];

/** Keeps this thread busy (a stalled event loop), ms. */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

describe.runIf(redisUp)('RedisStore timeouts', () => {
  let client: Redis;
  const prefix = runPrefix('timeout');
  const stores: RedisStore[] = [];
  const store = (replicas = 1) => {
    const s = new RedisStore({
      client,
      policies: POLICIES,
      onError: 'insurance',
      replicas,
      keyPrefix: prefix,
      logger: false,
      timeoutMs: 50,
      retryIntervalMs: 100,
    });
    stores.push(s);
    return s;
  };

  beforeAll(async () => {
    client = await connectRedis();
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await deletePrefix(client, prefix);
    client.disconnect();
  });

  it('a reply that arrived while the event loop stalled 200 ms (timeout 50 ms) is Redis’s answer', async () => {
    const s = store();
    await s.decide({ caller: 'warm', method: 'SendMessage' }); // script loaded, connection warm
    const single = s.decide({ caller: 'stall-1', method: 'SendMessage' });
    stall(200);
    await single;
    // Several in one turn (coalesced, sent at the end of the turn), then a stall.
    const many = Array.from({ length: 5 }, (_, i) =>
      s.decide({ caller: `stall-${i + 2}`, method: 'SendMessage' }),
    );
    await new Promise((r) => setImmediate(r));
    stall(200);
    await Promise.all(many);
    expect(s.stats()).toMatchObject({ timeouts: 0, fallbackDecisions: 0, mode: 'redis' });
  });

  // On a private redis-server: CLIENT PAUSE stops every client of a server, and the shared one
  // serves the test files running beside this one.
  it.runIf(binaries)(
    'a Redis that does not answer still times out within the timeout (CLIENT PAUSE)',
    async () => {
      const server = await startRedisServer();
      const own = await connectRedis(server.url);
      const s = new RedisStore({
        client: own,
        policies: POLICIES,
        onError: 'insurance',
        keyPrefix: prefix,
        logger: false,
        timeoutMs: 50,
        retryIntervalMs: 100,
      });
      stores.push(s);
      await s.decide({ caller: 'warm', method: 'SendMessage' });
      const pauser = await connectRedis(server.url);
      try {
        await pauser.call('CLIENT', 'PAUSE', '300', 'ALL');
        const started = performance.now();
        await s.decide({ caller: 'paused', method: 'SendMessage' });
        const tookMs = performance.now() - started;
        expect(s.stats().timeouts).toBe(1);
        expect(s.stats().mode).toBe('insurance');
        expect(tookMs).toBeLessThan(290); // answered by the failure policy, not by Redis
      } finally {
        pauser.disconnect();
        await s.close();
        own.disconnect();
        await server.stop();
      }
    },
  );

  it('insurance on three replicas admits at most one burst in all (each a third, rounded down)', async () => {
    const down = new IORedis(`redis://127.0.0.1:${await freePort()}`, {
      ...RECOMMENDED_IOREDIS_OPTIONS,
      lazyConnect: true,
      retryStrategy: () => null,
    });
    down.on('error', () => {});
    try {
      let admitted = 0;
      for (let r = 0; r < 3; r++) {
        const s = new RedisStore({
          client: down,
          policies: POLICIES,
          onError: 'insurance',
          replicas: 3,
          keyPrefix: prefix,
          logger: false,
        });
        stores.push(s);
        for (let i = 0; i < 10; i++) {
          if ((await s.decide({ caller: 'burst', method: 'SendMessage' })).admitted) admitted++;
        }
        expect(s.stats().mode).toBe('insurance');
      }
      expect(admitted).toBe(9); // ⌊10 / 3⌋ × 3 ≤ the burst of 10
    } finally {
      down.disconnect();
    }
  });
});
