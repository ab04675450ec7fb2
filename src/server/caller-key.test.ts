import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatIpv6 } from '../wire/ip-address.js';
import {
  addressCallerKey,
  anonymousCallerKey,
  anonymousKeyOf,
  authenticatedCallerKey,
  createAddressKey,
} from './caller-key.js';

/** Names that lean on the reserved prefixes: `addr:…`, `user:addr:…`, `user:user:…`, plain. */
const name = fc
  .tuple(
    fc.array(fc.constantFrom('addr:', 'user:', 'USER:', 'addr', ':'), { maxLength: 3 }),
    fc.string(),
  )
  .map(([prefixes, rest]) => prefixes.join('') + rest);
const addressText = fc.oneof(fc.ipV4(), fc.ipV6(), fc.string(), fc.constant(undefined));

describe('authenticatedCallerKey', () => {
  it('leaves ordinary names readable', () => {
    expect(authenticatedCallerKey('alice')).toBe('alice');
    expect(authenticatedCallerKey('orchestrator-7')).toBe('orchestrator-7');
    expect(authenticatedCallerKey('address:x')).toBe('address:x');
  });

  it('escapes names that begin with a reserved prefix', () => {
    expect(authenticatedCallerKey('addr:127.0.0.1')).toBe('user:addr:127.0.0.1');
    expect(authenticatedCallerKey('user:bob')).toBe('user:user:bob');
  });

  it('is injective, and never meets an anonymous key, whatever the names (property)', () => {
    fc.assert(
      fc.property(name, name, addressText, (a, b, address) => {
        if (a !== b) expect(authenticatedCallerKey(a)).not.toBe(authenticatedCallerKey(b));
        expect(authenticatedCallerKey(a)).not.toBe(addressCallerKey(address));
        expect(authenticatedCallerKey(a)).not.toBe(anonymousCallerKey(b));
      }),
      { numRuns: 5000 },
    );
  });

  it('a user named like the anonymous key of 127.0.0.1 gets another key', () => {
    expect(authenticatedCallerKey('addr:127.0.0.1')).not.toBe(addressCallerKey('127.0.0.1'));
    expect(authenticatedCallerKey('addr:127.0.0.1')).not.toBe(addressCallerKey('::ffff:127.0.0.1'));
  });
});

describe('anonymousCallerKey', () => {
  it('puts application keys in the address namespace', () => {
    expect(anonymousCallerKey('addr:10.0.0.7')).toBe('addr:10.0.0.7');
    expect(anonymousCallerKey('10.0.0.7')).toBe('addr:10.0.0.7');
    expect(anonymousKeyOf((ip: string) => ip)('alice')).toBe('addr:alice');
  });
});

describe('addressCallerKey', () => {
  it('keys IPv4, and IPv4-mapped IPv6 as the same IPv4 address', () => {
    expect(addressCallerKey('127.0.0.1')).toBe('addr:127.0.0.1');
    expect(addressCallerKey('::ffff:127.0.0.1')).toBe('addr:127.0.0.1');
    expect(addressCallerKey('::FFFF:7f00:1')).toBe('addr:127.0.0.1');
  });

  it('keys IPv6 by its /64, whatever the spelling and zone', () => {
    expect(addressCallerKey('2001:db8:0:1::1')).toBe('addr:2001:db8:0:1::/64');
    expect(addressCallerKey('2001:DB8:0000:0001:ffff:ffff:ffff:ffff')).toBe(
      'addr:2001:db8:0:1::/64',
    );
    expect(addressCallerKey('fe80::1%eth0')).toBe('addr:fe80::/64');
    expect(addressCallerKey('::1')).toBe('addr:::/64');
  });

  it('takes another prefix length, and refuses a bad one', () => {
    expect(addressCallerKey('2001:db8:0:1ff::1', { ipv6PrefixLength: 56 })).toBe(
      'addr:2001:db8:0:100::/56',
    );
    expect(addressCallerKey('2001:db8::1', { ipv6PrefixLength: 128 })).toBe('addr:2001:db8::1/128');
    for (const bad of [0, 129, 64.5, Number.NaN]) {
      expect(() => addressCallerKey('::1', { ipv6PrefixLength: bad })).toThrow(/ipv6PrefixLength/);
      expect(() => createAddressKey({ ipv6PrefixLength: bad })).toThrow(/ipv6PrefixLength/);
    }
  });

  it('one key per prefix: same prefix ⇔ same key (property)', () => {
    const groups = fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 });
    const bits = (g: readonly number[]) => g.map((x) => x.toString(2).padStart(16, '0')).join('');
    fc.assert(
      fc.property(groups, groups, fc.integer({ min: 1, max: 128 }), (a, b, length) => {
        // Mapped addresses are IPv4 callers, keyed by their whole address.
        const mapped = (g: readonly number[]) =>
          g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff;
        fc.pre(!mapped(a) && !mapped(b));
        const samePrefix = bits(a).slice(0, length) === bits(b).slice(0, length);
        const options = { ipv6PrefixLength: length };
        expect(
          addressCallerKey(formatIpv6(a), options) === addressCallerKey(formatIpv6(b), options),
        ).toBe(samePrefix);
      }),
      { numRuns: 3000 },
    );
  });

  it('keeps text that is no address, and names a missing one', () => {
    expect(addressCallerKey('/run/agent.sock')).toBe('addr:/run/agent.sock');
    expect(addressCallerKey(undefined)).toBe('addr:unknown');
    expect(addressCallerKey('')).toBe('addr:unknown');
  });
});

describe('createAddressKey', () => {
  it('gives the same keys as addressCallerKey, reusing the last one', () => {
    const keyOf = createAddressKey({ ipv6PrefixLength: 48 });
    fc.assert(
      fc.property(fc.array(addressText, { maxLength: 20 }), (addresses) => {
        for (const a of addresses) {
          expect(keyOf(a)).toBe(addressCallerKey(a, { ipv6PrefixLength: 48 }));
        }
      }),
    );
    const first = keyOf('2001:db8::7');
    expect(keyOf('2001:db8::7')).toBe(first);
    expect(createAddressKey()(undefined)).toBe('addr:unknown');
  });
});
