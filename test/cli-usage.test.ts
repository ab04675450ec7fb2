/**
 * CLI usage as a user meets it (child processes from source, loopback only): a config file's
 * every problem is listed, unknown fields included; a negative number after a flag is that flag's
 * value (and gets a clear error about the value); no command prints the help and exits non-zero;
 * `serve --redis-prefix` puts every key under the prefix it names.
 */

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { runCliProcess, startServeProcess } from './cli-process.helpers.js';
import { probeRedis, REDIS_URL } from './fixtures/redis/redis-env.js';

const dir = mkdtempSync(join(tmpdir(), 'a2a-ratelimit-cli-usage-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('config errors list every problem', () => {
  it('a misspelt windowSeconds names both the missing field and the unknown one', async () => {
    const path = join(dir, 'typo.yaml');
    writeFileSync(
      path,
      'policies:\n  - name: p\n    kind: rate\n    limit: 5\n    windowSecond: 60\nextra: 1\n',
    );
    const run = await runCliProcess(['serve', '--port', '0', '--grpc-port', '0', '--config', path]);
    expect(run.code).toBe(2);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe(
      `a2a-ratelimit: ${path}: 3 problems: policies[0].windowSeconds: is required; policies[0]: unknown field "windowSecond"; unknown field "extra"`,
    );
    expect(run.stderr).not.toContain('more problem');
  });
});

describe('negative numbers are values', () => {
  it('`simulate --callers -5` says what is wrong with the value, not "unknown option"', async () => {
    const run = await runCliProcess(['simulate', '--callers', '-5']);
    expect(run.code).toBe(2);
    expect(run.stderr.trimEnd()).toBe(
      'a2a-ratelimit: --callers must be a positive number, got "-5"',
    );
  });
});

describe('no command', () => {
  it('prints the help and exits non-zero', async () => {
    const run = await runCliProcess([]);
    expect(run.code).toBe(2);
    expect(run.stdout).toContain('Usage:');
    expect(run.stdout).toContain('Commands:');
    expect(run.stderr.trimEnd()).toBe(
      'a2a-ratelimit: no command given; commands: demo, serve, simulate, probe',
    );
  });
});

describe('serve --redis-prefix', () => {
  it('refuses a prefix without --redis, and one with braces', async () => {
    const [alone, braces] = await Promise.all([
      runCliProcess(['serve', '--redis-prefix', 'x:']),
      runCliProcess(['serve', '--redis', REDIS_URL, '--redis-prefix', '{x}:']),
    ]);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain('--redis-prefix needs --redis <url>');
    expect(braces.code).toBe(2);
    expect(braces.stderr).toContain('--redis-prefix must not contain { or }, got "{x}:"');
  });

  it('keeps every key under the prefix (skipped when no Redis answers, failed under CI=true)', async (ctx) => {
    const up = await probeRedis();
    if (!up && process.env.CI === 'true')
      throw new Error(`Redis is required under CI=true: ${REDIS_URL}`);
    if (!up) ctx.skip();
    const prefix = `cli-prefix-${process.pid}-${Date.now().toString(36)}:`;
    // A generous store timeout: the keys are written by Redis decisions, not skipped by the
    // insurance fallback a loaded machine's 50 ms default can trip.
    const serve = await startServeProcess([
      '--redis',
      REDIS_URL,
      '--redis-prefix',
      prefix,
      '--redis-timeout',
      '10000',
    ]);
    const redis = new Redis(REDIS_URL);
    try {
      expect(serve.banner).toContain(`keys ${prefix}*`);
      const run = await runCliProcess([
        'probe',
        serve.baseUrl,
        '--binding',
        'rest',
        '--caller-token',
        `prefix-${process.pid}`,
      ]);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      const keys = await redis.keys(`${prefix}*`);
      expect(keys.length).toBeGreaterThan(0);
      for (const key of keys) expect(key.startsWith(prefix)).toBe(true);
      if (keys.length > 0) await redis.del(...keys);
    } finally {
      redis.disconnect();
      await serve.stop();
    }
  });
});
