/**
 * @module optional-metrics
 * The demo agent's Prometheus metrics when `prom-client` is installed, and none (with the reason)
 * when it is not.
 */

/** The metrics `createRateLimitMetrics` returns. */
type RateLimitMetrics = ReturnType<
  typeof import('a2a-ratelimit/server/metrics')['createRateLimitMetrics']
>;

/** What `serve` prints when metrics are off for want of prom-client. */
export const METRICS_NEED_PROM_CLIENT = 'off: npm install prom-client to serve /metrics';

/**
 * Whether `error` is the module loader's "cannot find package `name`".
 *
 * @example
 * ```ts
 * await import('prom-client').catch((e) => isMissingPackage(e, 'prom-client')); // true when not installed
 * ```
 */
export function isMissingPackage(error: unknown, name: string): boolean {
  const e = error as { code?: unknown; message?: unknown };
  return (
    (e?.code === 'ERR_MODULE_NOT_FOUND' || e?.code === 'MODULE_NOT_FOUND') &&
    typeof e.message === 'string' &&
    e.message.includes(`'${name}'`)
  );
}

/**
 * The agent's metrics (caller label capped at 100 values), or `undefined` when `prom-client` is
 * not installed. Any other failure to load them is thrown.
 *
 * @example
 * ```ts
 * const metrics = await metricsIfInstalled(); // undefined without prom-client
 * ```
 */
export async function metricsIfInstalled(
  load: () => Promise<typeof import('a2a-ratelimit/server/metrics')> = () =>
    import('a2a-ratelimit/server/metrics'),
): Promise<RateLimitMetrics | undefined> {
  try {
    const { createRateLimitMetrics } = await load();
    return createRateLimitMetrics({ callerLabel: { maxValues: 100 } });
  } catch (error) {
    if (isMissingPackage(error, 'prom-client')) return undefined;
    throw error;
  }
}
