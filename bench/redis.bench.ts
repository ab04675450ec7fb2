/**
 * @module redis-bench
 * `npm run bench:redis`: decisions per second of `RedisStore` against rate-limiter-flexible's
 * `RateLimiterRedis` and a floor. Prints JSON.
 */

import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { RECOMMENDED_IOREDIS_OPTIONS } from '../src/redis/redis-like.js';
import { RedisStore } from '../src/redis/redis-store.js';

/**
 * Method: one Redis (`REDIS_URL`), rate-limiter-flexible on the same Redis and the same ioredis
 * client, the floor `PING` and a trivial `EVALSHA`. Every measurement runs once per round, rounds
 * interleave the contenders, medians are reported; all measured calls are admitted (the common
 * path). One JSON line per round and, last, one JSON object with the medians and ratios. Env:
 * `ROUNDS` (default 7), `ROUND_MS` (default 800).
 */
const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const rounds = Number(process.env.ROUNDS ?? 7);
const roundMs = Number(process.env.ROUND_MS ?? 800);
const KEYS = 1000;
const prefix = `a2arl-bench:${Date.now().toString(36)}:`;

const client = new Redis(url, { ...RECOMMENDED_IOREDIS_OPTIONS, lazyConnect: true });
client.on('error', () => {});
await client.connect();

const onePolicy = new RedisStore({
  client,
  policies: [
    { name: 'per-caller', kind: 'rate', scope: 'caller', limit: 1_000_000, windowSeconds: 1 },
  ],
  onError: 'fail-closed',
  timeoutMs: 5_000,
  keyPrefix: `${prefix}one:`,
  logger: false,
});
const threePolicies = new RedisStore({
  client,
  policies: [
    { name: 'per-caller', kind: 'rate', scope: 'caller', limit: 1_000_000, windowSeconds: 1 },
    { name: 'per-tenant', kind: 'rate', scope: 'tenant', limit: 1_000_000, windowSeconds: 1 },
    { name: 'agent', kind: 'rate', scope: 'agent', limit: 1_000_000, windowSeconds: 1 },
  ],
  onError: 'fail-closed',
  timeoutMs: 5_000,
  keyPrefix: `${prefix}three:`,
  logger: false,
});
// Issue 14: a tiered caller policy (decided as tier pro), a token budget and a tenant policy.
const tieredBudget = new RedisStore({
  client,
  policies: [
    {
      name: 'per-caller',
      kind: 'rate',
      defaultTier: 'free',
      tiers: {
        free: { limit: 1_000_000, windowSeconds: 1 },
        pro: { limit: 1_000_000, windowSeconds: 1 },
      },
    },
    // One token reserved per admission (without an estimate a usage policy reserves its whole burst).
    {
      name: 'tokens',
      kind: 'rate',
      unit: 'tokens',
      estimate: 1,
      limit: 1_000_000,
      windowSeconds: 1,
    },
    { name: 'per-tenant', kind: 'rate', scope: 'tenant', limit: 1_000_000, windowSeconds: 1 },
  ],
  onError: 'fail-closed',
  timeoutMs: 5_000,
  keyPrefix: `${prefix}tiered:`,
  logger: false,
});
// Tiers × units: the token budget itself tiered (decided as tier pro), next to a request policy;
// its callers also report usage (`chargeUsage`, the script's mode g: one round trip per report).
const tieredUsage = new RedisStore({
  client,
  policies: [
    { name: 'per-caller', kind: 'rate', scope: 'caller', limit: 1_000_000, windowSeconds: 1 },
    {
      name: 'tokens',
      kind: 'rate',
      unit: 'tokens',
      estimate: 1,
      defaultTier: 'free',
      tiers: {
        free: { limit: 1_000_000, windowSeconds: 1 },
        pro: { limit: 10_000_000, windowSeconds: 10 },
      },
    },
  ],
  onError: 'fail-closed',
  timeoutMs: 5_000,
  keyPrefix: `${prefix}tiered-usage:`,
  logger: false,
});
const rlf = new RateLimiterRedis({
  storeClient: client,
  points: 1_000_000_000,
  duration: 1,
  keyPrefix: `${prefix}rlf`,
});
const trivialSha = (await client.script('LOAD', 'return 1')) as string;

const callers = Array.from({ length: KEYS }, (_, i) => `caller-${i}`);
let next = 0;
const nextCaller = () => callers[next++ % KEYS] as string;

type Op = () => Promise<unknown>;

const ops: Record<string, Op> = {
  ours: async () => {
    const d = await onePolicy.decide({ caller: nextCaller(), method: 'GetTask' });
    if (!d.admitted) throw new Error('bench: ours rejected');
  },
  oursThree: async () => {
    const d = await threePolicies.decide({
      caller: nextCaller(),
      tenant: 'acme',
      method: 'GetTask',
    });
    if (!d.admitted) throw new Error('bench: ours (3 policies) rejected');
  },
  oursTieredBudget: async () => {
    const d = await tieredBudget.decide({
      caller: nextCaller(),
      tenant: 'acme',
      tier: 'pro',
      method: 'GetTask',
    });
    if (!d.admitted) throw new Error('bench: ours (tiers + budget) rejected');
  },
  oursTieredUsage: async () => {
    const d = await tieredUsage.decide({ caller: nextCaller(), tier: 'pro', method: 'GetTask' });
    if (!d.admitted) throw new Error('bench: ours (tiered token budget) rejected');
  },
  usageReport: () =>
    tieredUsage.chargeUsage({ caller: nextCaller(), tier: 'pro', method: 'GetTask' }, 1),
  rlf: () => rlf.consume(nextCaller()),
  ping: () => client.ping(),
  evalsha: () => client.evalsha(trivialSha, 0),
};

/** Completed operations per second with `concurrency` loops for `roundMs`. */
async function measure(op: Op, concurrency: number): Promise<number> {
  let done = 0;
  const end = performance.now() + roundMs;
  const loop = async () => {
    while (performance.now() < end) {
      await op();
      done++;
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, loop));
  return done / ((performance.now() - start) / 1000);
}

const plan: [key: string, op: string, concurrency: number][] = [
  ['oursSeq', 'ours', 1],
  ['rlfSeq', 'rlf', 1],
  ['oursC64', 'ours', 64],
  ['rlfC64', 'rlf', 64],
  ['oursC64ThreePolicies', 'oursThree', 64],
  ['oursC64TieredBudget', 'oursTieredBudget', 64],
  ['oursC64TieredUsage', 'oursTieredUsage', 64],
  ['usageReportC64', 'usageReport', 64],
  ['pingC64', 'ping', 64],
  ['evalshaC64', 'evalsha', 64],
];

// Warm-up: JIT, script caches, connection.
for (const [, op, c] of plan) {
  const fn = ops[op] as Op;
  await Promise.all(
    Array.from({ length: c }, async () => {
      for (let i = 0; i < 200; i++) await fn();
    }),
  );
}

const samples: Record<string, number[]> = {};
for (let round = 0; round < rounds; round++) {
  // Interleave: rotate the order every round so no contender always runs first or last.
  const order = plan.map((_, i) => plan[(i + round) % plan.length] as (typeof plan)[number]);
  const row: Record<string, number> = {};
  for (const [key, op, c] of order) {
    const perSecond = await measure(ops[op] as Op, c);
    row[key] = Math.round(perSecond);
    const list = samples[key] ?? [];
    list.push(perSecond);
    samples[key] = list;
  }
  console.log(JSON.stringify({ round, ...row }));
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, Math.round(median(v))]));
const stats = onePolicy.stats();
console.log(
  JSON.stringify({
    unit: 'decisions/s (median)',
    rounds,
    roundMs,
    node: process.version,
    redis: ((await client.info('server')).match(/redis_version:(\S+)/) ?? [])[1],
    ...m,
    ratioOursOverRlfC64: Number(((m.oursC64 ?? 0) / (m.rlfC64 ?? 1)).toFixed(3)),
    ratioOursOverRlfSeq: Number(((m.oursSeq ?? 0) / (m.rlfSeq ?? 1)).toFixed(3)),
    ratioOursOverPingC64: Number(((m.oursC64 ?? 0) / (m.pingC64 ?? 1)).toFixed(3)),
    roundTripsPerDecision: 1,
    oursFallbackDecisions:
      stats.fallbackDecisions +
      threePolicies.stats().fallbackDecisions +
      tieredBudget.stats().fallbackDecisions +
      tieredUsage.stats().fallbackDecisions,
  }),
);

// Clean up the bench keys.
let cursor = '0';
do {
  const [nextCursor, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
  cursor = nextCursor;
  if (keys.length > 0) await client.unlink(...keys);
} while (cursor !== '0');
client.disconnect();
