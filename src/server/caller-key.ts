/**
 * @module caller-key
 * The default caller keys of the Express and gRPC adapters: addresses (`addr:…`, IPv6 by prefix)
 * and user names, in two namespaces that never meet. Pure.
 */

import { formatIpv6, isIpv4Mapped, parseIpv4, parseIpv6Into } from '../wire/ip-address.js';

/**
 * The prefix of every key of a caller nobody authenticated.
 *
 * @example
 * ```ts
 * addressCallerKey('127.0.0.1').startsWith(ADDRESS_KEY_PREFIX); // true
 * ```
 */
export const ADDRESS_KEY_PREFIX = 'addr:';

/**
 * The escape of authenticated names that begin with a reserved prefix (this one or
 * {@link ADDRESS_KEY_PREFIX}).
 *
 * @example
 * ```ts
 * authenticatedCallerKey('addr:127.0.0.1'); // 'user:addr:127.0.0.1'
 * ```
 */
export const USER_KEY_PREFIX = 'user:';

/**
 * Default prefix length, bits, by which IPv6 callers are aggregated: one /64 is one subscriber's
 * network (RFC 6177), so one host cannot get a fresh bucket per address of its prefix.
 *
 * @example
 * ```ts
 * addressCallerKey('2001:db8::1', { ipv6PrefixLength: DEFAULT_IPV6_PREFIX_LENGTH }); // 'addr:2001:db8::/64'
 * ```
 */
export const DEFAULT_IPV6_PREFIX_LENGTH = 64;

/**
 * How address keys aggregate callers.
 */
export interface AddressKeyOptions {
  /** IPv6 callers sharing this many leading bits share a key; integer 1–128, default 64. */
  readonly ipv6PrefixLength?: number;
}

/**
 * The key of an authenticated user: the name itself, or `user:` + the name when it begins with
 * `addr:` or `user:`. Never begins with `addr:`; distinct names give distinct keys.
 *
 * @example
 * ```ts
 * authenticatedCallerKey('alice');          // 'alice'
 * authenticatedCallerKey('addr:127.0.0.1'); // 'user:addr:127.0.0.1'
 * authenticatedCallerKey('user:bob');       // 'user:user:bob'
 * ```
 */
export function authenticatedCallerKey(userName: string): string {
  return userName.startsWith(ADDRESS_KEY_PREFIX) || userName.startsWith(USER_KEY_PREFIX)
    ? `${USER_KEY_PREFIX}${userName}`
    : userName;
}

/**
 * A key chosen by the application for a caller it did not authenticate (`unauthenticatedKey`), put
 * in the address namespace: kept when it begins with `addr:`, else prefixed with it. So it never
 * meets an {@link authenticatedCallerKey}.
 *
 * @example
 * ```ts
 * anonymousCallerKey('addr:10.0.0.7'); // 'addr:10.0.0.7'
 * anonymousCallerKey('10.0.0.7');      // 'addr:10.0.0.7'
 * ```
 */
export function anonymousCallerKey(key: string): string {
  return key.startsWith(ADDRESS_KEY_PREFIX) ? key : `${ADDRESS_KEY_PREFIX}${key}`;
}

/**
 * An application's `unauthenticatedKey` function with its keys put in the address namespace
 * ({@link anonymousCallerKey}).
 *
 * @example
 * ```ts
 * const keyOf = anonymousKeyOf((req: { ip: string }) => req.ip);
 * keyOf({ ip: '10.0.0.7' }); // 'addr:10.0.0.7'
 * ```
 */
export function anonymousKeyOf<T>(key: (source: T) => string): (source: T) => string {
  return (source) => anonymousCallerKey(key(source));
}

/**
 * Checks `ipv6PrefixLength` and gives the value in force; a `RangeError` for a bad one.
 *
 * @example
 * ```ts
 * ipv6PrefixLengthOf({ ipv6PrefixLength: 56 }); // 56
 * ipv6PrefixLengthOf({});                       // 64
 * ```
 */
export function ipv6PrefixLengthOf(options: AddressKeyOptions = {}): number {
  const length = options.ipv6PrefixLength ?? DEFAULT_IPV6_PREFIX_LENGTH;
  if (!Number.isInteger(length) || length < 1 || length > 128) {
    throw new RangeError(`ipv6PrefixLength must be an integer from 1 to 128, got ${length}`);
  }
  return length;
}

/**
 * The key of a caller nobody authenticated, from its address: `addr:1.2.3.4` for IPv4 (and for
 * IPv4-mapped IPv6), `addr:<prefix>/<length>` for IPv6 (`addr:2001:db8:1:2::/64`, whatever the
 * spelling, zone ignored), `addr:<text>` for text that is no IP address, `addr:unknown` without
 * one. Allocates a string (and scratch space) per call; `createAddressKey` reuses the
 * last key and its scratch space.
 *
 * @example
 * ```ts
 * addressCallerKey('::ffff:127.0.0.1');              // 'addr:127.0.0.1'
 * addressCallerKey('2001:DB8:0:1:aaaa::1');          // 'addr:2001:db8:0:1::/64'
 * addressCallerKey('2001:db8:0:1ff::1', { ipv6PrefixLength: 56 }); // 'addr:2001:db8:0:100::/56'
 * ```
 */
export function addressCallerKey(
  address: string | undefined,
  options: AddressKeyOptions = {},
): string {
  return keyOfAddress(address, ipv6PrefixLengthOf(options), new Array<number>(8).fill(0));
}

const MAPPED_PREFIX = '::ffff:';

/** The key of `address`; `groups` is scratch space (8 numbers), overwritten. */
function keyOfAddress(address: string | undefined, prefixLength: number, groups: number[]): string {
  if (address === undefined || address === '') return `${ADDRESS_KEY_PREFIX}unknown`;
  // The spellings sockets give, checked without allocating: valid dotted IPv4 is canonical.
  if (!address.includes(':')) return `${ADDRESS_KEY_PREFIX}${address}`; // IPv4, or no IP at all
  if (address.startsWith(MAPPED_PREFIX) && parseIpv4(address, MAPPED_PREFIX.length) >= 0) {
    return `${ADDRESS_KEY_PREFIX}${address.slice(MAPPED_PREFIX.length)}`;
  }
  if (!parseIpv6Into(address, groups)) return `${ADDRESS_KEY_PREFIX}${address}`;
  if (isIpv4Mapped(groups)) {
    const high = groups[6] as number;
    const low = groups[7] as number;
    return `${ADDRESS_KEY_PREFIX}${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  }
  for (let i = 0; i < 8; i++) {
    const bits = Math.min(16, Math.max(0, prefixLength - 16 * i));
    groups[i] = bits === 0 ? 0 : (groups[i] as number) & ((0xffff << (16 - bits)) & 0xffff);
  }
  return `${ADDRESS_KEY_PREFIX}${formatIpv6(groups)}/${prefixLength}`;
}

/**
 * {@link addressCallerKey} with its options checked once, remembering the last address (state
 * of this function, one per handler): the consecutive requests of one client (a keep-alive
 * connection) cost one string comparison and share one key string (whose hash the store then
 * finds already computed).
 *
 * @example
 * ```ts
 * const keyOf = createAddressKey({ ipv6PrefixLength: 56 });
 * keyOf(req.socket.remoteAddress); // 'addr:127.0.0.1'
 * ```
 */
export function createAddressKey(
  options: AddressKeyOptions = {},
): (address: string | undefined) => string {
  const prefixLength = ipv6PrefixLengthOf(options);
  /** Scratch groups of this key function's parses (synchronous: one array serves every call). */
  const groups = new Array<number>(8).fill(0);
  let lastAddress: string | undefined;
  let lastKey = keyOfAddress(undefined, prefixLength, groups);
  return (address) => {
    if (address === lastAddress) return lastKey;
    const key = keyOfAddress(address, prefixLength, groups);
    lastAddress = address;
    lastKey = key;
    return key;
  };
}
