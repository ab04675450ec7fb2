import { describe, expect, it } from 'vitest';
import { isMissingPackage, metricsIfInstalled } from './optional-metrics.js';

/** The loader's own error for a package that is not installed, as Node words it. */
function missing(name: string): Error {
  return Object.assign(
    new Error(
      `Cannot find package '${name}' imported from /app/node_modules/a2a-ratelimit/dist/server/metrics.js`,
    ),
    { code: 'ERR_MODULE_NOT_FOUND' },
  );
}

describe('metricsIfInstalled', () => {
  it('prom-client installed: the metrics', async () => {
    const metrics = await metricsIfInstalled();
    expect(metrics?.registry.contentType).toContain('text/plain');
  });

  it('prom-client missing: none, so serve still runs', async () => {
    await expect(metricsIfInstalled(() => Promise.reject(missing('prom-client')))).resolves.toBe(
      undefined,
    );
  });

  it('any other failure is thrown', async () => {
    await expect(metricsIfInstalled(() => Promise.reject(missing('ioredis')))).rejects.toThrow(
      /'ioredis'/,
    );
    await expect(metricsIfInstalled(() => Promise.reject(new Error('boom')))).rejects.toThrow(
      'boom',
    );
  });

  it('isMissingPackage names the package', () => {
    expect(isMissingPackage(missing('prom-client'), 'prom-client')).toBe(true);
    expect(isMissingPackage(missing('prom-client-x'), 'prom-client')).toBe(false);
    expect(isMissingPackage(new Error("Cannot find package 'prom-client'"), 'prom-client')).toBe(
      false,
    );
  });
});
