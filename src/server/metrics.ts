/**
 * @module server/metrics
 * The `a2a-ratelimit/server/metrics` entry: Prometheus metrics for the limiter, plugged in as its
 * `observer`. The only file importing prom-client.
 */

import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Admission } from '../core/rejection.js';
import { rejectionReason, wireDelaySeconds } from '../core/rejection.js';
import type { Store } from '../store/store.js';
import type { LimiterGauges, LimiterObserver } from './limiter-options.js';

/** Modes a store reports: `memory` (in-process), `redis` (shared), or a failure policy (degraded). */
const STORE_MODES = ['memory', 'redis', 'fail-open', 'fail-closed', 'insurance'] as const;

/** What a shared store's `stats()` gives metrics (`RedisStore` has it; read structurally). */
interface StoreStatsLike {
  readonly mode: string;
  readonly errors: number;
  readonly timeouts: number;
}

/** The store's stats when it has them (a `RedisStore`), else undefined (in-process store). */
function storeStats(store: Store): StoreStatsLike | undefined {
  const stats = (store as { stats?: () => unknown }).stats;
  if (typeof stats !== 'function') return undefined;
  const value = stats.call(store) as Partial<StoreStatsLike> | undefined;
  return typeof value?.mode === 'string' ? (value as StoreStatsLike) : undefined;
}

/**
 * The policy an admission is counted under: its tightest rate policy (fewest requests left for
 * its limit), else its first lease's policy, else `none`.
 */
function admissionPolicy(admission: Admission, policyName: (index: number) => string): string {
  let best: { policy: string; share: number } | undefined;
  for (const limit of admission.limits) {
    const share = limit.limit > 0 ? limit.remaining / limit.limit : 0;
    if (best === undefined || share < best.share) best = { policy: limit.policy, share };
  }
  if (best !== undefined) return best.policy;
  const lease = admission.leases[0];
  return lease === undefined ? 'none' : policyName(lease.policyIndex);
}

/**
 * Options of {@link createRateLimitMetrics}.
 */
export interface RateLimitMetricsOptions {
  /** Registry to register in; default a new one. */
  readonly registry?: Registry;
  /** Metric name prefix; default `a2a_ratelimit_`. */
  readonly prefix?: string;
  /**
   * The `caller` label of rejections: at most `maxValues` distinct callers (later ones are
   * `other`); `false` leaves the label out. Default `{ maxValues: 100 }`.
   */
  readonly callerLabel?: false | { readonly maxValues: number };
  /** Retry-delay histogram buckets, seconds. */
  readonly delayBucketsSeconds?: readonly number[];
}

/**
 * The metrics: an observer for `createLimiter({ observer })` and the registry to serve.
 *
 * @example
 * ```ts
 * app.get('/metrics', async (_req, res) => { res.type(metrics.registry.contentType).send(await metrics.registry.metrics()); });
 * ```
 */
interface RateLimitMetrics {
  readonly observer: LimiterObserver;
  readonly registry: Registry;
}

/**
 * Creates the metrics. Names (with the default prefix): `a2a_ratelimit_rejections_total{reason,
 * policy, method, binding, caller}`, `a2a_ratelimit_admissions_total{method, binding, policy}`
 * (one per request, under its tightest rate policy, else its first lease's policy, else `none`),
 * `a2a_ratelimit_deduplicated_total{method, binding}`, `a2a_ratelimit_holds_total{event, policy}`
 * (event `made` / `claimed` / `expired`, as seen by this process), `a2a_ratelimit_retry_delay_seconds{reason,
 * policy}` (the delay each rejection named, in the whole seconds the wire carries) and
 * `a2a_ratelimit_leases_held`; read from the limiter when scraped:
 * `a2a_ratelimit_requests_in_flight` (requests held under overload policies),
 * `a2a_ratelimit_event_loop_delay_seconds` (the delay overload policies see; absent when none reads
 * it), `a2a_ratelimit_store_mode{mode}` (1 for the current mode: `memory`, `redis` when shared,
 * or the failure policy — `fail-open` / `fail-closed` / `insurance` — while degraded),
 * `a2a_ratelimit_store_degraded` (1 while a failure policy answers),
 * `a2a_ratelimit_policy_set_info{version}` (1 for the version of the policies in force) and
 * `a2a_ratelimit_store_errors_total{kind}` (`error` / `timeout`, shared stores).
 *
 * @example
 * ```ts
 * const metrics = createRateLimitMetrics({ callerLabel: { maxValues: 100 } });
 * const limiter = createLimiter({ policies, card, observer: metrics.observer });
 * ```
 */
export function createRateLimitMetrics(options: RateLimitMetricsOptions = {}): RateLimitMetrics {
  const registry = options.registry ?? new Registry();
  const prefix = options.prefix ?? 'a2a_ratelimit_';
  const callerOption = options.callerLabel ?? { maxValues: 100 };
  const withCaller = callerOption !== false;
  const maxCallers = callerOption === false ? 0 : Math.max(0, Math.floor(callerOption.maxValues));
  const callers = new Set<string>();
  const callerLabel = (caller: string): string => {
    if (callers.has(caller)) return caller;
    if (callers.size < maxCallers) {
      callers.add(caller);
      return caller;
    }
    return 'other';
  };

  const rejections = new Counter({
    name: `${prefix}rejections_total`,
    help: 'Requests rejected at admission (nothing was created or started), by reason, policy, method, binding and caller.',
    labelNames: withCaller
      ? ['reason', 'policy', 'method', 'binding', 'caller']
      : ['reason', 'policy', 'method', 'binding'],
    registers: [registry],
  });
  const admissions = new Counter({
    name: `${prefix}admissions_total`,
    help: 'Requests admitted, by method, binding and policy (the tightest rate policy charged, else the first lease policy, else none).',
    labelNames: ['method', 'binding', 'policy'],
    registers: [registry],
  });
  const deduplicated = new Counter({
    name: `${prefix}deduplicated_total`,
    help: 'Copies of already admitted messages answered with the existing task (not run, not charged).',
    labelNames: ['method', 'binding'],
    registers: [registry],
  });
  const holds = new Counter({
    name: `${prefix}holds_total`,
    help: 'Reserved retry slots: made (by a rejection), claimed (by the retry), expired (never claimed).',
    labelNames: ['event', 'policy'],
    registers: [registry],
  });
  const delays = new Histogram({
    name: `${prefix}retry_delay_seconds`,
    help: 'Retry delay named by each rejection, seconds (as sent on the wire).',
    labelNames: ['reason', 'policy'],
    buckets: [...(options.delayBucketsSeconds ?? [1, 2, 5, 10, 30, 60, 120, 300, 900, 3600])],
    registers: [registry],
  });
  const shadowRejections = new Counter({
    name: `${prefix}shadow_rejections_total`,
    help: 'Requests a shadow (dry-run) policy would have refused (admitted all the same), by policy, method and binding.',
    labelNames: ['policy', 'method', 'binding'],
    registers: [registry],
  });
  const leases = new Gauge({
    name: `${prefix}leases_held`,
    help: 'Concurrency and in-flight leases held by this process (open responses and live tasks).',
    registers: [registry],
  });

  let gauges: LimiterGauges | undefined;
  const policyName = (index: number): string => gauges?.policySet().policies[index]?.name ?? 'none';
  new Gauge({
    name: `${prefix}policy_set_info`,
    help: 'The policy set in force: 1 for its version (a content hash, the same on every replica running the same set).',
    labelNames: ['version'],
    registers: [registry],
    collect() {
      this.reset();
      if (gauges !== undefined) this.set({ version: gauges.policySetVersion() }, 1);
    },
  });
  new Gauge({
    name: `${prefix}requests_in_flight`,
    help: 'Requests this process holds in flight under overload policies (an overload input).',
    registers: [registry],
    collect() {
      this.set(gauges?.requestsInFlight() ?? 0);
    },
  });
  new Gauge({
    name: `${prefix}event_loop_delay_seconds`,
    help: 'Event-loop delay overload policies see now, seconds (an overload input; absent when no policy reads it).',
    registers: [registry],
    collect() {
      this.reset();
      const delayMs = gauges?.eventLoopDelayMs();
      if (delayMs !== undefined) this.set(delayMs / 1000);
    },
  });
  const modeOf = (): string | undefined => {
    if (gauges === undefined) return undefined;
    return storeStats(gauges.store)?.mode ?? 'memory';
  };
  new Gauge({
    name: `${prefix}store_mode`,
    help: 'Who decides: 1 for the current mode (memory; redis when shared; fail-open, fail-closed or insurance while degraded).',
    labelNames: ['mode'],
    registers: [registry],
    collect() {
      const mode = modeOf();
      if (mode === undefined) return;
      for (const m of new Set<string>([...STORE_MODES, mode]))
        this.set({ mode: m }, m === mode ? 1 : 0);
    },
  });
  new Gauge({
    name: `${prefix}store_degraded`,
    help: '1 while the shared store is unavailable and its failure policy answers, else 0.',
    registers: [registry],
    collect() {
      const mode = modeOf();
      this.set(mode === undefined || mode === 'memory' || mode === 'redis' ? 0 : 1);
    },
  });
  new Counter({
    name: `${prefix}store_errors_total`,
    help: 'Shared-store calls that failed (kind error) or took longer than the timeout (kind timeout).',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      const stats = gauges === undefined ? undefined : storeStats(gauges.store);
      this.reset();
      this.inc({ kind: 'error' }, stats?.errors ?? 0);
      this.inc({ kind: 'timeout' }, stats?.timeouts ?? 0);
    },
  });

  const observer: LimiterObserver = {
    attached: (limiterGauges) => {
      gauges = limiterGauges;
    },
    admitted: (request, admission) =>
      admissions.inc({
        method: request.method,
        binding: request.binding,
        policy: admissionPolicy(admission, policyName),
      }),
    rejected: (request, rejection) => {
      const reason = rejectionReason(rejection);
      const labels: Record<string, string> = {
        reason,
        policy: rejection.policy,
        method: request.method,
        binding: request.binding,
      };
      if (withCaller) labels.caller = callerLabel(request.caller);
      rejections.inc(labels);
      delays.observe(
        { reason, policy: rejection.policy },
        wireDelaySeconds(rejection.retryAfterMs),
      );
    },
    deduplicated: (request) =>
      deduplicated.inc({ method: request.method, binding: request.binding }),
    holds: (event, policy, count) => holds.inc({ event, policy }, count),
    leasesHeld: (count) => leases.set(count),
    shadowRejected: (request, rejection) =>
      shadowRejections.inc({
        policy: rejection.policy,
        method: request.method,
        binding: request.binding,
      }),
  };
  return { observer, registry };
}
