/**
 * @module ip-address
 * IP address text → its value, and IPv6 prefixes: the parser behind address-keyed callers. Accepts
 * every spelling a socket, a proxy header or a person may use (dotted IPv4; IPv6 with `::` in any
 * place, upper or lower case, leading zeros, an IPv4 tail, a `%zone`), and prints IPv6 in RFC 5952
 * form. Pure (no Node APIs), so it can be checked against Node's own parser in the tests.
 */

/**
 * An address as numbers: IPv4 as its 4 octets, IPv6 as its 8 groups of 16 bits (network order).
 * An IPv4-mapped IPv6 address (`::ffff:1.2.3.4`) is given as the IPv4 address it maps.
 *
 * @example
 * ```ts
 * const a: IpAddress = { family: 4, octets: [127, 0, 0, 1] };
 * const b: IpAddress = { family: 6, groups: [0x2001, 0xdb8, 0, 0, 0, 0, 0, 1] };
 * ```
 */
export type IpAddress =
  | { readonly family: 4; readonly octets: readonly number[] }
  | { readonly family: 6; readonly groups: readonly number[] };

const DECIMAL_OCTET = /^(?:0|[1-9]\d{0,2})$/;
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

/** Dotted-decimal IPv4 (four parts 0–255, no leading zeros, as Node reads it); undefined otherwise. */
function parseIpv4Octets(text: string): number[] | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const octets: number[] = [];
  for (const part of parts) {
    if (!DECIMAL_OCTET.test(part)) return undefined;
    const value = Number(part);
    if (value > 255) return undefined;
    octets.push(value);
  }
  return octets;
}

/** Groups of one side of `::` (or of a whole address without it); undefined when malformed. */
function parseGroups(text: string, mayEndInIpv4: boolean): number[] | undefined {
  if (text === '') return [];
  const parts = text.split(':');
  const groups: number[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as string;
    if (mayEndInIpv4 && i === parts.length - 1 && part.includes('.')) {
      const octets = parseIpv4Octets(part);
      if (octets === undefined) return undefined;
      groups.push(
        ((octets[0] as number) << 8) | (octets[1] as number),
        ((octets[2] as number) << 8) | (octets[3] as number),
      );
    } else if (HEX_GROUP.test(part)) {
      groups.push(Number.parseInt(part, 16));
    } else {
      return undefined;
    }
  }
  return groups;
}

/**
 * The 8 groups of an IPv6 address text (a `%zone` suffix is accepted and ignored); undefined when
 * the text is not IPv6.
 *
 * @example
 * ```ts
 * parseIpv6Groups('2001:DB8::1%eth0'); // [0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]
 * parseIpv6Groups('::ffff:1.2.3.4');   // [0, 0, 0, 0, 0, 0xffff, 0x102, 0x304]
 * parseIpv6Groups('1:2');              // undefined
 * ```
 */
export function parseIpv6Groups(text: string): number[] | undefined {
  const zone = text.indexOf('%');
  const address = zone < 0 ? text : text.slice(0, zone);
  if (zone >= 0 && zone === text.length - 1) return undefined; // an empty zone
  const gap = address.indexOf('::');
  if (gap < 0) {
    const groups = parseGroups(address, true);
    return groups?.length === 8 ? groups : undefined;
  }
  if (address.indexOf('::', gap + 1) >= 0) return undefined; // a second `::`, or `:::`
  const head = parseGroups(address.slice(0, gap), false);
  const tail = parseGroups(address.slice(gap + 2), true);
  if (head === undefined || tail === undefined || head.length + tail.length > 7) return undefined;
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/**
 * Parses an IPv4 or IPv6 address text; an IPv4-mapped IPv6 address comes back as its IPv4
 * address. Undefined for anything else (a host name, an empty string, `01.2.3.4`).
 *
 * @example
 * ```ts
 * parseIpAddress('::FFFF:127.0.0.1'); // { family: 4, octets: [127, 0, 0, 1] }
 * parseIpAddress('fe80::1%lo');       // { family: 6, groups: [0xfe80, 0, 0, 0, 0, 0, 0, 1] }
 * ```
 */
export function parseIpAddress(text: string): IpAddress | undefined {
  if (!text.includes(':')) {
    const octets = parseIpv4Octets(text);
    return octets === undefined ? undefined : { family: 4, octets };
  }
  const groups = parseIpv6Groups(text);
  if (groups === undefined) return undefined;
  if (isIpv4Mapped(groups)) {
    const high = groups[6] as number;
    const low = groups[7] as number;
    return { family: 4, octets: [high >> 8, high & 0xff, low >> 8, low & 0xff] };
  }
  return { family: 6, groups };
}

/** `::ffff:0:0/96`: the first 80 bits zero, the next 16 ones. */
function isIpv4Mapped(groups: readonly number[]): boolean {
  for (let i = 0; i < 5; i++) if (groups[i] !== 0) return false;
  return groups[5] === 0xffff;
}

/**
 * The first `prefixLength` bits of an IPv6 address, the rest zero.
 *
 * @example
 * ```ts
 * ipv6Prefix([0x2001, 0xdb8, 1, 2, 3, 4, 5, 6], 56); // [0x2001, 0xdb8, 1, 0, 0, 0, 0, 0]
 * ```
 */
export function ipv6Prefix(groups: readonly number[], prefixLength: number): number[] {
  return groups.map((group, i) => {
    const bits = Math.min(16, Math.max(0, prefixLength - 16 * i));
    return bits === 0 ? 0 : group & ((0xffff << (16 - bits)) & 0xffff);
  });
}

/**
 * RFC 5952 text of an IPv6 address: lower-case hex without leading zeros, the longest run of two
 * or more zero groups (the first, on a tie) written `::`.
 *
 * @example
 * ```ts
 * formatIpv6([0x2001, 0xdb8, 0, 0, 1, 0, 0, 1]); // '2001:db8::1:0:0:1'
 * ```
 */
export function formatIpv6(groups: readonly number[]): string {
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = (from: number, to: number) =>
    groups
      .slice(from, to)
      .map((g) => g.toString(16))
      .join(':');
  if (bestStart < 0) return hex(0, 8);
  return `${hex(0, bestStart)}::${hex(bestStart + bestLength, 8)}`;
}
