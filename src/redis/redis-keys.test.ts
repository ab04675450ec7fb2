import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compilePolicies } from '../core/compile-policies.js';
import { messageKey, policyNameOfKey, redisKeyPart, requestStep } from './redis-keys.js';

describe('redis keys', () => {
  const set = compilePolicies([
    { name: 'per-caller', kind: 'rate', scope: 'caller', limit: 1, windowSeconds: 1 },
    { name: 'per-tenant', kind: 'rate', scope: 'tenant', limit: 1, windowSeconds: 1 },
    { name: 'agent}x', kind: 'overload', maxInFlight: 3 },
  ]);
  const input = { caller: 'a}b', tenant: 't1', method: 'SendMessage' as const };

  it('tags by caller, tenant or own key; escapes } once; names the policy, not its index', () => {
    const [c, t, o] = set.policies.map((p) => requestStep('p:', p, input, p.keyOf(input) ?? ''));
    expect(c?.key).toBe('p:k{c:a)b}per-caller\u0000a}b');
    expect(t?.key).toBe('p:k{t:t1}per-tenant\u0000t1');
    expect(o?.key).toBe('p:k{s:agent}agent}x\u0000agent');
    expect(o?.takesLease).toBe(true);
    expect(c?.takesLease).toBe(false);
    expect(messageKey('p:', 'a}b', 'm1')).toBe('p:d{c:a)b}3:a}b/m1');
  });

  it('reads the policy name back from a key', () => {
    for (const p of set.policies) {
      const step = requestStep('p:', p, input, p.keyOf(input) ?? '');
      expect(policyNameOfKey('p:', step.key)).toBe(p.name);
    }
    expect(policyNameOfKey('p:', 'q:k{c:a}r\u0000a')).toBeUndefined();
    expect(policyNameOfKey('p:', 'p:d{c:a}a\u0000m')).toBeUndefined();
  });
});

describe('redisKeyPart', () => {
  const utf8 = (s: string) => Buffer.from(s, 'utf8').toString('hex');
  const part = fc.oneof(
    fc.string({
      unit: fc.constantFrom('a', '\\', '\u0000', '\ud800', '\udc00', '\ud83d\ude00', '\uffff', 'u'),
    }),
    fc.string({ unit: 'binary', maxLength: 8 }),
  );

  it('keeps distinct parts distinct as UTF-8 bytes, and plain parts as they are (property)', () => {
    fc.assert(
      fc.property(part, part, (a, b) => {
        expect(utf8(redisKeyPart(a)) === utf8(redisKeyPart(b))).toBe(a === b);
        if (!/\p{Cs}/u.test(a) && !a.startsWith('\uffff')) expect(redisKeyPart(a)).toBe(a);
      }),
      { numRuns: 3000 },
    );
  });

  it('x\\ud800 and x\\udc00: one key as UTF-8 without it, two with it', () => {
    expect(utf8('x\ud800')).toBe(utf8('x\udc00'));
    expect(utf8(redisKeyPart('x\ud800'))).not.toBe(utf8(redisKeyPart('x\udc00')));
    expect(utf8(messageKey('p:', 'x\ud800', 'm'))).not.toBe(utf8(messageKey('p:', 'x\udc00', 'm')));
  });
});
