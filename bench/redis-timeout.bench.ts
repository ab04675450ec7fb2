/**
 * @module redis-timeout-bench
 * `npm run bench:redis-timeout`: what `RedisStore`'s `timeoutMs` (default 50) measures on this
 * host, quiet and with event-loop stalls. Prints JSON.
 */

import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { RECOMMENDED_IOREDIS_OPTIONS } from '../src/redis/redis-like.js';
import { RedisStore } from '../src/redis/redis-store.js';

/**
 * Method: the round trip of decisions to one Redis (`REDIS_URL`) with 64 in flight — quiet, then
 * with this process's own event loop stalling 20–90 ms every 100 ms (a loaded host) — and how many
 * decisions time out at 50 ms in each phase. Latency is from the write to the reply's callback, so
 * under stalls it includes the stall; the timeout counts only calls whose reply had not arrived by
 * the deadline. Env: `PHASE_MS` (default 4000).
 */
const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const phaseMs = Number(process.env.PHASE_MS ?? 4000);
const prefix = `a2arl-bench:timeout:${Date.now().toString(36)}:`;

const client = new Redis(url, { ...RECOMMENDED_IOREDIS_OPTIONS, lazyConnect: true });
client.on('error', () => {});
await client.connect();

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] as number;
}

async function phase(stalls: boolean) {
  const store = new RedisStore({
    client,
    policies: [
      { name: 'per-caller', kind: 'rate', scope: 'caller', limit: 1_000_000, windowSeconds: 1 },
    ],
    onError: 'insurance',
    timeoutMs: 50,
    retryIntervalMs: 50,
    keyPrefix: `${prefix}${stalls ? 'stall' : 'quiet'}:`,
    logger: false,
  });
  const latencies: number[] = [];
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  const until = performance.now() + phaseMs;
  let stallTimer: ReturnType<typeof setInterval> | undefined;
  if (stalls) {
    stallTimer = setInterval(() => {
      const end = performance.now() + 20 + Math.random() * 70;
      while (performance.now() < end) {
        // this process is busy
      }
    }, 100);
  }
  let n = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (performance.now() < until) {
        const started = performance.now();
        await store.decide({ caller: `c${n++ % 1000}`, method: 'SendMessage' });
        latencies.push(performance.now() - started);
      }
    }),
  );
  clearInterval(stallTimer);
  loop.disable();
  const stats = store.stats();
  await store.close();
  latencies.sort((a, b) => a - b);
  const round = (v: number) => Math.round(v * 100) / 100;
  return {
    decisions: latencies.length,
    latencyMs: {
      p50: round(percentile(latencies, 0.5)),
      p99: round(percentile(latencies, 0.99)),
      p999: round(percentile(latencies, 0.999)),
      max: round(latencies.at(-1) ?? 0),
    },
    eventLoopStallMs: { p99: round(loop.percentile(99) / 1e6), max: round(loop.max / 1e6) },
    timeoutsAt50Ms: stats.timeouts,
    fallbackDecisions: stats.fallbackDecisions,
  };
}

const quiet = await phase(false);
const stalled = await phase(true);
let cursor = '0';
do {
  const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
  cursor = next;
  if (keys.length > 0) await client.unlink(...keys);
} while (cursor !== '0');
client.disconnect();
console.log(JSON.stringify({ quiet, stalled }, null, 2));
