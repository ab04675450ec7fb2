/**
 * @module decide.bench
 * `npm run bench:decide`: the synchronous `MemoryStore` decision against rate-limiter-flexible and
 * a floor, per second of CPU time. Prints JSON.
 */

import { RateLimiterMemory } from 'rate-limiter-flexible';
import type { Policy } from '../src/core/policy.js';
import { MemoryStore } from '../src/store/memory-store.js';

/**
 * Method: ours, rate-limiter-flexible's `RateLimiterMemory.consume()` and the floor (one clock
 * read, one `Map` get/set and the GCRA arithmetic per decision: what any in-process GCRA limiter
 * must do at least) in the same run, interleaved, medians of rounds; one line per round, one JSON
 * object as the last line. Needs `--expose-gc` for memory figures.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 300);
const KEYS_100K = 100_000;
const MEMORY_KEYS = 200_000;

const gc = (globalThis as { gc?: () => void }).gc;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/**
 * Slices of a paired round: ours and the floor alternate (each slice long enough for a full pass
 * over the 100k keys, so neither runs on the other's cold cache more than once per slice).
 */
const PAIR_SLICES = 2;

/**
 * The time base: `cpu` (default) divides by this process's CPU time (user + system), so other
 * processes on a shared machine do not count as ours; `wall` by elapsed time.
 */
const TIME_BASE = process.env.BENCH_TIME === 'wall' ? 'wall' : 'cpu';

/** Seconds spent so far on the chosen time base. */
function secondsNow(): number {
  if (TIME_BASE === 'wall') return Number(process.hrtime.bigint()) / 1e9;
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

/** Runs `op` in batches for about `ms` (default ROUND_MS) and returns operations per second. */
function measureSync(op: (i: number) => void, ms = ROUND_MS): number {
  let n = 0;
  const from = secondsNow();
  const start = process.hrtime.bigint();
  const budget = BigInt(Math.round(ms * 1_000_000));
  let elapsed = 0n;
  while (elapsed < budget) {
    for (let j = 0; j < 1000; j++) op(n++);
    elapsed = process.hrtime.bigint() - start;
  }
  return n / (secondsNow() - from);
}

async function measureAsync(op: (i: number) => Promise<unknown>): Promise<number> {
  let n = 0;
  const from = secondsNow();
  const start = process.hrtime.bigint();
  const budget = BigInt(ROUND_MS) * 1_000_000n;
  let elapsed = 0n;
  while (elapsed < budget) {
    for (let j = 0; j < 1000; j++) {
      try {
        await op(n++);
      } catch {
        // rate-limiter-flexible rejects the promise when the limit is hit
      }
    }
    elapsed = process.hrtime.bigint() - start;
  }
  return n / (secondsNow() - from);
}

const keys = Array.from({ length: KEYS_100K }, (_, i) => `caller-${i.toString().padStart(6, '0')}`);
const huge = 1_000_000_000;

function ours(policies: Policy[]): MemoryStore {
  return new MemoryStore({ policies, maxKeys: 1_000_000 });
}
const open: Policy = { name: 'open', kind: 'rate', limit: huge, windowSeconds: 1000, burst: huge };

/**
 * The floor: per decision one clock read, one `Map` get and set, and the GCRA arithmetic (conform
 * check and charge) in integer µs, with the same parameters as our workload of the same name.
 */
function floor(limit: number, windowSeconds: number, burst: number, keyOf: (i: number) => string) {
  const emissionUs = Math.ceil((windowSeconds * 1_000_000) / limit);
  const toleranceUs = (burst - 1) * emissionUs;
  const tats = new Map<string, number>();
  const clock = { nowMs: () => Date.now() };
  let admitted = 0;
  const op = (i: number) => {
    const key = keyOf(i);
    const nowUs = Math.floor(clock.nowMs() * 1000);
    const tatUs = tats.get(key);
    const from = tatUs === undefined || tatUs < nowUs ? nowUs : tatUs;
    if (from - toleranceUs - nowUs <= 0) {
      tats.set(key, from + emissionUs);
      admitted++;
    }
  };
  return (ms?: number) => {
    const rate = measureSync(op, ms);
    if (admitted === 0) throw new Error('floor admitted nothing');
    return rate;
  };
}

const workloads = {
  hotKey: {
    ours: () => {
      const s = ours([open]);
      return (ms?: number) =>
        measureSync(() => s.decideSync({ caller: 'hot', method: 'SendMessage' }), ms);
    },
    rlf: () => {
      const r = new RateLimiterMemory({ points: huge, duration: 1000 });
      return () => measureAsync(() => r.consume('hot'));
    },
    floor: () => floor(huge, 1000, huge, () => 'hot'),
  },
  hotKeyRejected: {
    ours: () => {
      const s = ours([{ name: 'tight', kind: 'rate', limit: 1, windowSeconds: 3600, burst: 1 }]);
      return () => measureSync(() => s.decideSync({ caller: 'hot', method: 'SendMessage' }));
    },
    rlf: () => {
      const r = new RateLimiterMemory({ points: 1, duration: 3600 });
      return () => measureAsync(() => r.consume('hot'));
    },
  },
  keys100k: {
    // Keys stay tracked (each visit spends 3.6 s of a 1000-request burst), as real callers do.
    ours: () => {
      const s = ours([
        { name: 'kept', kind: 'rate', limit: 1000, windowSeconds: 3600, burst: 1000 },
      ]);
      return (ms?: number) =>
        measureSync(
          (i) => s.decideSync({ caller: keys[i % KEYS_100K] as string, method: 'SendMessage' }),
          ms,
        );
    },
    rlf: () => {
      const r = new RateLimiterMemory({ points: 1000, duration: 3600 });
      return () => measureAsync((i) => r.consume(keys[i % KEYS_100K] as string));
    },
    floor: () => floor(1000, 3600, 1000, (i) => keys[i % KEYS_100K] as string),
  },
  threePolicies: {
    ours: () => {
      const s = ours([
        { ...open, name: 'per-caller', scope: 'caller' },
        { ...open, name: 'per-tenant', scope: 'tenant' },
        { ...open, name: 'per-method', scope: 'method' },
      ]);
      return () =>
        measureSync(() => s.decideSync({ caller: 'hot', tenant: 'acme', method: 'SendMessage' }));
    },
    rlf: undefined,
  },
  // Issue 14: a tiered caller policy (pro tier), a token budget and a plain tenant policy.
  tieredBudget: {
    ours: () => {
      const s = ours([
        {
          name: 'per-caller',
          kind: 'rate',
          defaultTier: 'free',
          tiers: {
            free: { limit: huge, windowSeconds: 1000, burst: huge },
            pro: { limit: huge, windowSeconds: 1000, burst: huge },
          },
        },
        // One token reserved per admission (without an estimate: the whole burst, then refusals).
        { ...open, name: 'tokens', unit: 'tokens', estimate: 1 },
        { ...open, name: 'per-tenant', scope: 'tenant' },
      ]);
      return () =>
        measureSync(() =>
          s.decideSync({ caller: 'hot', tenant: 'acme', tier: 'pro', method: 'SendMessage' }),
        );
    },
    rlf: undefined,
  },
} as const;

type Name = keyof typeof workloads;
const results: Record<string, number[]> = {};
const record = (k: string, v: number) => {
  const list = results[k] ?? [];
  list.push(v);
  results[k] = list;
};

/** Keeps measured structures reachable until their heap size is read. */
const retained: unknown[] = [];

function heapUsed(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

/** Heap bytes per active key: fresh keys whose bucket is not full, so nothing may drop them. */
async function bytesPerKey(kind: 'ours' | 'rlf'): Promise<number> {
  // Callers' names are made per request, as a server would: a limiter that keeps a key pays for it.
  const names = { length: MEMORY_KEYS, at: (i: number) => `mem-caller-${i}` };
  const before = heapUsed();
  if (kind === 'ours') {
    const s = new MemoryStore({
      policies: [{ name: 'p', kind: 'rate', limit: 10, windowSeconds: 3600, burst: 10 }],
      maxKeys: MEMORY_KEYS * 2,
    });
    for (let i = 0; i < names.length; i++)
      s.decideSync({ caller: names.at(i), method: 'SendMessage' });
    retained.push(s);
  } else {
    const r = new RateLimiterMemory({ points: 10, duration: 3600 });
    for (let i = 0; i < names.length; i++) await r.consume(names.at(i));
    retained.push(r);
  }
  const after = heapUsed();
  const bytes = (after - before) / MEMORY_KEYS;
  retained.length = 0;
  return bytes;
}

const bytesOurs = gc ? median([await bytesPerKey('ours'), await bytesPerKey('ours')]) : Number.NaN;
const bytesRlf = gc ? median([await bytesPerKey('rlf'), await bytesPerKey('rlf')]) : Number.NaN;

/** `BENCH_ONLY=hotKey,keys100k`: run only the named workloads (the others report 0). */
const only = process.env.BENCH_ONLY?.split(',').map((name) => name.trim());
for (const name of only ?? []) {
  if (!(name in workloads)) throw new Error(`BENCH_ONLY: no workload ${name}`);
}
// Build every runner once (warm state), then interleave rounds.
const runners = Object.entries(workloads)
  .filter(([name]) => only === undefined || only.includes(name))
  .map(([name, w]) => ({
    name: name as Name,
    ours: w.ours(),
    rlf: w.rlf?.(),
    floor: 'floor' in w ? w.floor() : undefined,
  }));
// One discarded warm-up round so every path is optimized before it is measured.
for (const r of runners) {
  r.ours();
  await r.rlf?.();
  r.floor?.();
}
/** Ours and the floor in alternating slices of one round: ops/s of each over its slices. */
function paired(ours: (ms?: number) => number, floorOf: (ms?: number) => number): [number, number] {
  let o = 0;
  let f = 0;
  const slice = ROUND_MS / PAIR_SLICES;
  for (let k = 0; k < PAIR_SLICES; k++) {
    // Alternate who goes first, so neither always follows the other's garbage.
    if (k % 2 === 0) {
      o += ours(slice);
      f += floorOf(slice);
    } else {
      f += floorOf(slice);
      o += ours(slice);
    }
  }
  return [o / PAIR_SLICES, f / PAIR_SLICES];
}

for (let round = 0; round < ROUNDS; round++) {
  for (const r of runners) {
    const [o, f] = r.floor ? paired(r.ours, r.floor) : [r.ours(), undefined];
    record(`${r.name}:ours`, o);
    let line = `round ${round} ${r.name}: ours ${Math.round(o)}/s`;
    if (r.rlf) {
      const f = await r.rlf();
      record(`${r.name}:rlf`, f);
      line += `, rate-limiter-flexible ${Math.round(f)}/s`;
    }
    if (f !== undefined) {
      record(`${r.name}:floor`, f);
      record(`${r.name}:ratio`, o / f);
      line += `, floor ${Math.round(f)}/s (ratio ${(o / f).toFixed(2)})`;
    }
    console.log(line);
  }
}

const m = (k: string) => Math.round(median(results[k] ?? []));
const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
const summary = {
  node: process.version,
  rounds: ROUNDS,
  timeBase: TIME_BASE,
  roundMs: ROUND_MS,
  decisionsPerSecHotKey: m('hotKey:ours'),
  decisionsPerSecHotKeyRejected: m('hotKeyRejected:ours'),
  decisionsPerSec100kKeys: m('keys100k:ours'),
  decisionsPerSec3Policies: m('threePolicies:ours'),
  decisionsPerSecTieredBudget: m('tieredBudget:ours'),
  bytesPerActiveKey: Math.round(bytesOurs),
  rlfPerSecHotKey: m('hotKey:rlf'),
  rlfPerSecHotKeyRejected: m('hotKeyRejected:rlf'),
  rlfPerSec100kKeys: m('keys100k:rlf'),
  bytesPerKeyRlf: Math.round(bytesRlf),
  ratioVsRlfHotKey: ratio(m('hotKey:ours'), m('hotKey:rlf')),
  ratioVsRlfRejected: ratio(m('hotKeyRejected:ours'), m('hotKeyRejected:rlf')),
  ratioVsRlf100kKeys: ratio(m('keys100k:ours'), m('keys100k:rlf')),
  floorPerSecHotKey: m('hotKey:floor'),
  floorPerSec100kKeys: m('keys100k:floor'),
  // Median over rounds of (ours ÷ floor), each pair measured in alternating slices of one round.
  ratioVsFloorHotKey: Math.round(median(results['hotKey:ratio'] ?? []) * 100) / 100,
  ratioVsFloor100kKeys: Math.round(median(results['keys100k:ratio'] ?? []) * 100) / 100,
  ratioTieredBudgetVs3Policies: ratio(m('tieredBudget:ours'), m('threePolicies:ours')),
};
console.log(JSON.stringify(summary));
