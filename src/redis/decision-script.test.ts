import { describe, expect, it } from 'vitest';
import { compilePolicies } from '../core/compile-policies.js';
import { MAX_USAGE_DEBT_US } from '../core/compiled-policy.js';
import { buildDecisionScript, decisionScriptHeader } from './decision-script.js';
import { LUA_LEASES_AND_RECORDS } from './lua-files.js';

const set = compilePolicies(
  [
    { name: 'per-caller', kind: 'rate', limit: 200, windowSeconds: 1, burst: 50 },
    { name: 'tasks', kind: 'concurrency', max: 5 },
    { name: 'agent', kind: 'overload', maxInFlight: 9, maxEventLoopDelayMs: 150 },
    { name: 'lag-only', kind: 'overload', maxEventLoopDelayMs: 200 },
  ],
  { maxNoShows: 2, minGraceMs: 2_500 },
);

describe('decision script', () => {
  it('bakes the compiled parameters into its header, exactly', () => {
    const header = decisionScriptHeader(set, 1000, 'a2arl:');
    expect(header).toContain(
      '[0] = { k = 1, e = 5000, tol = 245000, w = 1000000, cs = true, u = 5000, mx = 1250000, sb = 250000 }',
    );
    expect(header).toContain('[1] = { k = 2, lim = 5, ttl = 600000, init = 1000, lag = -1 }');
    expect(header).toContain('[2] = { k = 3, lim = 9, ttl = 600000, init = 1000, lag = 150 }');
    expect(header).toContain('[3] = { k = 3, lim = -1,');
    expect(header).toContain('local MIN_GRACE_US = 2500000');
    expect(header).toContain('local GRACE_FRACTION = 0.1');
    expect(header).toContain('local ROLE_AT = 7');
  });

  it('has one SHA-1 per policy set, prefix length and padding', () => {
    const a = buildDecisionScript(set, 1000, 'a2arl:');
    expect(a.sha1).toMatch(/^[0-9a-f]{40}$/);
    expect(buildDecisionScript(set, 1000, 'a2arl:').sha1).toBe(a.sha1);
    expect(buildDecisionScript(set, 1000, 'other:').sha1).toBe(a.sha1); // same length
    expect(buildDecisionScript(set, 1000, 'longer-prefix:').sha1).not.toBe(a.sha1);
    expect(buildDecisionScript(set, 2000, 'a2arl:').sha1).not.toBe(a.sha1);
  });
});

describe('usage debt cap', () => {
  it("the script caps reported usage at the core's MAX_USAGE_DEBT_US (one number, two languages)", () => {
    expect(LUA_LEASES_AND_RECORDS).toContain(`nowUs + ${MAX_USAGE_DEBT_US})`);
  });
});
