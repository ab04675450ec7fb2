import { describe, expect, it } from 'vitest';
import { compilePolicies } from '../core/compile-policies.js';
import type { Policy } from '../core/policy.js';
import { policySetVersion } from '../core/policy-set-version.js';
import { decodePolicySet, encodePolicySet } from './policy-set-sync.js';

const exempt = (r: { readonly caller: string }) => r.caller === 'health';
const policies: Policy[] = [
  { name: 'per-caller', kind: 'rate', scope: 'caller', limit: 60, windowSeconds: 60, exempt },
  { name: 'lag', kind: 'overload', maxEventLoopDelayMs: 200 },
  {
    name: 'region',
    kind: 'concurrency',
    max: 4,
    scope: { name: 'region', key: (r) => r.tenant, callerScoped: false },
  },
];

describe('policy-set publication data', () => {
  it('round-trips a set, re-attaching this replica’s functions by policy name and field', () => {
    const set = compilePolicies(policies, { maxNoShows: 2, minGraceMs: 2500 });
    const data = encodePolicySet(set);
    expect(data).toContain('"$localFunction":true');
    const back = decodePolicySet(data, set);
    expect(back.policies.map((p) => p.name)).toEqual(['per-caller', 'lag', 'region']);
    expect(back.policies[0]?.source).toMatchObject({ exempt });
    expect(back.holds).toEqual(set.holds);
    expect(policySetVersion(back)).toBe(policySetVersion(set));
    expect(back.policies[0]?.keyOf({ caller: 'health', method: 'SendMessage' })).toBeUndefined();
  });

  it('refuses a set whose functions this replica does not have, naming them', () => {
    const set = compilePolicies(policies);
    const local = compilePolicies([{ name: 'lag', kind: 'overload', maxEventLoopDelayMs: 100 }]);
    expect(() => decodePolicySet(encodePolicySet(set), local)).toThrow(
      /policy "per-caller"\.exempt, policy "region"\.scope\.key/,
    );
  });

  it('versions are content hashes: equal sets equal, any change different', () => {
    const a = policySetVersion(compilePolicies(policies));
    expect(policySetVersion(compilePolicies(policies))).toBe(a);
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    const changed = [{ ...policies[0], limit: 61 } as Policy, ...policies.slice(1)];
    expect(policySetVersion(compilePolicies(changed))).not.toBe(a);
  });
});
