import { describe, expect, it } from 'vitest';
import { compilePolicies } from './compile-policies.js';
import type { Policy } from './policy.js';
import { policySetVersion } from './policy-set-version.js';

const perCaller: Policy = {
  name: 'per-caller',
  kind: 'rate',
  limit: 60,
  windowSeconds: 60,
  burst: 10,
};

describe('policySetVersion', () => {
  it('is a stable content hash: same data, same version; any change, another', () => {
    const v = policySetVersion(compilePolicies([perCaller]));
    expect(v).toMatch(/^[0-9a-f]{16}$/);
    // Field order and undefined members do not matter; a fresh compilation gives the same string.
    const reordered = {
      burst: 10,
      windowSeconds: 60,
      limit: 60,
      kind: 'rate',
      name: 'per-caller',
      description: undefined,
    } as unknown as Policy;
    expect(policySetVersion(compilePolicies([reordered]))).toBe(v);
    const changed = [
      [{ ...perCaller, burst: 11 }],
      [{ ...perCaller, name: 'per-caller-2' }],
      [perCaller, { name: 'slots', kind: 'concurrency', max: 2 } as Policy],
      [{ ...perCaller, mode: 'shadow' } as Policy],
      [{ ...perCaller, exempt: (r) => r.caller === 'health' } as Policy],
    ];
    const versions = new Set([v, ...changed.map((set) => policySetVersion(compilePolicies(set)))]);
    expect(versions.size).toBe(changed.length + 1);
    expect(policySetVersion(compilePolicies([perCaller], { maxNoShows: 1 }))).not.toBe(v);
    // Policy order is part of the set.
    const slots: Policy = { name: 'slots', kind: 'concurrency', max: 2 };
    expect(policySetVersion(compilePolicies([perCaller, slots]))).not.toBe(
      policySetVersion(compilePolicies([slots, perCaller])),
    );
  });
});
