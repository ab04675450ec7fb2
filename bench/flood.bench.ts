/**
 * @module flood.bench
 * `npm run bench:flood`: a `MemoryStore` under a flood of distinct one-request callers — who is
 * still admitted or limited, speed, memory. Prints JSON.
 */

import type { Policy } from '../src/core/policy.js';
import { MemoryStore } from '../src/store/memory-store.js';
import { ManualClock } from '../src/testing/manual-clock.js';

/**
 * Method: `maxKeys` at its default (100,000), three policy shapes. After the flood: how many
 * brand-new callers are admitted (and with their whole burst), whether a caller limited before is
 * still limited, how fast the flood is decided, and memory (RSS and heap after GC) after 200,000
 * and 1,000,000 flood callers; then the heap a live key costs with a 16 kB caller name. Needs
 * `--expose-gc`.
 */
const gc = (globalThis as { gc?: () => void }).gc;
const NEWCOMERS = 1000;

function memoryMB(): { rssMB: number; heapMB: number } {
  gc?.();
  const { rss, heapUsed } = process.memoryUsage();
  return { rssMB: Math.round(rss / 1e5) / 10, heapMB: Math.round(heapUsed / 1e5) / 10 };
}

function flood(shape: { name: string; limit: number; windowSeconds: number; burst: number }) {
  const clock = new ManualClock(1_760_000_000_000);
  const { limit, windowSeconds, burst } = shape;
  const policies: Policy[] = [
    { name: 'per-caller', kind: 'rate', scope: 'caller', limit, windowSeconds, burst },
  ];
  const before = memoryMB();
  const store = new MemoryStore({ clock, policies });
  for (let i = 0; i <= shape.burst; i++) store.decideSync({ caller: 'heavy', method: 'GetTask' });
  let caller = 0;
  const floodTo = (n: number) => {
    const start = process.hrtime.bigint();
    const from = caller;
    for (; caller < n; caller++) {
      store.decideSync({ caller: `flood-${caller}`, method: 'GetTask' });
      if (caller % 1000 === 999) clock.advance(1);
    }
    return Number(process.hrtime.bigint() - start) / 1000 / (n - from);
  };
  const microsPerFloodDecision = floodTo(200_000);
  const after200k = memoryMB();
  let admitted = 0;
  let fullBurst = 0;
  for (let i = 0; i < NEWCOMERS; i++) {
    let got = 0;
    for (let j = 0; j < shape.burst; j++) {
      if (store.decideSync({ caller: `new-${i}`, method: 'GetTask' }).admitted) got++;
    }
    if (got > 0) admitted++;
    if (got === shape.burst) fullBurst++;
  }
  const heavyStillLimited = !store.decideSync({ caller: 'heavy', method: 'GetTask' }).admitted;
  floodTo(1_000_000);
  const after1M = memoryMB();
  const stats = store.stats();
  return {
    shape: shape.name,
    newcomersAdmitted: admitted / NEWCOMERS,
    newcomersWithWholeBurst: fullBurst / NEWCOMERS,
    heavyStillLimited,
    microsPerFloodDecision: Math.round(microsPerFloodDecision * 100) / 100,
    rateKeys: stats.rateKeys,
    rateKeysEvicted: stats.rateKeysEvicted,
    memoryBefore: before,
    memoryAfter200k: after200k,
    memoryAfter1M: after1M,
  };
}

function longNames(): { bytesPerKeyShortName: number; bytesPerKey16kBName: number } {
  const measure = (nameOf: (i: number) => string) => {
    const n = 5000;
    const clock = new ManualClock(1_760_000_000_000);
    const before = memoryMB().heapMB;
    const store = new MemoryStore({
      clock,
      policies: [{ name: 'r', kind: 'rate', limit: 10, windowSeconds: 3600 }],
    });
    for (let i = 0; i < n; i++) store.decideSync({ caller: nameOf(i), method: 'GetTask' });
    const after = memoryMB().heapMB;
    if (store.stats().rateKeys !== n) throw new Error('keys were dropped');
    return Math.round(((after - before) * 1e6) / n);
  };
  const pad = 'x'.repeat(16_000);
  return {
    bytesPerKeyShortName: measure((i) => `caller-${i}`),
    // Each name built fresh, as a request's would be (not a slice sharing one buffer).
    bytesPerKey16kBName: measure((i) => `${i}-${pad}`.split('').join('')),
  };
}

const shapes = [
  { name: '60/min burst 10 (worked example)', limit: 60, windowSeconds: 60, burst: 10 },
  { name: '10/hour burst 10', limit: 10, windowSeconds: 3600, burst: 10 },
  { name: '1/hour burst 1', limit: 1, windowSeconds: 3600, burst: 1 },
];
const results = shapes.map(flood);
console.log(JSON.stringify({ node: process.version, floods: results, longNames: longNames() }));
