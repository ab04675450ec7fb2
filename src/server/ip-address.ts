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

const COLON = 58;
const DOT = 46;

/** Value of a hex digit's char code, or −1. */
function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  const lower = code | 0x20;
  return lower >= 97 && lower <= 102 ? lower - 87 : -1;
}

/**
 * Dotted-decimal IPv4 in `text[from, to)` (four parts 0–255, no leading zeros, as Node reads it):
 * its 32-bit value, or −1. Reads characters only; allocates nothing.
 *
 * @example
 * ```ts
 * parseIpv4('10.0.0.1');           // 167772161
 * parseIpv4('::ffff:10.0.0.1', 7); // 167772161
 * parseIpv4('010.0.0.1');          // -1
 * ```
 */
export function parseIpv4(text: string, from = 0, to = text.length): number {
  let value = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = from; i < to; i++) {
    const code = text.charCodeAt(i);
    if (code === DOT) {
      if (digits === 0 || dots === 3) return -1;
      value = value * 256 + part;
      dots++;
      part = 0;
      digits = 0;
    } else if (code >= 48 && code <= 57) {
      if (digits > 0 && part === 0) return -1; // a leading zero
      part = part * 10 + (code - 48);
      digits++;
      if (part > 255) return -1;
    } else {
      return -1;
    }
  }
  return digits === 0 || dots !== 3 ? -1 : value * 256 + part;
}

/**
 * Parses IPv6 text (a `%zone` suffix accepted and ignored) into `out[0..7]`; false, with `out`
 * unspecified, when the text is not IPv6. Reads characters only; allocates nothing.
 *
 * @example
 * ```ts
 * const groups = new Array<number>(8);
 * parseIpv6Into('2001:db8::1', groups); // true; groups = [0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]
 * ```
 */
export function parseIpv6Into(text: string, out: number[]): boolean {
  let end = text.indexOf('%');
  if (end < 0) end = text.length;
  else if (end === text.length - 1) return false; // an empty zone
  let count = 0;
  let gap = -1;
  let i = 0;
  if (end >= 2 && text.charCodeAt(0) === COLON && text.charCodeAt(1) === COLON) {
    gap = 0;
    i = 2;
    if (i < end && text.charCodeAt(i) === COLON) return false; // `:::`
  } else if (text.charCodeAt(0) === COLON) {
    return false; // one leading colon
  }
  while (i < end) {
    let j = i;
    let value = 0;
    while (j < end && j - i < 5) {
      const digit = hexValue(text.charCodeAt(j));
      if (digit < 0) break;
      value = value * 16 + digit;
      j++;
    }
    if (j < end && text.charCodeAt(j) === DOT) {
      // An IPv4 tail: the last 32 bits, to the end.
      if (count > 6) return false;
      const v4 = parseIpv4(text, i, end);
      if (v4 < 0) return false;
      out[count++] = Math.floor(v4 / 0x10000);
      out[count++] = v4 % 0x10000;
      break;
    }
    if (j === i || j - i > 4 || count === 8) return false;
    out[count++] = value;
    if (j === end) break;
    if (text.charCodeAt(j) !== COLON) return false;
    if (j + 1 < end && text.charCodeAt(j + 1) === COLON) {
      if (gap >= 0) return false; // a second `::`
      gap = count;
      i = j + 2;
      if (i < end && text.charCodeAt(i) === COLON) return false; // `:::`
    } else {
      i = j + 1;
      if (i === end) return false; // one trailing colon
    }
  }
  if (gap < 0) return count === 8;
  if (count > 7) return false;
  const tail = count - gap;
  for (let k = 0; k < tail; k++) out[7 - k] = out[count - 1 - k] as number;
  for (let k = gap; k < 8 - tail; k++) out[k] = 0;
  return true;
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
  const groups = new Array<number>(8).fill(0);
  return parseIpv6Into(text, groups) ? groups : undefined;
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
    const v4 = parseIpv4(text);
    return v4 < 0 ? undefined : { family: 4, octets: octetsOf(v4) };
  }
  const groups = parseIpv6Groups(text);
  if (groups === undefined) return undefined;
  if (isIpv4Mapped(groups)) {
    return { family: 4, octets: octetsOf((groups[6] as number) * 0x10000 + (groups[7] as number)) };
  }
  return { family: 6, groups };
}

function octetsOf(v4: number): number[] {
  return [Math.floor(v4 / 0x1000000), (v4 >>> 16) & 0xff, (v4 >>> 8) & 0xff, v4 & 0xff];
}

/**
 * Whether IPv6 groups are an IPv4-mapped address (`::ffff:0:0/96`).
 *
 * @example
 * ```ts
 * isIpv4Mapped([0, 0, 0, 0, 0, 0xffff, 0x7f00, 1]); // true: ::ffff:127.0.0.1
 * ```
 */
export function isIpv4Mapped(groups: readonly number[]): boolean {
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
  let text = '';
  for (let i = 0; i < 8; i++) {
    if (i === bestStart) {
      text += '::';
      i += bestLength - 1;
      continue;
    }
    if (i > 0 && i !== bestStart + bestLength) text += ':';
    text += (groups[i] as number).toString(16);
  }
  return text;
}
