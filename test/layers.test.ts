/**
 * The layer rules of docs/architecture.md are lint rules (biome.json `noRestrictedImports` per
 * folder): a deliberate bad import in each guarded layer fails `biome lint`, a good one passes.
 * Production code never imports `src/testing`, `src/simulation` (but `src/testing`) or the CLI
 * package; the CLI (`packages/cli`) reaches the library through its public subpaths only, and so
 * do the tests in `test/` and their fixtures at any depth (the library's, the gateway's and the
 * CLI's sources and builds are off limits there).
 */
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');

/** Lints one file written for the occasion; returns the diagnostics (empty when clean). */
function lint(path: string, source: string): string {
  const file = join(root, path);
  writeFileSync(file, source);
  try {
    execFileSync('npx', ['biome', 'lint', '--max-diagnostics=5', file], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return '';
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    return `${stdout ?? ''}${stderr ?? ''}`;
  } finally {
    rmSync(file, { force: true });
  }
}

describe('layers are enforced by lint', () => {
  it.each([
    [
      'src/core/zz-layer-check.ts',
      "import { MemoryStore } from '../store/memory-store.js';\nexport const x = MemoryStore;\n",
      'src/core may import only itself',
    ],
    [
      'src/core/zz-layer-check.ts',
      "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n",
      'are pure',
    ],
    [
      'src/core/zz-layer-check.ts',
      "import { systemClock } from '../platform/system-clock.js';\nexport const x = systemClock;\n",
      'src/core may import only itself',
    ],
    [
      'src/wire/zz-layer-check.ts',
      "import { createLimiter } from '../server/limiter.js';\nexport const x = createLimiter;\n",
      'src/wire may import only src/core',
    ],
    [
      'src/client/zz-layer-check.ts',
      "import { createLimiter } from '../server/limiter.js';\nexport const x = createLimiter;\n",
      'src/client may import only src/core, src/wire',
    ],
    [
      'src/server/zz-layer-check.ts',
      "import { ManualClock } from '../testing/manual-clock.js';\nexport const x = ManualClock;\n",
      'src/server may import only',
    ],
    [
      'src/redis/zz-layer-check.ts',
      "import { createLimiter } from '../server/limiter.js';\nexport const x = createLimiter;\n",
      'src/redis may import only src/core, src/store',
    ],
    [
      'src/push/zz-layer-check.ts',
      "import { seededRandom } from '../simulation/seeded-random.js';\nexport const x = seededRandom;\n",
      'src/push may import only',
    ],
    [
      'src/server/zz-layer-check.ts',
      "import { runCli } from 'a2a-ratelimit-cli';\nexport const x = runCli;\n",
      'production code never imports the CLI',
    ],
    [
      'src/simulation/zz-layer-check.ts',
      "import { createLimiter } from '../server/index.js';\nexport const x = createLimiter;\n",
      'src/simulation may import only src/core',
    ],
    [
      'packages/cli/src/zz-layer-check.ts',
      "import { createLimiter } from '../../../src/server/index.js';\nexport const x = createLimiter;\n",
      'public subpaths only',
    ],
    [
      'packages/cli/src/zz-layer-check.ts',
      "import { ManualClock } from 'a2a-ratelimit/testing';\nexport const x = ManualClock;\n",
      'never imports a2a-ratelimit/testing',
    ],
    [
      'test/zz-layer-check.test.ts',
      "import { createLimiter } from '../src/server/limiter.js';\nexport const x = createLimiter;\n",
      'tests in test/ use the library and the gateway through their public subpaths only',
    ],
    [
      'test/zz-layer-check.test.ts',
      "import { createGateway } from '../packages/gateway/src/create-gateway.js';\nexport const x = createGateway;\n",
      'tests in test/ use the library and the gateway through their public subpaths only',
    ],
    [
      'test/zz-layer-check.test.ts',
      "import { runProbe } from '../packages/cli/src/probe.js';\nexport const x = runProbe;\n",
      'tests in test/ use the CLI through its command line',
    ],
    [
      'test/fixtures/redis/zz-layer-check.ts',
      "import { RedisStore } from '../../../src/redis/redis-store.js';\nexport const x = RedisStore;\n",
      'tests in test/ use the library and the gateway through their public subpaths only',
    ],
    [
      'test/fixtures/zz-layer-check.ts',
      "import type { LeaseRef } from '../../src/core/rejection.js';\nexport type X = LeaseRef;\n",
      'tests in test/ use the library and the gateway through their public subpaths only',
    ],
    [
      'test/fixtures/zz-layer-check.ts',
      "import { createLimiter } from '../../dist/server/limiter.js';\nexport const x = createLimiter;\n",
      'tests in test/ use the library and the gateway through their public subpaths only',
    ],
    [
      'test/fixtures/zz-layer-check.ts',
      "import { runProbe } from '../../packages/cli/src/probe.js';\nexport const x = runProbe;\n",
      'tests in test/ use the CLI through its command line',
    ],
  ])('%s: a bad import fails (%#)', (path, source, message) => {
    expect(lint(path, source)).toContain(message);
  });

  it('an import along the layers passes', () => {
    const good = "import { decide } from '../core/decide.js';\nexport const x = decide;\n";
    expect(lint('src/store/zz-layer-check.ts', good)).toBe('');
  });

  it('a test in test/ importing public subpaths and its helpers passes', () => {
    const good =
      "import { createLimiter } from 'a2a-ratelimit/server';\nimport { createGateway } from 'a2a-ratelimit-gateway';\nimport { startSdkAgent } from './sdk-agent.helpers.js';\nexport const x = [createLimiter, createGateway, startSdkAgent];\n";
    expect(lint('test/zz-layer-check.test.ts', good)).toBe('');
  });

  it('a fixture in test/ importing public subpaths and its neighbours passes', () => {
    const good =
      "import type { Policy } from 'a2a-ratelimit';\nimport { RedisStore } from 'a2a-ratelimit/redis';\nimport { connectRedis } from './redis-env.js';\nexport const x = [RedisStore, connectRedis];\nexport type X = Policy;\n";
    expect(lint('test/fixtures/redis/zz-layer-check.ts', good)).toBe('');
  });

  it('the CLI importing a public subpath passes', () => {
    const good =
      "import { createLimiter } from 'a2a-ratelimit/server';\nexport const x = createLimiter;\n";
    expect(lint('packages/cli/src/zz-layer-check.ts', good)).toBe('');
  });
});
