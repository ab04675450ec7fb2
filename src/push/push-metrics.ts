/**
 * @module push-metrics
 * `createPushMetrics`: Prometheus metrics of a `RateLimitedPushSender` (the only push file
 * importing prom-client).
 */

import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { PushCircuitEvent } from './circuit-board.js';
import type { PushDelivery, PushDrop } from './push-drops.js';

/**
 * Options of {@link createPushMetrics}.
 */
export interface PushMetricsOptions {
  /** Registry to register in; default a new one. */
  readonly registry?: Registry;
  /** Metric name prefix; default `a2a_ratelimit_`. */
  readonly prefix?: string;
  /** Delivery-latency buckets, seconds. */
  readonly latencyBucketsSeconds?: readonly number[];
}

/**
 * The hooks to give the sender, and the registry to serve.
 *
 * @example
 * ```ts
 * const metrics = createPushMetrics();
 * const sender = new RateLimitedPushSender(pushStore, { ...metrics.hooks });
 * ```
 */
interface PushMetrics {
  readonly hooks: {
    readonly onDrop: (drop: PushDrop) => void;
    readonly onDelivered: (delivery: PushDelivery) => void;
    readonly onCircuitChange: (event: PushCircuitEvent) => void;
  };
  readonly registry: Registry;
}

/**
 * Creates the metrics. Names (default prefix): `a2a_ratelimit_push_delivered_total{kind}`,
 * `a2a_ratelimit_push_dropped_total{reason, kind}` (reasons as `PUSH_DROP_REASONS`: alert on
 * `refused` — someone registered a forbidden webhook — and on `circuit-open`),
 * `a2a_ratelimit_push_delivery_seconds` (acceptance to 2xx), `a2a_ratelimit_push_circuits_open`
 * (origins whose circuit is open or half-open) and
 * `a2a_ratelimit_push_circuit_changes_total{to}`. No label carries a webhook URL or origin: callers
 * choose those, so they would be unbounded (the log lines and `onCircuitChange` name the origin).
 *
 * @example
 * ```ts
 * const metrics = createPushMetrics({ registry: rateLimitMetrics.registry });
 * new RateLimitedPushSender(pushStore, { policy, ...metrics.hooks });
 * ```
 */
export function createPushMetrics(options: PushMetricsOptions = {}): PushMetrics {
  const registry = options.registry ?? new Registry();
  const prefix = options.prefix ?? 'a2a_ratelimit_';
  const delivered = new Counter({
    name: `${prefix}push_delivered_total`,
    help: 'Push notifications delivered (the webhook answered 2xx), by payload kind.',
    labelNames: ['kind'],
    registers: [registry],
  });
  const dropped = new Counter({
    name: `${prefix}push_dropped_total`,
    help: 'Push notifications not delivered, by reason (coalesced, queue-full, deadline, rejected, retries-exhausted, refused, circuit-open, closed) and payload kind.',
    labelNames: ['reason', 'kind'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: `${prefix}push_delivery_seconds`,
    help: 'Time from accepting a notification to its 2xx answer, seconds.',
    buckets: [...(options.latencyBucketsSeconds ?? [0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300])],
    registers: [registry],
  });
  const open = new Gauge({
    name: `${prefix}push_circuits_open`,
    help: 'Webhook origins whose circuit is open or half-open (nothing or only a probe is sent).',
    registers: [registry],
  });
  const changes = new Counter({
    name: `${prefix}push_circuit_changes_total`,
    help: 'Circuit state changes of webhook origins, by new state.',
    labelNames: ['to'],
    registers: [registry],
  });
  return {
    registry,
    hooks: {
      onDrop: (drop) => dropped.inc({ reason: drop.reason, kind: drop.kind }),
      onDelivered: (delivery) => {
        delivered.inc({ kind: delivery.kind });
        latency.observe(delivery.ageMs / 1000);
      },
      onCircuitChange: (event) => {
        changes.inc({ to: event.to });
        if (event.from === 'closed') open.inc();
        else if (event.to === 'closed') open.dec();
      },
    },
  };
}
