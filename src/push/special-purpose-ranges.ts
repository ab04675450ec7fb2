/**
 * @module push/special-purpose-ranges
 * IANA special-purpose ranges: what an address is to the webhook policy. Pure.
 */

import { type Cidr, cidrContains, type IpAddress, parseCidr } from '../wire/ip-address.js';

/**
 * The special-purpose ranges an address can fall in (`public` when none).
 *
 * @example
 * ```ts
 * if (ADDRESS_RANGE.loopback === classifyIpAddress(ip).range) refuse();
 * ```
 */
export const ADDRESS_RANGE = {
  public: 'public',
  unspecified: 'unspecified',
  thisNetwork: 'this-network',
  loopback: 'loopback',
  private: 'private',
  carrierGradeNat: 'carrier-grade-nat',
  linkLocal: 'link-local',
  ietfProtocol: 'ietf-protocol',
  documentation: 'documentation',
  benchmarking: 'benchmarking',
  reserved: 'reserved',
  multicast: 'multicast',
  broadcast: 'broadcast',
  uniqueLocal: 'unique-local',
  siteLocal: 'site-local',
  discard: 'discard',
  ipv4Compatible: 'ipv4-compatible',
  nat64Local: 'nat64-local',
  srv6: 'srv6',
} as const;

/**
 * One of {@link ADDRESS_RANGE}.
 */
export type AddressRange = (typeof ADDRESS_RANGE)[keyof typeof ADDRESS_RANGE];

/**
 * What an address is: its range, the registry entry that matched, and — for an IPv6 address that
 * carries an IPv4 one — how it carried it (the range is then the IPv4 address's).
 *
 * @example
 * ```ts
 * classifyIpAddress(parseIpAddress('::ffff:7f00:1')!);
 * // { range: 'loopback', cidr: '127.0.0.0/8', via: 'ipv4-mapped' }
 * ```
 */
export interface AddressClass {
  readonly range: AddressRange;
  /** The matched entry, e.g. `169.254.0.0/16`; absent for `public`. */
  readonly cidr?: string;
  /** The IPv6 form that embedded the classified IPv4 address. */
  readonly via?: 'ipv4-mapped' | 'nat64' | '6to4';
}

/** Ranges never opened by `allowPrivateNetworks`: they are not destinations at all. */
const NOT_DESTINATIONS: ReadonlySet<AddressRange> = new Set([
  ADDRESS_RANGE.unspecified,
  ADDRESS_RANGE.thisNetwork,
  ADDRESS_RANGE.multicast,
  ADDRESS_RANGE.broadcast,
  ADDRESS_RANGE.reserved,
]);

/**
 * Whether `allowPrivateNetworks` opens a range: every special-purpose range that can be a unicast
 * destination (loopback, private, CGNAT, link-local, unique-local, documentation…), but never
 * `unspecified`, `this-network`, `multicast`, `broadcast` or `reserved` (only an allow-list CIDR
 * opens those).
 *
 * @example
 * ```ts
 * isOpenedByPrivateNetworks('loopback'); // true
 * isOpenedByPrivateNetworks('multicast'); // false
 * ```
 */
export function isOpenedByPrivateNetworks(range: AddressRange): boolean {
  return range !== ADDRESS_RANGE.public && !NOT_DESTINATIONS.has(range);
}

interface RangeEntry {
  readonly cidr: Cidr;
  readonly text: string;
  readonly range: AddressRange;
  /** IPv6 forms carrying an IPv4 address at `offset` (bytes). */
  readonly embeds?: { readonly via: NonNullable<AddressClass['via']>; readonly offset: number };
}

function entry(text: string, range: AddressRange, embeds?: RangeEntry['embeds']): RangeEntry {
  return { cidr: parseCidr(text), text, range, ...(embeds === undefined ? {} : { embeds }) };
}

/**
 * IANA's IPv4 and IPv6 special-purpose address registries, the entries that are not globally
 * reachable, most specific first; plus IPv4 multicast and the former class E. The IPv6 entries
 * with `embeds` are classified by the IPv4 address they carry.
 */
const RANGES: readonly RangeEntry[] = [
  entry('0.0.0.0/32', ADDRESS_RANGE.unspecified),
  entry('0.0.0.0/8', ADDRESS_RANGE.thisNetwork),
  entry('10.0.0.0/8', ADDRESS_RANGE.private),
  entry('100.64.0.0/10', ADDRESS_RANGE.carrierGradeNat),
  entry('127.0.0.0/8', ADDRESS_RANGE.loopback),
  entry('169.254.0.0/16', ADDRESS_RANGE.linkLocal),
  entry('172.16.0.0/12', ADDRESS_RANGE.private),
  entry('192.0.0.0/24', ADDRESS_RANGE.ietfProtocol),
  entry('192.0.2.0/24', ADDRESS_RANGE.documentation),
  entry('192.88.99.0/24', ADDRESS_RANGE.reserved),
  entry('192.168.0.0/16', ADDRESS_RANGE.private),
  entry('198.18.0.0/15', ADDRESS_RANGE.benchmarking),
  entry('198.51.100.0/24', ADDRESS_RANGE.documentation),
  entry('203.0.113.0/24', ADDRESS_RANGE.documentation),
  entry('224.0.0.0/4', ADDRESS_RANGE.multicast),
  entry('255.255.255.255/32', ADDRESS_RANGE.broadcast),
  entry('240.0.0.0/4', ADDRESS_RANGE.reserved),
  entry('::/128', ADDRESS_RANGE.unspecified),
  entry('::1/128', ADDRESS_RANGE.loopback),
  entry('::ffff:0:0/96', ADDRESS_RANGE.public, { via: 'ipv4-mapped', offset: 12 }),
  entry('::/96', ADDRESS_RANGE.ipv4Compatible),
  entry('64:ff9b:1::/48', ADDRESS_RANGE.nat64Local),
  entry('64:ff9b::/96', ADDRESS_RANGE.public, { via: 'nat64', offset: 12 }),
  entry('100::/64', ADDRESS_RANGE.discard),
  entry('2001:db8::/32', ADDRESS_RANGE.documentation),
  entry('2001::/23', ADDRESS_RANGE.ietfProtocol),
  entry('2002::/16', ADDRESS_RANGE.public, { via: '6to4', offset: 2 }),
  entry('3fff::/20', ADDRESS_RANGE.documentation),
  entry('5f00::/16', ADDRESS_RANGE.srv6),
  entry('fc00::/7', ADDRESS_RANGE.uniqueLocal),
  entry('fe80::/10', ADDRESS_RANGE.linkLocal),
  entry('fec0::/10', ADDRESS_RANGE.siteLocal),
  entry('ff00::/8', ADDRESS_RANGE.multicast),
];

/**
 * The special-purpose ranges, as text, with what each is (for docs and operators).
 *
 * @example
 * ```ts
 * SPECIAL_PURPOSE_RANGES.find((r) => r.cidr === '100.64.0.0/10')?.range; // 'carrier-grade-nat'
 * ```
 */
export const SPECIAL_PURPOSE_RANGES: readonly { readonly cidr: string; readonly range: string }[] =
  RANGES.map((r) => ({ cidr: r.text, range: r.embeds?.via ?? r.range }));

/**
 * Classifies an address: the first special-purpose range that contains it, or `public`. An
 * IPv4-mapped, NAT64 (`64:ff9b::/96`) or 6to4 (`2002::/16`) address is classified by the IPv4
 * address it carries, so `::ffff:127.0.0.1` and `2002:7f00:1::` are `loopback`.
 *
 * @example
 * ```ts
 * classifyIpAddress(parseIpAddress('169.254.169.254')!); // { range: 'link-local', cidr: '169.254.0.0/16' }
 * classifyIpAddress(parseIpAddress('8.8.8.8')!);         // { range: 'public' }
 * ```
 */
export function classifyIpAddress(ip: IpAddress): AddressClass {
  for (const r of RANGES) {
    if (!cidrContains(r.cidr, ip)) continue;
    if (r.embeds === undefined) return { range: r.range, cidr: r.text };
    const inner: IpAddress = {
      version: 4,
      bytes: ip.bytes.slice(r.embeds.offset, r.embeds.offset + 4),
    };
    const innerClass = classifyIpAddress(inner);
    return { ...innerClass, via: r.embeds.via };
  }
  return { range: ADDRESS_RANGE.public };
}
