/**
 * @module wire/ip-address
 * IP address text for every layer: allocation-free IPv4/IPv6 readers, RFC 5952 printing, prefixes
 * and CIDR ranges. Pure.
 */

/**
 * An IPv4 (4 bytes) or IPv6 (16 bytes) address, network byte order.
 */
export interface IpAddress {
  readonly version: 4 | 6;
  readonly bytes: Uint8Array;
}

/**
 * An address range: a network address and how many leading bits are fixed.
 */
export interface Cidr {
  readonly network: IpAddress;
  readonly prefixLength: number;
}

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

/**
 * Parses an address in canonical text: dotted-decimal IPv4 (`192.0.2.1`, no leading zeros, no
 * shortened or numeric forms) or IPv6 (`2001:db8::1`, `::ffff:192.0.2.1`, with or without
 * brackets; a `%zone` suffix is ignored). `undefined` for anything else (host names included).
 * Odd IPv4 spellings (`2130706433`, `0x7f.1`, `0177.0.0.1`) are refused on purpose: they only
 * occur in URLs, and WHATWG `URL` turns them into dotted decimal before anything reads them.
 *
 * @example
 * ```ts
 * parseIpAddress('127.0.0.1');        // { version: 4, bytes: [127, 0, 0, 1] }
 * parseIpAddress('[::1]');            // { version: 6, bytes: [0, …, 1] }
 * parseIpAddress('0x7f.1');           // undefined (URL normalises it first)
 * parseIpAddress('hooks.example.com'); // undefined
 * ```
 */
export function parseIpAddress(text: string): IpAddress | undefined {
  let t = text.trim();
  if (t.startsWith('[') && t.endsWith(']')) t = t.slice(1, -1);
  if (!t.includes(':')) {
    const v4 = parseIpv4(t);
    if (v4 < 0) return undefined;
    return {
      version: 4,
      bytes: new Uint8Array([v4 >>> 24, (v4 >>> 16) & 0xff, (v4 >>> 8) & 0xff, v4 & 0xff]),
    };
  }
  const groups = parseIpv6Groups(t);
  if (groups === undefined) return undefined;
  const bytes = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    bytes[2 * i] = (groups[i] as number) >> 8;
    bytes[2 * i + 1] = (groups[i] as number) & 0xff;
  }
  return { version: 6, bytes };
}

/**
 * The address as WHATWG `URL` serialises a host: dotted decimal, or IPv6 in RFC 5952 form
 * (`formatIpv6`: lower case, the longest run of two or more zero groups as `::`, no dotted
 * tail, no brackets).
 *
 * @example
 * ```ts
 * formatIpAddress(parseIpAddress('::FFFF:127.0.0.1')!); // '::ffff:7f00:1'
 * ```
 */
export function formatIpAddress(ip: IpAddress): string {
  const b = ip.bytes;
  if (ip.version === 4) return Array.from(b).join('.');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((b[i] as number) << 8) | (b[i + 1] as number));
  return formatIpv6(groups);
}

/**
 * Parses `address/prefix` (or a bare address: /32, /128). Throws a `RangeError` naming the
 * problem for anything else, including host bits set below the prefix.
 *
 * @example
 * ```ts
 * parseCidr('10.0.0.0/8');  // { network: 10.0.0.0, prefixLength: 8 }
 * parseCidr('fd00::/8');
 * parseCidr('10.1.2.3/8');  // RangeError: host bits set; did you mean 10.0.0.0/8?
 * ```
 */
export function parseCidr(text: string): Cidr {
  const slash = text.indexOf('/');
  const addressText = slash < 0 ? text : text.slice(0, slash);
  const network = parseIpAddress(addressText);
  if (network === undefined) {
    throw new RangeError(`"${text}" is not an IP address or CIDR range`);
  }
  const maxLength = network.version === 4 ? 32 : 128;
  const lengthText = slash < 0 ? String(maxLength) : text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(lengthText) || Number(lengthText) > maxLength) {
    throw new RangeError(`"${text}": the prefix length must be 0…${maxLength}`);
  }
  const prefixLength = Number(lengthText);
  const masked = maskTo(network, prefixLength);
  if (!sameBytes(masked.bytes, network.bytes)) {
    throw new RangeError(
      `"${text}" has host bits set; did you mean ${formatIpAddress(masked)}/${prefixLength}?`,
    );
  }
  return { network, prefixLength };
}

/**
 * `cidr` as text: `10.0.0.0/8`.
 *
 * @example
 * ```ts
 * formatCidr(parseCidr('fd00::/8')); // 'fd00::/8'
 * ```
 */
export function formatCidr(cidr: Cidr): string {
  return `${formatIpAddress(cidr.network)}/${cidr.prefixLength}`;
}

/**
 * Whether `ip` lies in `cidr` (same IP version only; see {@link embeddedIpv4} for mapped forms).
 *
 * @example
 * ```ts
 * cidrContains(parseCidr('10.0.0.0/8'), parseIpAddress('10.20.30.40')!); // true
 * ```
 */
export function cidrContains(cidr: Cidr, ip: IpAddress): boolean {
  if (cidr.network.version !== ip.version) return false;
  return sameBytes(maskTo(ip, cidr.prefixLength).bytes, cidr.network.bytes);
}

/**
 * The IPv4 address an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) stands for; `undefined` for
 * any other address. Sockets connect to the IPv4 address itself.
 *
 * @example
 * ```ts
 * embeddedIpv4(parseIpAddress('::ffff:7f00:1')!); // 127.0.0.1
 * ```
 */
export function embeddedIpv4(ip: IpAddress): IpAddress | undefined {
  if (ip.version !== 6 || !isIpv4MappedBytes(ip.bytes)) return undefined;
  return { version: 4, bytes: ip.bytes.slice(12, 16) };
}

function maskTo(ip: IpAddress, prefixLength: number): IpAddress {
  const bytes = new Uint8Array(ip.bytes);
  for (let i = 0; i < bytes.length; i++) {
    const keep = Math.max(0, Math.min(8, prefixLength - 8 * i));
    bytes[i] = (bytes[i] as number) & ((0xff << (8 - keep)) & 0xff);
  }
  return { version: ip.version, bytes };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function isIpv4MappedBytes(bytes: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return false;
  return bytes[10] === 0xff && bytes[11] === 0xff;
}
