import { describe, expect, it } from 'vitest';
import { compilePolicies } from './compile-policies.js';
import type { Policy } from './policy.js';
import { isPolicyError, POLICY_ERROR_CODES, PolicyError } from './policy-error.js';

function errorOf(policies: unknown[]): PolicyError {
  try {
    compilePolicies(policies as Policy[]);
  } catch (e) {
    if (e instanceof PolicyError) return e;
    throw e;
  }
  throw new Error('expected a PolicyError');
}

describe('compilePolicies', () => {
  it('computes GCRA parameters in integer microseconds', () => {
    const [p] = compilePolicies([
      { name: 'per-caller', kind: 'rate', limit: 60, windowSeconds: 60, burst: 10 },
    ]).policies;
    expect(p).toMatchObject({
      emissionUs: 1_000_000,
      toleranceUs: 9_000_000,
      windowUs: 60_000_000,
    });
  });

  it('rounds a non-integer emission interval up, so rounding never exceeds the limit', () => {
    const [p] = compilePolicies([
      { name: 'r', kind: 'rate', limit: 7, windowSeconds: 60 },
    ]).policies;
    expect(p?.kind === 'rate' && p.emissionUs).toBe(8_571_429);
  });

  it('defaults: scope caller, all methods, burst = limit, quota', () => {
    const set = compilePolicies([{ name: 'r', kind: 'rate', limit: 5, windowSeconds: 1 }]);
    const [p] = set.policies;
    expect(p).toMatchObject({
      scopeName: 'caller',
      callerScoped: true,
      burst: 5,
      rejectAs: 'quota',
    });
    expect(set.forMethod('GetExtendedAgentCard')).toHaveLength(1);
  });

  it('applies policies per method in declared order', () => {
    const set = compilePolicies([
      { name: 'a', kind: 'rate', limit: 1, windowSeconds: 1, methods: ['SendMessage'] },
      { name: 'b', kind: 'concurrency', max: 1, methods: ['SendMessage', 'GetTask'] },
    ]);
    expect(set.forMethod('SendMessage').map((p) => p.name)).toEqual(['a', 'b']);
    expect(set.forMethod('GetTask').map((p) => p.name)).toEqual(['b']);
    expect(set.forMethod('ListTasks')).toEqual([]);
  });

  it('builds subjects per scope', () => {
    const scopes = [
      'caller',
      'tenant',
      'skill',
      'method',
      'agent',
      'caller+method',
      'caller+skill',
    ];
    const set = compilePolicies(
      scopes.map(
        (scope, i) =>
          ({ name: `p${i}`, kind: 'rate', limit: 1, windowSeconds: 1, scope }) as Policy,
      ),
    );
    const request = { caller: 'c', method: 'SendMessage', tenant: 't', skill: 's' } as const;
    expect(set.policies.map((p) => p.subjectOf(request))).toEqual([
      'caller:c',
      'tenant:t',
      'skill:s',
      'method:SendMessage',
      'agent',
      'caller:c/method:SendMessage',
      'caller:c/skill:s',
    ]);
    expect(set.policies.map((p) => p.callerScoped)).toEqual([
      true,
      false,
      false,
      false,
      false,
      true,
      true,
    ]);
    // A skill-scoped policy does not apply to a request without a skill.
    expect(set.policies[2]?.subjectOf({ caller: 'c', method: 'GetTask' })).toBeUndefined();
  });

  it('supports custom scopes', () => {
    const [p] = compilePolicies([
      {
        name: 'region',
        kind: 'rate',
        limit: 1,
        windowSeconds: 1,
        scope: { name: 'region', key: (r) => r.tenant?.split('-')[0], callerScoped: false },
      },
    ]).policies;
    expect(p?.subjectOf({ caller: 'c', method: 'GetTask', tenant: 'eu-acme' })).toBe('region:eu');
    expect(p?.scopeName).toBe('region');
  });

  it.each([
    [[{ name: 'x', kind: 'rate', limit: 0, windowSeconds: 60 }], 'x', 'limit'],
    [[{ name: 'x', kind: 'rate', limit: -5, windowSeconds: 60 }], 'x', 'limit'],
    [[{ name: 'x', kind: 'rate', limit: 1.5, windowSeconds: 60 }], 'x', 'limit'],
    [[{ name: 'x', kind: 'rate', limit: 10, windowSeconds: 0 }], 'x', 'windowSeconds'],
    [[{ name: 'x', kind: 'rate', limit: 10, windowSeconds: 60, burst: 0 }], 'x', 'burst'],
    [
      [{ name: 'x', kind: 'rate', limit: 10, windowSeconds: 60, methods: ['message/send'] }],
      'x',
      'methods',
    ],
    [[{ name: 'x', kind: 'rate', limit: 10, windowSeconds: 60, methods: [] }], 'x', 'methods'],
    [[{ name: 'x', kind: 'rate', limit: 10, windowSeconds: 60, scope: 'user' }], 'x', 'scope'],
    [
      [{ name: 'x', kind: 'rate', limit: 10, windowSeconds: 60, rejectAs: 'busy' }],
      'x',
      'rejectAs',
    ],
    [[{ name: 'x', kind: 'leaky', limit: 10 }], 'x', 'kind'],
    [[{ name: 'x', kind: 'concurrency', max: 0 }], 'x', 'max'],
    [[{ name: 'x', kind: 'overload' }], 'x', 'maxInFlight'],
    [[{ name: 'x', kind: 'overload', maxInFlight: 10, scope: 'caller' }], 'x', 'scope'],
    [[{ kind: 'rate', limit: 1, windowSeconds: 1 }], '#0', 'name'],
    [[{ name: ' padded ', kind: 'rate', limit: 1, windowSeconds: 1 }], '#0', 'name'],
    [
      [
        { name: 'dup', kind: 'rate', limit: 1, windowSeconds: 1 },
        { name: 'dup', kind: 'concurrency', max: 1 },
      ],
      'dup',
      'name',
    ],
    [[null], '#0', 'policy'],
  ])('rejects %j naming policy %s and field %s', (policies, policy, field) => {
    const e = errorOf(policies);
    expect(e.policy).toBe(policy);
    expect(e.field).toBe(field);
    expect(e.message).toContain(field);
  });

  it('takes a concurrency holdUntil of task or response, and refuses anything else', () => {
    const [streams, tasks] = compilePolicies([
      { name: 's', kind: 'concurrency', max: 2, holdUntil: 'response' },
      { name: 't', kind: 'concurrency', max: 2 },
    ]).policies;
    expect(streams?.kind === 'concurrency' && streams.holdUntil).toBe('response');
    expect(tasks?.kind === 'concurrency' && tasks.holdUntil).toBeUndefined();
    expect(() =>
      compilePolicies([{ name: 'x', kind: 'concurrency', max: 2, holdUntil: 'forever' as never }]),
    ).toThrow('Policy "x": holdUntil must be "task" or "response", got "forever"');
  });

  it('validates hold options', () => {
    expect(() => compilePolicies([], { maxNoShows: -1 })).toThrow(/maxNoShows/);
    expect(() => compilePolicies([], { graceFraction: 2 })).toThrow(/graceFraction/);
    expect(compilePolicies([], { minGraceMs: 2000 }).holds.minGraceUs).toBe(2_000_000);
  });
});

describe('mode', () => {
  it('keeps shadow policies out of the enforced selection and refuses an unknown mode', () => {
    const set = compilePolicies([
      { name: 'real', kind: 'rate', limit: 5, windowSeconds: 1 },
      { name: 'dry', kind: 'rate', limit: 1, windowSeconds: 60, mode: 'shadow' },
      { name: 'on', kind: 'concurrency', max: 1, mode: 'enforce' },
    ]);
    expect(set.forMethod('SendMessage').map((p) => p.name)).toEqual(['real', 'on']);
    expect(set.shadowIndexes('SendMessage')).toEqual([1]);
    expect(set.policies.map((p) => p.shadow)).toEqual([false, true, false]);
    expect(() =>
      compilePolicies([
        { name: 'x', kind: 'rate', limit: 1, windowSeconds: 1, mode: 'dry' as never },
      ]),
    ).toThrow(new PolicyError('x', 'mode', 'must be "enforce" or "shadow", got "dry"'));
  });
});

describe('PolicyError', () => {
  it('has a stable code and a brand that isPolicyError recognises', () => {
    const e = errorOf([{ name: 'x', kind: 'rate', limit: 0, windowSeconds: 60 }]);
    expect(e.code).toBe('ERR_A2A_INVALID_POLICY');
    expect(e.code).toBe(POLICY_ERROR_CODES.invalid);
    expect(isPolicyError(e)).toBe(true);
    expect([e.policy, e.field]).toEqual(['x', 'limit']);
  });

  it('isPolicyError: a copy from another install (same brand, other class) yes; look-alikes no', () => {
    const copy = Object.assign(new Error('Policy "x": limit …'), {
      isPolicyError: true,
      code: POLICY_ERROR_CODES.invalid,
    });
    expect(isPolicyError(copy)).toBe(true);
    expect(isPolicyError(new Error('Policy "x"'))).toBe(false);
    expect(isPolicyError(Object.create({ isPolicyError: true }))).toBe(false);
    expect(isPolicyError({ isPolicyError: 'yes' })).toBe(false);
    expect(isPolicyError(null)).toBe(false);
    expect(isPolicyError(undefined)).toBe(false);
    // `instanceof` checks the same brand: the copy is one, look-alikes are not.
    expect(copy instanceof PolicyError).toBe(true);
    expect(new Error('Policy "x"') instanceof PolicyError).toBe(false);
    expect(Object.create({ isPolicyError: true }) instanceof PolicyError).toBe(false);
  });
});
