/**
 * Metrics an operator can graph: a limiter with metrics exports the overload inputs, the store's
 * mode and errors and `policy` on admissions; every metric the shipped Grafana dashboard and the
 * alert rules query is one the code exports; `promtool check rules` accepts docs/alerts.yml.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { Policy } from 'a2a-ratelimit';
import { RECOMMENDED_IOREDIS_OPTIONS, RedisStore } from 'a2a-ratelimit/redis';
import { createLimiter } from 'a2a-ratelimit/server';
import { createRateLimitMetrics } from 'a2a-ratelimit/server/metrics';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  haveRedisBinaries,
  IS_CI,
  type RedisServer,
  requireOrSkip,
  runPrefix,
  startRedisServer,
} from './fixtures/redis/redis-env.js';

const run = promisify(execFile);

const POLICIES: Policy[] = [
  { name: 'per-caller', kind: 'rate', scope: 'caller', limit: 2, windowSeconds: 60, burst: 2 },
  { name: 'wide', kind: 'rate', scope: 'agent', limit: 1000, windowSeconds: 60, burst: 1000 },
  { name: 'agent-overload', kind: 'overload', maxInFlight: 50, maxEventLoopDelayMs: 5000 },
];

interface Sample {
  readonly name: string;
  readonly labels: Record<string, string | number>;
  readonly value: number;
}

/** Every sample the registry exports now, by metric name. */
async function samples(
  metrics: ReturnType<typeof createRateLimitMetrics>,
): Promise<Map<string, Sample[]>> {
  const out = new Map<string, Sample[]>();
  for (const metric of await metrics.registry.getMetricsAsJSON()) {
    const list = (
      metric.values as { labels: Sample['labels']; value: number; metricName?: string }[]
    ).map((v) => ({ name: v.metricName ?? metric.name, labels: v.labels, value: v.value }));
    out.set(metric.name, list);
  }
  return out;
}

/** The metric names a PromQL text uses (ours only), histogram series mapped to their metric. */
function metricNamesIn(expr: string): string[] {
  return [...expr.matchAll(/\ba2a_ratelimit_[a-z0-9_]+/g)].map((m) =>
    m[0].replace(/_(bucket|sum|count)$/, ''),
  );
}

describe('metrics: overload inputs, policy on admissions, in-process store mode', () => {
  it('exports in-flight requests, event-loop delay, store mode memory, and admissions by policy', async () => {
    const metrics = createRateLimitMetrics();
    const limiter = createLimiter({
      policies: POLICIES,
      domain: 'agents.example.com',
      observer: metrics.observer,
      eventLoopDelay: () => 12,
      leases: { holdUntil: { 'agent-overload': 'response' } },
    });
    try {
      const outcomes = [];
      for (let i = 0; i < 3; i++) {
        outcomes.push(await limiter.admit({ caller: 'alice', method: 'GetTask', binding: 'rest' }));
      }
      expect(outcomes.map((o) => o.status)).toEqual(['admitted', 'admitted', 'rejected']);
      const byName = await samples(metrics);
      expect(byName.get('a2a_ratelimit_requests_in_flight')?.[0]?.value).toBe(2);
      expect(byName.get('a2a_ratelimit_event_loop_delay_seconds')?.[0]?.value).toBeCloseTo(0.012);
      const modes = byName.get('a2a_ratelimit_store_mode') ?? [];
      expect(modes.find((s) => s.value === 1)?.labels.mode).toBe('memory');
      expect(byName.get('a2a_ratelimit_store_degraded')?.[0]?.value).toBe(0);
      // Counted once per request, under the tightest rate policy (per-caller: 2 per minute).
      const admitted = byName.get('a2a_ratelimit_admissions_total') ?? [];
      expect(admitted).toEqual([
        {
          name: 'a2a_ratelimit_admissions_total',
          labels: { method: 'GetTask', binding: 'rest', policy: 'per-caller' },
          value: 2,
        },
      ]);
      for (const o of outcomes) if (o.status === 'admitted') o.ticket.end();
      const after = await samples(metrics);
      expect(after.get('a2a_ratelimit_requests_in_flight')?.[0]?.value).toBe(0);
    } finally {
      await limiter.close();
    }
  });

  it('shows the version of the policy set in force, and names policies of the new set after a live change', async () => {
    const metrics = createRateLimitMetrics();
    const limiter = createLimiter({
      policies: POLICIES,
      domain: 'agents.example.com',
      observer: metrics.observer,
    });
    try {
      const before = limiter.policySetVersion;
      expect((await samples(metrics)).get('a2a_ratelimit_policy_set_info')).toEqual([
        { name: 'a2a_ratelimit_policy_set_info', labels: { version: before }, value: 1 },
      ]);
      // A new first policy: admissions are counted under its name, not the old index's.
      await limiter.updatePolicies([
        { name: 'per-skill', kind: 'rate', scope: 'caller', limit: 5, windowSeconds: 60 },
        ...POLICIES.slice(1),
      ]);
      expect(limiter.policySetVersion).not.toBe(before);
      const o = await limiter.admit({ caller: 'carol', method: 'GetTask', binding: 'grpc' });
      if (o.status === 'admitted') o.ticket.end();
      const byName = await samples(metrics);
      expect(byName.get('a2a_ratelimit_policy_set_info')).toEqual([
        {
          name: 'a2a_ratelimit_policy_set_info',
          labels: { version: limiter.policySetVersion },
          value: 1,
        },
      ]);
      expect(byName.get('a2a_ratelimit_admissions_total')?.[0]?.labels.policy).toBe('per-skill');
    } finally {
      await limiter.close();
    }
  });
});

const binaries = await haveRedisBinaries();
requireOrSkip(binaries, 'redis-server on PATH');

describe.skipIf(!binaries)('metrics: a shared store degraded by its failure policy', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('reports mode redis, then the failure policy and the errors once Redis is gone', async () => {
    const client = new Redis(server.url, { ...RECOMMENDED_IOREDIS_OPTIONS, lazyConnect: true });
    client.on('error', () => undefined); // the kill below is deliberate
    await client.connect();
    const store = new RedisStore({
      client,
      policies: POLICIES,
      onError: 'insurance',
      keyPrefix: runPrefix('metrics'),
      logger: false,
      quitClientOnClose: true,
      // Mode `redis` must hold until the kill: no 50 ms timeout on a loaded machine (the offline
      // queue is off, so calls after the kill still fail at once).
      timeoutMs: 2_000,
    });
    const metrics = createRateLimitMetrics();
    const limiter = createLimiter({
      store,
      domain: 'agents.example.com',
      observer: metrics.observer,
    });
    try {
      const first = await limiter.admit({ caller: 'bob', method: 'GetTask', binding: 'jsonrpc' });
      expect(first.status).toBe('admitted');
      if (first.status === 'admitted') first.ticket.end();
      let byName = await samples(metrics);
      expect(byName.get('a2a_ratelimit_store_mode')?.find((s) => s.value === 1)?.labels.mode).toBe(
        'redis',
      );
      expect(byName.get('a2a_ratelimit_store_degraded')?.[0]?.value).toBe(0);

      await server.kill();
      for (let i = 0; i < 20 && store.stats().mode === 'redis'; i++) {
        const o = await limiter.admit({ caller: 'bob', method: 'GetTask', binding: 'jsonrpc' });
        if (o.status === 'admitted') o.ticket.end();
        await new Promise((r) => setTimeout(r, 50));
      }
      byName = await samples(metrics);
      expect(byName.get('a2a_ratelimit_store_mode')?.find((s) => s.value === 1)?.labels.mode).toBe(
        'insurance',
      );
      expect(byName.get('a2a_ratelimit_store_degraded')?.[0]?.value).toBe(1);
      const errors = byName.get('a2a_ratelimit_store_errors_total') ?? [];
      const failed = errors.reduce((n, s) => n + s.value, 0);
      expect(failed).toBe(store.stats().errors + store.stats().timeouts);
      expect(failed).toBeGreaterThan(0);
    } finally {
      await limiter.close();
    }
  });
});

const promtool = await run('promtool', ['--version']).then(
  () => true,
  () => false,
);
if (!promtool && IS_CI)
  throw new Error('CI=true but promtool (Debian package prometheus) is not on PATH');
describe('docs/grafana-dashboard.json and docs/alerts.yml query only exported metrics', () => {
  it('every metric a panel or an alert queries is exported by a limiter with metrics', async () => {
    const metrics = createRateLimitMetrics();
    const limiter = createLimiter({
      policies: POLICIES,
      domain: 'agents.example.com',
      observer: metrics.observer,
      eventLoopDelay: () => 1,
    });
    try {
      for (let i = 0; i < 3; i++) {
        const o = await limiter.admit({ caller: 'carol', method: 'SendMessage', binding: 'grpc' });
        if (o.status === 'admitted') o.ticket.end();
      }
      const exported = new Set((await samples(metrics)).keys());
      const dashboard = JSON.parse(await readFile('docs/grafana-dashboard.json', 'utf8')) as {
        panels: { title: string; targets: { expr: string }[] }[];
      };
      const titles = dashboard.panels.map((p) => p.title.toLowerCase()).join(' | ');
      for (const needed of [
        'reason and policy',
        'top callers',
        'in flight',
        'event-loop',
        'store mode',
        'retry delays',
      ]) {
        expect(titles).toContain(needed);
      }
      const queried = new Set<string>();
      for (const panel of dashboard.panels) {
        expect(panel.targets.length).toBeGreaterThan(0);
        for (const target of panel.targets)
          for (const name of metricNamesIn(target.expr)) queried.add(name);
      }
      const alerts = await readFile('docs/alerts.yml', 'utf8');
      const exprs = [...alerts.matchAll(/expr:\s*(>-\n(?:\s{10,}.*\n)+|.*)/g)].map(
        (m) => m[1] ?? '',
      );
      for (const expr of exprs) for (const name of metricNamesIn(expr)) queried.add(name);
      expect(queried.size).toBeGreaterThan(8);
      expect([...queried].filter((name) => !exported.has(name))).toEqual([]);
      expect(alerts).toContain('a2a_ratelimit_store_degraded');
    } finally {
      await limiter.close();
    }
  });

  it.skipIf(!promtool)('promtool check rules docs/alerts.yml succeeds', async () => {
    const { stdout } = await run('promtool', ['check', 'rules', 'docs/alerts.yml']);
    expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
  });
});
