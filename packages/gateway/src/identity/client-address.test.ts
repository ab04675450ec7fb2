import { describe, expect, it } from 'vitest';
import { clientAddress, createCidrSet, normalizeAddress } from './client-address.js';

describe('normalizeAddress', () => {
  it.each([
    ['127.0.0.1', '127.0.0.1'],
    [' 10.0.0.1 ', '10.0.0.1'],
    ['10.0.0.1:8080', '10.0.0.1'],
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['::FFFF:7f00:1', '127.0.0.1'],
    ['[2001:DB8::1]:443', '2001:db8::1'],
    ['[::1]', '::1'],
    ['fe80::1%eth0', 'fe80::1'],
  ])('%s → %s', (text, address) => {
    expect(normalizeAddress(text)).toBe(address);
  });

  it.each(['unknown', '', '_hidden', '300.1.1.1', '[::1', '[::1]x', 'example.com', '1.2.3.4:port'])(
    '%s is no address',
    (text) => {
      expect(normalizeAddress(text)).toBeUndefined();
    },
  );
});

describe('createCidrSet', () => {
  it('matches IPv4, IPv6 and IPv4-mapped addresses', () => {
    const set = createCidrSet(['10.0.0.0/8', '2001:db8::/32', '192.0.2.7']);
    expect(set.empty).toBe(false);
    expect(set.contains('10.255.0.1')).toBe(true);
    expect(set.contains('::ffff:10.1.2.3')).toBe(true);
    expect(set.contains('11.0.0.1')).toBe(false);
    expect(set.contains('2001:db8:ffff::1')).toBe(true);
    expect(set.contains('2001:db9::1')).toBe(false);
    expect(set.contains('192.0.2.7')).toBe(true);
    expect(set.contains('192.0.2.8')).toBe(false);
    expect(set.contains('not an address')).toBe(false);
    expect(set.contains(undefined)).toBe(false);
  });

  it('contains nothing when empty', () => {
    const set = createCidrSet([]);
    expect(set.empty).toBe(true);
    expect(set.contains('127.0.0.1')).toBe(false);
  });
});

describe('clientAddress', () => {
  const proxies = createCidrSet(['10.0.0.0/8', 'fd00::/8']);

  it('is the connection source without trusted proxies', () => {
    expect(clientAddress('203.0.113.5', '198.51.100.1', createCidrSet([]))).toBe('203.0.113.5');
  });

  it('ignores X-Forwarded-For from a source that is not a trusted proxy', () => {
    expect(clientAddress('203.0.113.5', '198.51.100.1', proxies)).toBe('203.0.113.5');
    expect(clientAddress('::ffff:203.0.113.5', '198.51.100.1', proxies)).toBe('203.0.113.5');
  });

  it('walks from the right, skipping trusted hops', () => {
    expect(clientAddress('10.0.0.2', '198.51.100.1', proxies)).toBe('198.51.100.1');
    expect(clientAddress('10.0.0.2', '198.51.100.1, 10.0.0.9, 10.1.1.1', proxies)).toBe(
      '198.51.100.1',
    );
    expect(clientAddress('fd00::2', '2001:db8::7,fd00::1', proxies)).toBe('2001:db8::7');
  });

  it('never goes past the first untrusted hop (a client cannot forge the left part)', () => {
    expect(clientAddress('10.0.0.2', '1.1.1.1, 198.51.100.1, 10.0.0.9', proxies)).toBe(
      '198.51.100.1',
    );
  });

  it('takes the leftmost entry when every hop is trusted', () => {
    expect(clientAddress('10.0.0.2', '10.0.0.3, 10.0.0.4', proxies)).toBe('10.0.0.3');
  });

  it('stops at the last good hop on an entry that is no address', () => {
    expect(clientAddress('10.0.0.2', 'unknown', proxies)).toBe('10.0.0.2');
    expect(clientAddress('10.0.0.2', '198.51.100.1, garbage, 10.0.0.9', proxies)).toBe('10.0.0.9');
    expect(clientAddress('10.0.0.2', '198.51.100.1,', proxies)).toBe('10.0.0.2');
  });

  it('reads ports and brackets in entries', () => {
    expect(clientAddress('10.0.0.2', '198.51.100.1:5555', proxies)).toBe('198.51.100.1');
    expect(clientAddress('10.0.0.2', '[2001:db8::7]:443', proxies)).toBe('2001:db8::7');
  });

  it('is undefined without a source address', () => {
    expect(clientAddress(undefined, '198.51.100.1', proxies)).toBeUndefined();
  });
});
