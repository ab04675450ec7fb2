import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

/**
 * `a2a-ratelimit/*` (the CLI's imports of the library) resolves to the library's sources through
 * this export condition, so tests run without a build.
 */
const conditions = ['a2a-ratelimit-source', ...defaultServerConditions];

export default defineConfig({
  ssr: { resolve: { conditions } },
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at a time (the CI machine has two cores): every test binds port 0, uses its own
    // Redis key prefix, PostgreSQL database and temporary directories, and pauses or flushes only
    // a redis-server of its own, so files running side by side do not meet. `--maxWorkers=1`
    // runs them one by one.
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        // Unit tests: no Redis, Postgres or nginx needed (`npm run test:unit`).
        test: {
          name: 'unit',
          include: [
            'src/**/*.test.ts',
            'packages/cli/src/**/*.test.ts',
            'packages/gateway/src/**/*.test.ts',
          ],
          // Beside the CLI's gateway command but whole-system (real agents, Python, Redis).
          exclude: ['**/*.integration.test.ts', '**/node_modules/**'],
        },
      },
      {
        extends: true,
        // Whole-system tests: real agents on loopback, Redis, Postgres, nginx, the packed package.
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts', 'packages/*/src/**/*.integration.test.ts'],
        },
      },
    ],
  },
});
