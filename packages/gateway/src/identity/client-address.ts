/**
 * @module client-address
 * Where a request comes from: CIDR sets, addresses as sockets and `X-Forwarded-For` spell them, and
 * the client behind trusted proxies.
 */

import { BlockList, isIP } from 'node:net';

/**
 * A set of CIDR ranges (IPv4 and IPv6).
 */
export interface CidrSet {
  /** Whether the set is empty. */
  readonly empty: boolean;
  /** Whether `address` (any spelling {@link normalizeAddress} reads) is in a range. */
  contains(address: string | undefined): boolean;
}

/**
 * A set of ranges, each `address/prefix` or a bare address (validated by the config; a
 * `RangeError` for a bad one).
 *
 * @example
 * ```ts
 * const set = createCidrSet(['10.0.0.0/8', '::1']);
 * set.contains('::ffff:10.1.2.3'); // true
 * set.contains('192.0.2.1');       // false
 * ```
 */
export function createCidrSet(ranges: readonly string[]): CidrSet {
  const list = new BlockList();
  for (const range of ranges) {
    const slash = range.indexOf('/');
    const address = slash < 0 ? range : range.slice(0, slash);
    const version = isIP(address);
    if (version === 0) throw new RangeError(`"${range}" is not an IP address or CIDR range`);
    const type = version === 4 ? 'ipv4' : 'ipv6';
    const prefix = slash < 0 ? (version === 4 ? 32 : 128) : Number(range.slice(slash + 1));
    list.addSubnet(address, prefix, type);
  }
  const empty = ranges.length === 0;
  return {
    empty,
    contains(address) {
      if (empty || address === undefined) return false;
      const ip = normalizeAddress(address);
      if (ip === undefined) return false;
      return list.check(ip, isIP(ip) === 4 ? 'ipv4' : 'ipv6');
    },
  };
}

const MAPPED = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i;
const MAPPED_HEX = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i;

/**
 * An address as `node:net` reads it, or undefined when `text` is none: surrounding spaces,
 * brackets, a port (`1.2.3.4:80`, `[::1]:80`) and an IPv6 zone dropped; an IPv4-mapped IPv6
 * address (`::ffff:1.2.3.4`) given as the IPv4 address.
 *
 * @example
 * ```ts
 * normalizeAddress('::ffff:127.0.0.1'); // '127.0.0.1'
 * normalizeAddress('[2001:db8::1]:443'); // '2001:db8::1'
 * normalizeAddress('unknown');           // undefined
 * ```
 */
export function normalizeAddress(text: string): string | undefined {
  let t = text.trim();
  if (t.startsWith('[')) {
    const close = t.indexOf(']');
    if (close < 0) return undefined;
    const rest = t.slice(close + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return undefined;
    t = t.slice(1, close);
  } else if (/^[^:]+:\d{1,5}$/.test(t)) {
    t = t.slice(0, t.indexOf(':')); // IPv4 with a port
  }
  const zone = t.indexOf('%');
  if (zone >= 0) t = t.slice(0, zone);
  const version = isIP(t);
  if (version === 4) return t;
  if (version !== 6) return undefined;
  const mapped = MAPPED.exec(t);
  if (mapped?.[1] !== undefined) return mapped[1];
  const hex = MAPPED_HEX.exec(t);
  if (hex?.[1] !== undefined && hex[2] !== undefined) {
    const high = Number.parseInt(hex[1], 16);
    const low = Number.parseInt(hex[2], 16);
    return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  }
  return t.toLowerCase();
}

/**
 * The client's address: the connection's source, or — when that is a trusted proxy — the
 * `X-Forwarded-For` entries read from the right, each trusted hop skipped, the first untrusted
 * one taken. When every entry is trusted the leftmost is the client; when an entry is not an
 * address the walk stops at the last hop known good (a proxy never writes such an entry, so it
 * came from beyond the trusted chain). Undefined only without a source address.
 *
 * @example
 * ```ts
 * const proxies = createCidrSet(['10.0.0.0/8']);
 * clientAddress('10.0.0.2', '203.0.113.9, 10.0.0.1', proxies); // '203.0.113.9'
 * clientAddress('198.51.100.7', '203.0.113.9', proxies);        // '198.51.100.7' (not trusted)
 * ```
 */
export function clientAddress(
  remoteAddress: string | undefined,
  forwardedFor: string | undefined,
  trustedProxies: CidrSet,
): string | undefined {
  if (remoteAddress === undefined) return undefined;
  const remote = normalizeAddress(remoteAddress) ?? remoteAddress;
  if (forwardedFor === undefined || !trustedProxies.contains(remote)) return remote;
  const hops = forwardedFor.split(',');
  let client = remote;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = normalizeAddress(hops[i] as string);
    if (hop === undefined) return client;
    client = hop;
    if (!trustedProxies.contains(hop)) return hop;
  }
  return client;
}
