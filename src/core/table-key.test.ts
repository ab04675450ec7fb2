import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compilePolicies } from './compile-policies.js';
import { OVERFLOW_KEY } from './decision-state.js';
import {
  HASHED_KEY_LENGTH,
  HASHED_KEY_PREFIX,
  NO_TENANT_KEY,
  pairKey,
  reservedKey,
  wellFormedKey,
} from './table-key.js';

/** Strings rich in what used to move a boundary: separators, NUL, lone surrogates, the prefixes. */
const part = fc.oneof(
  fc.string({ unit: fc.constantFrom('a', '/', ':', '|', '-', '\u0000', '\ud800', '\udc00', '\\') }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom('', '-', 'skill:', '/skill:', 'caller:', HASHED_KEY_PREFIX, '#sha256:\\'),
);

const lone = /\p{Cs}/u;

describe('pairKey', () => {
  it('is injective: distinct pairs give distinct keys (property)', () => {
    fc.assert(
      fc.property(part, part, part, part, (a, b, c, d) => {
        expect(pairKey(a, b) === pairKey(c, d)).toBe(a === c && b === d);
      }),
      { numRuns: 3000 },
    );
  });

  it('keeps apart the pairs the old subject joined alike', () => {
    expect(pairKey('a/skill:b', 'c')).not.toBe(pairKey('a', 'b/skill:c'));
    expect(pairKey('a\u0000b', 'c')).not.toBe(pairKey('a', 'b\u0000c'));
  });
});

describe('reserved keys', () => {
  it('have a hashed part’s shape with a tail no hash has', () => {
    for (const key of [NO_TENANT_KEY, OVERFLOW_KEY]) {
      expect(key.length).toBe(HASHED_KEY_LENGTH);
      expect(key.startsWith(HASHED_KEY_PREFIX)).toBe(true);
      expect(key).not.toMatch(/^#sha256:[\w-]{43}$/);
    }
    expect(NO_TENANT_KEY).not.toBe(OVERFLOW_KEY);
    expect(NO_TENANT_KEY).toBe(reservedKey('no tenant'));
    expect(OVERFLOW_KEY).toBe(reservedKey('overflow'));
    expect(() => reservedKey('x'.repeat(42))).toThrow(RangeError);
  });
});

describe('wellFormedKey', () => {
  it('is injective, well-formed, the identity on plain keys, never a reserved key (property)', () => {
    fc.assert(
      fc.property(part, part, (a, b) => {
        const ka = wellFormedKey(a);
        expect(ka === wellFormedKey(b)).toBe(a === b);
        expect(lone.test(ka)).toBe(false);
        if (!lone.test(a) && !a.startsWith(HASHED_KEY_PREFIX)) expect(ka).toBe(a);
        expect(ka).not.toBe(NO_TENANT_KEY);
        expect(ka).not.toBe(OVERFLOW_KEY);
      }),
      { numRuns: 3000 },
    );
  });

  it('escapes lone surrogates and backslashes, keeps pairs', () => {
    expect(wellFormedKey('x\ud800')).toBe('#sha256:\\x\\ud800');
    expect(wellFormedKey('x\udc00')).toBe('#sha256:\\x\\udc00');
    expect(wellFormedKey('\\\ud83d\ude00\ud800')).toBe('#sha256:\\\\\\\ud83d\ude00\\ud800');
  });
});

describe('built-in scopes’ table keys', () => {
  const set = compilePolicies(
    ['caller', 'tenant', 'skill', 'caller+method', 'caller+skill', 'tenant+method'].map(
      (scope) => ({
        name: scope.replace('+', '-'),
        kind: 'rate',
        scope,
        limit: 1,
        windowSeconds: 1,
      }),
    ) as Parameters<typeof compilePolicies>[0],
  );
  const keyOf = (scope: string) =>
    (set.policies.find((p) => p.name === scope.replace('+', '-')) as (typeof set.policies)[0])
      .keyOf;

  it('caller+skill keeps caller a/skill:b with skill c apart from caller a with skill b/skill:c', () => {
    const k = keyOf('caller+skill');
    expect(k({ caller: 'a/skill:b', skill: 'c', method: 'SendMessage' })).not.toBe(
      k({ caller: 'a', skill: 'b/skill:c', method: 'SendMessage' }),
    );
  });

  it('no tenant is apart from the tenants "-" and "" (tenant, tenant+method)', () => {
    for (const scope of ['tenant', 'tenant+method']) {
      const k = keyOf(scope);
      const none = k({ caller: 'a', method: 'GetTask' });
      expect(none).not.toBe(k({ caller: 'a', method: 'GetTask', tenant: '-' }));
      expect(none).not.toBe(k({ caller: 'a', method: 'GetTask', tenant: '' }));
    }
  });

  it('custom keys with lone surrogates stay apart and well-formed', () => {
    const custom = compilePolicies([
      {
        name: 'region',
        kind: 'rate',
        scope: { name: 'region', key: (r) => r.tenant, callerScoped: false },
        limit: 1,
        windowSeconds: 1,
      },
    ]).policies[0];
    const a = custom?.keyOf({ caller: 'c', method: 'GetTask', tenant: 'x\ud800' });
    const b = custom?.keyOf({ caller: 'c', method: 'GetTask', tenant: 'x\udc00' });
    expect(a).not.toBe(b);
    expect(lone.test(a ?? '')).toBe(false);
  });
});
