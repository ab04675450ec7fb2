/**
 * @module ip-address
 * IP addresses as the webhook policy needs them: strict parsing of the canonical text forms
 * (dotted-decimal IPv4, RFC 4291 IPv6 with an optional dotted tail and zone), the WHATWG URL
 * serialisation, CIDR ranges, and the classification of an address against IANA's
 * special-purpose registries: every range whose addresses are not globally reachable (loopback,
 * RFC 1918, CGNAT, link-local, unique-local, multicast, documentation…), looking through the
 * IPv6 forms that carry an IPv4 address (IPv4-mapped, NAT64, 6to4). Pure: no I/O, no Node APIs.
 *
 * Odd IPv4 spellings (`2130706433`, `0x7f.1`, `0177.0.0.1`) are not parsed here on purpose: they
 * only occur in URLs, and WHATWG `URL` turns them into dotted decimal before anything reads them.
 */

/**
 * An IPv4 (4 bytes) or IPv6 (16 bytes) address, network byte order.
 *
 * @example
 * ```ts
 * const ip: IpAddress = { version: 4, bytes: new Uint8Array([127, 0, 0, 1]) };
 * ```
 */
export interface IpAddress {
  readonly version: 4 | 6;
  readonly bytes: Uint8Array;
}

/**
 * An address range: a network address and how many leading bits are fixed.
 *
 * @example
 * ```ts
 * const cidr: Cidr = { network: parseIpAddress('10.0.0.0')!, prefixLength: 8 };
 * ```
 */
export interface Cidr {
  readonly network: IpAddress;
  readonly prefixLength: number;
}

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
 *
 * @example
 * ```ts
 * const range: AddressRange = 'link-local';
 * ```
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

const DECIMAL_OCTET = /^(?:0|[1-9]\d{0,2})$/;
const HEX_GROUP = /^[0-9a-f]{1,4}$/i;

function parseIpv4(text: string): Uint8Array | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const part = parts[i] as string;
    if (!DECIMAL_OCTET.test(part)) return undefined;
    const value = Number(part);
    if (value > 255) return undefined;
    bytes[i] = value;
  }
  return bytes;
}

function parseIpv6(text: string): Uint8Array | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groupsOf = (part: string): number[] | undefined => {
    if (part === '') return [];
    const out: number[] = [];
    const pieces = part.split(':');
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i] as string;
      if (i === pieces.length - 1 && piece.includes('.')) {
        const v4 = parseIpv4(piece);
        if (v4 === undefined) return undefined;
        out.push(((v4[0] as number) << 8) | (v4[1] as number));
        out.push(((v4[2] as number) << 8) | (v4[3] as number));
      } else {
        if (!HEX_GROUP.test(piece)) return undefined;
        out.push(Number.parseInt(piece, 16));
      }
    }
    return out;
  };
  const head = groupsOf(halves[0] as string);
  const tail = halves.length === 2 ? groupsOf(halves[1] as string) : [];
  if (head === undefined || tail === undefined) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const groups = [
    ...head,
    ...new Array<number>(halves.length === 2 ? missing : 0).fill(0),
    ...tail,
  ];
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 0xff;
  });
  return bytes;
}

/**
 * Parses an address in canonical text: dotted-decimal IPv4 (`192.0.2.1`, no leading zeros, no
 * shortened or numeric forms) or IPv6 (`2001:db8::1`, `::ffff:192.0.2.1`, with or without
 * brackets; a `%zone` suffix is ignored). `undefined` for anything else (host names included).
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
  if (t.includes(':')) {
    const zone = t.indexOf('%');
    if (zone >= 0) {
      if (zone === t.length - 1) return undefined;
      t = t.slice(0, zone);
    }
    const bytes = parseIpv6(t);
    return bytes === undefined ? undefined : { version: 6, bytes };
  }
  const bytes = parseIpv4(t);
  return bytes === undefined ? undefined : { version: 4, bytes };
}

/**
 * The address as WHATWG `URL` serialises a host: dotted decimal, or lower-case IPv6 with the
 * longest run (≥ 2) of zero groups as `::` and no dotted tail (no brackets).
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
  const hex = (g: number[]) => g.map((x) => x.toString(16)).join(':');
  if (bestStart < 0) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLength))}`;
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
  if (ip.version !== 6 || !cidrContains(MAPPED, ip)) return undefined;
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

const MAPPED = parseCidr('::ffff:0:0/96');

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
