/**
 * Live policy changes as an operator makes them (issue 14): `serve --config` under load, the file
 * edited and SIGHUP sent (or only edited). The new limits come into force (how long it took is
 * printed, not asserted: the machine may be loaded), no caller's state is reset, a bad file is
 * refused with one line and the running set keeps working; with Redis, a replica that was not
 * reloaded converges on the set the other published. Real processes, real HTTP on loopback, real
 * Redis. Waits are on what the processes say (their quota, their log lines), bounded only
 * against a hang.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServeProcess, startServeProcess } from './cli-process.helpers.js';
import { probeRedis, REDIS_URL, requireOrSkip, runPrefix } from './fixtures/redis/redis-env.js';

const dir = mkdtempSync(join(tmpdir(), 'a2a-ratelimit-reload-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A policy file: one per-caller rate policy on GetTask (cheap requests: an unknown task is a 404 once admitted). */
function policyFile(limit: number, burst = limit): string {
  return [
    'policies:',
    '  - name: per-caller',
    '    kind: rate',
    '    scope: caller',
    '    methods: [GetTask]',
    `    limit: ${limit}`,
    '    windowSeconds: 3600',
    `    burst: ${burst}`,
  ].join('\n');
}

interface Answer {
  readonly status: number;
  /** `q` of the per-caller item in RateLimit-Policy. */
  readonly quota: number | undefined;
}

/** One GetTask over REST as `caller`. */
async function getTask(serve: ServeProcess, caller: string): Promise<Answer> {
  const res = await fetch(`${serve.baseUrl}/a2a/rest/tasks/no-such-task`, {
    headers: { 'A2A-Version': '1.0', authorization: `Bearer ${caller}` },
  });
  await res.arrayBuffer();
  const policy = res.headers.get('ratelimit-policy') ?? '';
  const q = /"per-caller";q=(\d+)/.exec(policy)?.[1];
  return { status: res.status, quota: q === undefined ? undefined : Number(q) };
}

/**
 * Longest wait for anything a process is expected to do: a guard against a hang, not a bound (each
 * test may take 120 s: a loaded machine starts `serve` slowly).
 */
const HANG_MS = 20_000;

/** Polls fresh callers until one sees quota `q`; resolves with the ms it took. */
async function untilQuota(serve: ServeProcess, q: number, label: string): Promise<number> {
  const start = performance.now();
  for (let i = 0; ; i++) {
    const answer = await getTask(serve, `${label}-${i}`);
    if (answer.quota === q) return performance.now() - start;
    if (performance.now() - start > HANG_MS) throw new Error(`quota never became ${q}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Waits until `serve`'s stderr has `count` lines containing `needle`. */
async function untilLines(serve: ServeProcess, needle: string, count: number): Promise<void> {
  const start = performance.now();
  while (linesWith(serve.stderr(), needle).length < count) {
    if (performance.now() - start > HANG_MS) {
      throw new Error(`expected ${count} lines with "${needle}": ${serve.stderr()}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Requests from `callers` callers in a loop until stopped; counts answers by status. */
function load(serves: readonly ServeProcess[], callers: number) {
  let running = true;
  const statuses = new Map<number, number>();
  const loops = Array.from({ length: callers }, async (_, i) => {
    const serve = serves[i % serves.length] as ServeProcess;
    while (running) {
      const { status } = await getTask(serve, `load-${i}`);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return statuses;
    },
  };
}

/** Spends `caller`'s burst of `limit` and checks the next request is refused. */
async function spend(serve: ServeProcess, caller: string, limit: number): Promise<void> {
  for (let i = 0; i < limit; i++) expect((await getTask(serve, caller)).status).toBe(404);
  expect((await getTask(serve, caller)).status).toBe(429);
}

/** Each process's store mode and failed store calls (a failure message's context). */
async function storeHealth(serves: readonly ServeProcess[]): Promise<string> {
  const lines = await Promise.all(
    serves.map(async (s) =>
      (await (await fetch(`${s.baseUrl}/metrics`)).text())
        .split('\n')
        .filter((l) => /store_errors_total\{|store_mode\{.*\} 1$/.test(l))
        .join(' '),
    ),
  );
  return lines.join(' / ');
}

/** The lines of `text` that contain `needle`. */
function linesWith(text: string, needle: string): string[] {
  return text.split('\n').filter((l) => l.includes(needle));
}

describe('serve --config reloads live (in-process store)', () => {
  it('SIGHUP under load: new limits, spent callers stay spent, a bad file keeps the set', async () => {
    const file = join(dir, 'memory.yaml');
    writeFileSync(file, policyFile(3));
    const serve = await startServeProcess(['--config', file]);
    const traffic = load([serve], 4);
    try {
      await spend(serve, 'spent', 3);

      writeFileSync(file, policyFile(100));
      serve.signal('SIGHUP');
      const tookMs = await untilQuota(serve, 100, 'fresh');
      console.info(`[figure] memory: SIGHUP to new limits ${tookMs.toFixed(0)} ms`);
      // Its bucket was kept: 3 of 3 used an hour's worth; under 100 per hour it owes ~36 s more.
      expect(await getTask(serve, 'spent')).toEqual({ status: 429, quota: 100 });

      // The card and the metrics follow.
      const card = (await (await fetch(`${serve.baseUrl}/.well-known/agent-card.json`)).json()) as {
        capabilities: { extensions: { params?: { policies?: { limit?: number }[] } }[] };
      };
      const published = card.capabilities.extensions.flatMap((e) => e.params?.policies ?? []);
      expect(published.map((p) => p.limit)).toEqual([100]);
      const metrics = await (await fetch(`${serve.baseUrl}/metrics`)).text();
      expect(metrics).toMatch(/a2a_ratelimit_policy_set_info\{version="[0-9a-f]{16}"\} 1/);
      expect(metrics).toMatch(/a2a_ratelimit_store_mode\{mode="memory"\} 1/);

      // Only an edit, no signal: the file watch reloads it.
      writeFileSync(file, policyFile(50));
      const editMs = await untilQuota(serve, 50, 'edited');
      console.info(`[figure] memory: edit to new limits ${editMs.toFixed(0)} ms`);

      // A bad file: one line naming the field, and the running set goes on.
      const kept = 'kept the running policies';
      const before = linesWith(serve.stderr(), kept).length;
      writeFileSync(file, policyFile(0, 50));
      // The edit's refusal first (the signal's reload would otherwise read the file first, and
      // the change event would then find nothing new), then the signal's.
      await untilLines(serve, kept, before + 1);
      serve.signal('SIGHUP');
      await untilLines(serve, kept, before + 2);
      expect(await getTask(serve, 'after-bad')).toEqual({ status: 404, quota: 50 });
      expect((await getTask(serve, 'spent')).status).toBe(429);
      // One for the edit (however many change events it made), one for the signal.
      expect(linesWith(serve.stderr(), kept).slice(before)).toEqual([
        `a2a-ratelimit: kept the running policies: ${file}: policies[0].limit: must be a positive integer`,
        `a2a-ratelimit: kept the running policies: ${file}: policies[0].limit: must be a positive integer`,
      ]);
    } finally {
      const statuses = await traffic.stop();
      await serve.stop();
      // Under load, every answer was a decision: admitted (404: no such task) or refused (429).
      expect([...statuses.keys()].sort()).toEqual([404, 429]);
    }
  }, 120_000);
});

const redisUp = await probeRedis();
requireOrSkip(redisUp, `Redis at ${REDIS_URL}`);

describe.skipIf(!redisUp)('serve --config --redis: replicas converge on a reloaded set', () => {
  it('SIGHUP on one replica: the other follows, state is shared and kept', async () => {
    const prefix = `${runPrefix('reload')}:`;
    const fileA = join(dir, 'a.yaml');
    const fileB = join(dir, 'b.yaml');
    writeFileSync(fileA, policyFile(3));
    writeFileSync(fileB, policyFile(3));
    // Redis calls may take seconds on a loaded machine: at the store's default 50 ms a replica
    // fell back to its insurance limits and answered the spent caller from its own bucket.
    const args = (file: string) => [
      '--config',
      file,
      '--redis',
      REDIS_URL,
      '--redis-prefix',
      prefix,
      '--redis-timeout',
      '10000',
    ];
    const [a, b] = await Promise.all([
      startServeProcess(args(fileA)),
      startServeProcess(args(fileB)),
    ]);
    const traffic = load([a, b], 4);
    const redis = new Redis(REDIS_URL);
    try {
      // One bucket across replicas: spent through A, refused by B.
      await spend(a, 'spent', 3);
      expect((await getTask(b, 'spent')).status, await storeHealth([a, b])).toBe(429);

      writeFileSync(fileA, policyFile(100));
      a.signal('SIGHUP');
      const onA = untilQuota(a, 100, 'fresh-a');
      const onB = untilQuota(b, 100, 'fresh-b');
      const [tookA, tookB] = await Promise.all([onA, onB]);
      console.info(
        `[figure] redis: SIGHUP to new limits ${tookA.toFixed(0)} ms on A, ${tookB.toFixed(0)} ms on B`,
      );
      // B's file still says 3: it follows the published set, not its own file.
      expect(await getTask(b, 'spent'), await storeHealth([a, b])).toEqual({
        status: 429,
        quota: 100,
      });
      expect(await getTask(a, 'spent'), await storeHealth([a, b])).toEqual({
        status: 429,
        quota: 100,
      });
      const versionOf = async (s: ServeProcess) =>
        /a2a_ratelimit_policy_set_info\{version="([0-9a-f]+)"\} 1/.exec(
          await (await fetch(`${s.baseUrl}/metrics`)).text(),
        )?.[1];
      expect(await versionOf(b)).toBe(await versionOf(a));

      // A bad file on A: refused there with one line, both replicas keep the running set.
      writeFileSync(fileA, policyFile(0, 100));
      await untilLines(a, 'kept the running policies', 1);
      expect(await getTask(a, 'after-bad-a')).toEqual({ status: 404, quota: 100 });
      expect(await getTask(b, 'after-bad-b')).toEqual({ status: 404, quota: 100 });
      expect(linesWith(a.stderr(), 'kept the running policies')).toHaveLength(1);
    } finally {
      const statuses = await traffic.stop();
      await Promise.all([a.stop(), b.stop()]);
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
        cursor = next;
        if (keys.length > 0) await redis.del(...keys);
      } while (cursor !== '0');
      redis.disconnect();
      expect([...statuses.keys()].sort()).toEqual([404, 429]);
    }
  }, 120_000);
});
