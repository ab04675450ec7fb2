import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../testing/manual-clock.js';
import { boundedInput, boundedKey, HASHED_KEY_PREFIX, MAX_KEY_LENGTH } from './bounded-key.js';
import { MemoryStore } from './memory-store.js';

/** Short and long strings, some leaning on the hash prefix, some with lone surrogates. */
const value = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', minLength: 250, maxLength: 400 }),
  fc.string({ maxLength: 60 }).map((s) => HASHED_KEY_PREFIX + s),
  fc.string({ minLength: 43, maxLength: 43 }).map((s) => HASHED_KEY_PREFIX + s),
  fc
    .tuple(fc.string({ minLength: 255, maxLength: 258 }), fc.integer({ min: 0xd800, max: 0xdfff }))
    .map(([s, unit]) => s + String.fromCharCode(unit)),
);

describe('boundedKey', () => {
  it('is injective and bounded; short values stay as they are (property)', () => {
    fc.assert(
      fc.property(value, value, (a, b) => {
        const ka = boundedKey(a);
        expect(ka.length).toBeLessThanOrEqual(MAX_KEY_LENGTH);
        if (a !== b) expect(ka).not.toBe(boundedKey(b));
        else expect(ka).toBe(boundedKey(b));
        const hashShaped = a.length === 51 && a.startsWith(HASHED_KEY_PREFIX);
        if (a.length <= MAX_KEY_LENGTH && !hashShaped) expect(ka).toBe(a);
        else expect(ka).toMatch(/^#sha256:[\w-]{43}$/);
      }),
      { numRuns: 3000 },
    );
  });

  it('keeps lone surrogates apart (hashes UTF-16 code units, not UTF-8)', () => {
    const base = 'x'.repeat(MAX_KEY_LENGTH);
    expect(boundedKey(`${base}\ud800`)).not.toBe(boundedKey(`${base}\ud801`));
  });

  it('keeps 256 characters, hashes 257', () => {
    expect(boundedKey('a'.repeat(256))).toBe('a'.repeat(256));
    expect(boundedKey('a'.repeat(257))).toMatch(/^#sha256:/);
    expect(boundedKey('#short')).toBe('#short');
    expect(boundedKey('#sha256:short')).toBe('#sha256:short'); // not a hash's shape
    const shaped = `#sha256:${'A'.repeat(43)}`;
    expect(boundedKey(shaped)).not.toBe(shaped); // a hash's shape: hashed, so it meets no hash
  });
});

describe('boundedInput', () => {
  it('gives the same object back when nothing is long', () => {
    const input = { caller: 'a', method: 'SendMessage', messageId: 'm', tenant: 't' } as const;
    expect(boundedInput(input)).toBe(input);
  });

  it('bounds caller, tenant, skill and messageId, keeps the rest, and is idempotent on its output', () => {
    const long = 'y'.repeat(1000);
    const input = {
      caller: long,
      method: 'SendMessage',
      tenant: long,
      skill: long,
      messageId: long,
      eventLoopDelayMs: 3,
    } as const;
    const bounded = boundedInput(input);
    expect(bounded).toEqual({
      caller: boundedKey(long),
      method: 'SendMessage',
      tenant: boundedKey(long),
      skill: boundedKey(long),
      messageId: boundedKey(long),
      eventLoopDelayMs: 3,
    });
    expect(boundedInput(bounded)).toBe(bounded);
    // A fresh object with the same hashed values is a caller that looks hashed: hashed again.
    expect(boundedInput({ ...bounded }).caller).not.toBe(bounded.caller);
  });
});

describe('usage charged on bounded keys', () => {
  it('a long caller’s reported usage meets the bucket its decisions use', () => {
    const clock = new ManualClock(1_760_000_000_000);
    const store = new MemoryStore({
      policies: [{ name: 'tokens', kind: 'rate', unit: 'tokens', limit: 100, windowSeconds: 3600 }],
      clock,
    });
    for (const caller of ['short', 'z'.repeat(300), 'x\ud800']) {
      const input = { caller, method: 'SendMessage' } as const;
      expect(store.decideSync(input).admitted).toBe(true);
      store.chargeUsageSync(input, 100);
      expect(store.decideSync(input).admitted, caller).toBe(false);
    }
  });
});
