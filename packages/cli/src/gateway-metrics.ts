/**
 * @module gateway-metrics
 * The gateway command's own Prometheus metrics: the upstream latency histogram and failure counter.
 */

import type { UpstreamAnswer } from 'a2a-ratelimit-gateway';
import { Counter, Histogram, type Registry } from 'prom-client';

/** Latency buckets of `a2a_ratelimit_gateway_upstream_seconds`, seconds. */
export const UPSTREAM_BUCKETS_SECONDS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

/** The gateway's metrics: the hook to give `createGateway`. */
export interface GatewayMetrics {
  readonly onUpstream: (answer: UpstreamAnswer) => void;
}

/**
 * Registers in `registry`: `a2a_ratelimit_gateway_upstream_seconds{binding, method, status}`
 * (forwarding to the answer's headers; `status` the upstream's HTTP status code, or `error` when
 * it was unreachable or did not answer in time) and
 * `a2a_ratelimit_gateway_upstream_errors_total{binding, method, error}` (`timeout` /
 * `unreachable`). Every label comes from a bounded set (the gateway forwards A2A methods only).
 *
 * @example
 * ```ts
 * const metrics = createGatewayMetrics(rateLimitMetrics.registry);
 * createGateway({ upstream, limiter, publicUrl, onUpstream: metrics.onUpstream });
 * ```
 */
export function createGatewayMetrics(registry: Registry): GatewayMetrics {
  const latency = new Histogram({
    name: 'a2a_ratelimit_gateway_upstream_seconds',
    help: "Forwarded requests: seconds until the upstream's answer headers (or its failure), by binding, A2A method and status (HTTP code, or error).",
    labelNames: ['binding', 'method', 'status'],
    buckets: [...UPSTREAM_BUCKETS_SECONDS],
    registers: [registry],
  });
  const errors = new Counter({
    name: 'a2a_ratelimit_gateway_upstream_errors_total',
    help: 'Forwarded requests the upstream did not answer: timeout (no headers in time) or unreachable.',
    labelNames: ['binding', 'method', 'error'],
    registers: [registry],
  });
  // Label children bound once per label set (a bounded set: A2A methods × statuses), so a request
  // costs one Map lookup instead of prom-client's label validation and hashing.
  const observers = new Map<string, (seconds: number) => void>();
  const failures = new Map<string, () => void>();
  return {
    onUpstream(answer) {
      const { binding, method, status } = answer;
      const key = `${binding} ${method} ${status}`;
      let observe = observers.get(key);
      if (observe === undefined) {
        const child = latency.labels({ binding, method, status: String(status) });
        observe = (seconds) => child.observe(seconds);
        observers.set(key, observe);
      }
      observe(answer.seconds);
      if (status === 'error') {
        const error = answer.error ?? 'unreachable';
        const errorKey = `${binding} ${method} ${error}`;
        let inc = failures.get(errorKey);
        if (inc === undefined) {
          const child = errors.labels({ binding, method, error });
          inc = () => child.inc();
          failures.set(errorKey, inc);
        }
        inc();
      }
    },
  };
}
