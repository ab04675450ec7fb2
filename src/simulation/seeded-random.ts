/**
 * @module seeded-random
 * A seeded uniform random source, so a simulation (and a test) draws the same jitter every run.
 */

/**
 * A seeded uniform [0, 1) source (mulberry32): the same `seed` gives the same sequence every run,
 * for reproducible jitter in simulations and tests.
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
