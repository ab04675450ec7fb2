import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { embeddedIpv4, type IpAddress, parseIpAddress } from '../wire/ip-address.js';
import {
  classifyIpAddress,
  isOpenedByPrivateNetworks,
  SPECIAL_PURPOSE_RANGES,
} from './special-purpose-ranges.js';

function ip(text: string): IpAddress {
  const parsed = parseIpAddress(text);
  if (parsed === undefined) throw new Error(`test address ${text} does not parse`);
  return parsed;
}

describe('odd spellings go through WHATWG URL to one form', () => {
  it('decimal, hex and octal spellings of any IPv4 address become its dotted form and class', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffff_ffff }), (n) => {
        const dotted = [24, 16, 8, 0].map((s) => (n >>> s) & 0xff).join('.');
        for (const spelling of [String(n), `0x${n.toString(16)}`, `0${n.toString(8)}`]) {
          const hostname = new URL(`http://${spelling}/hook`).hostname;
          expect(hostname, spelling).toBe(dotted);
          expect(classifyIpAddress(ip(hostname))).toEqual(classifyIpAddress(ip(dotted)));
        }
      }),
    );
  });

  it.each([
    ['http://2130706433/', '127.0.0.1', 'loopback'],
    ['http://0x7f.1/', '127.0.0.1', 'loopback'],
    ['http://0177.0.0.1/', '127.0.0.1', 'loopback'],
    ['http://127.1/', '127.0.0.1', 'loopback'],
    ['http://0xa9fea9fe/', '169.254.169.254', 'link-local'],
    ['http://0/', '0.0.0.0', 'unspecified'],
    ['http://[::ffff:127.0.0.1]/', '[::ffff:7f00:1]', 'loopback'],
    ['http://[0:0:0:0:0:ffff:a00:1]/', '[::ffff:a00:1]', 'private'],
    ['http://[::]/', '[::]', 'unspecified'],
    ['http://[0:0::1]/', '[::1]', 'loopback'],
  ])('%s → %s (%s)', (url, hostname, range) => {
    const host = new URL(url).hostname;
    expect(host).toBe(hostname);
    expect(classifyIpAddress(ip(host)).range).toBe(range);
  });
});

describe('classifyIpAddress', () => {
  it.each([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'this-network'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'carrier-grade-nat'],
    ['100.127.255.255', 'carrier-grade-nat'],
    ['127.0.0.1', 'loopback'],
    ['127.255.1.2', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['192.0.0.192', 'ietf-protocol'],
    ['192.0.2.1', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['::7f00:1', 'ipv4-compatible'],
    ['fc00::1', 'unique-local'],
    ['fd00:ec2::254', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['febf:ffff::1', 'link-local'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['100::1', 'discard'],
    ['64:ff9b:1::1', 'nat64-local'],
    ['8.8.8.8', 'public'],
    ['100.63.255.255', 'public'],
    ['100.128.0.0', 'public'],
    ['172.32.0.1', 'public'],
    ['11.0.0.1', 'public'],
    ['2606:4700::1111', 'public'],
  ])('%s is %s', (text, range) => {
    expect(classifyIpAddress(ip(text)).range).toBe(range);
  });

  it.each([
    ['::ffff:127.0.0.1', 'loopback', 'ipv4-mapped'],
    ['::ffff:169.254.169.254', 'link-local', 'ipv4-mapped'],
    ['::ffff:10.0.0.1', 'private', 'ipv4-mapped'],
    ['::ffff:100.64.0.1', 'carrier-grade-nat', 'ipv4-mapped'],
    ['::ffff:0.0.0.0', 'unspecified', 'ipv4-mapped'],
    ['::ffff:224.0.0.1', 'multicast', 'ipv4-mapped'],
    ['::ffff:8.8.8.8', 'public', 'ipv4-mapped'],
    ['64:ff9b::127.0.0.1', 'loopback', 'nat64'],
    ['64:ff9b::8.8.8.8', 'public', 'nat64'],
    ['2002:a9fe:a9fe::1', 'link-local', '6to4'],
    ['2002:808:808::1', 'public', '6to4'],
  ])('%s carries an IPv4 address: %s via %s', (text, range, via) => {
    expect(classifyIpAddress(ip(text))).toMatchObject({ range, via });
  });

  it('every IPv4-mapped address is classified as its IPv4 address', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 4, maxLength: 4 }), (v4) => {
        const mapped = new Uint8Array(16);
        mapped[10] = 0xff;
        mapped[11] = 0xff;
        mapped.set(v4, 12);
        const { range, cidr } = classifyIpAddress({ version: 6, bytes: mapped });
        const direct = classifyIpAddress({ version: 4, bytes: v4 });
        expect({ range, cidr }).toEqual(direct);
        expect(embeddedIpv4({ version: 6, bytes: mapped })?.bytes).toEqual(v4);
      }),
    );
  });

  it('allowPrivateNetworks opens the unicast ranges, never the non-destinations', () => {
    for (const r of [
      'loopback',
      'private',
      'carrier-grade-nat',
      'link-local',
      'unique-local',
    ] as const) {
      expect(isOpenedByPrivateNetworks(r)).toBe(true);
    }
    for (const r of [
      'unspecified',
      'this-network',
      'multicast',
      'broadcast',
      'reserved',
      'public',
    ] as const) {
      expect(isOpenedByPrivateNetworks(r)).toBe(false);
    }
  });

  it('publishes its table', () => {
    expect(SPECIAL_PURPOSE_RANGES).toContainEqual({ cidr: '169.254.0.0/16', range: 'link-local' });
    expect(SPECIAL_PURPOSE_RANGES).toContainEqual({ cidr: '::ffff:0:0/96', range: 'ipv4-mapped' });
  });
});
