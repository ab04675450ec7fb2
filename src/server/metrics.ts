/**
 * @module server/metrics
 * Prometheus metrics (prom-client, an optional peer; the only file importing it): rejections by
 * reason, policy, method and caller (caller label capped, or off), admissions, deduplicated
 * copies, holds made / claimed / expired, a retry-delay histogram in seconds and the leases held.
 * Plug it into the limiter as its `observer`.
 */

import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { rejectionReason, wireDelaySeconds } from '../core/rejection.js';
import type { LimiterObserver } from './limiter.js';

/**
 * Options of {@link createRateLimitMetrics}.
 *
 * @example
 * ```ts
 * const options: RateLimitMetricsOptions = { callerLabel: { maxValues: 50 } };
 * ```
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
export interface RateLimitMetrics {
  readonly observer: LimiterObserver;
  readonly registry: Registry;
}

/**
 * Creates the metrics. Names (with the default prefix): `a2a_ratelimit_rejections_total{reason,
 * policy, method, binding, caller}`, `a2a_ratelimit_admissions_total{method, binding}`,
 * `a2a_ratelimit_deduplicated_total{method, binding}`, `a2a_ratelimit_holds_total{event, policy}`
 * (event `made` / `claimed` / `expired`, as seen by this process), `a2a_ratelimit_retry_delay_seconds{reason,
 * policy}` (the delay each rejection named, in the whole seconds the wire carries) and
 * `a2a_ratelimit_leases_held`.
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
    help: 'Requests admitted, by method and binding.',
    labelNames: ['method', 'binding'],
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

  const observer: LimiterObserver = {
    admitted: (request) => admissions.inc({ method: request.method, binding: request.binding }),
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
