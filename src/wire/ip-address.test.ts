import { isIP } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cidrContains,
  embeddedIpv4,
  formatCidr,
  formatIpAddress,
  formatIpv6,
  type IpAddress,
  ipv6Prefix,
  parseCidr,
  parseIpAddress,
  parseIpv6Groups,
} from './ip-address.js';

function ip(text: string): IpAddress {
  const parsed = parseIpAddress(text);
  if (parsed === undefined) throw new Error(`test address ${text} does not parse`);
  return parsed;
}

/** 16 bytes with long zero runs more often than uniform bytes would give. */
const ipv6Bytes = fc
  .array(fc.oneof(fc.constant(0), fc.constant(0xffff), fc.integer({ min: 0, max: 0xffff })), {
    minLength: 8,
    maxLength: 8,
  })
  .map((groups) => {
    const bytes = new Uint8Array(16);
    groups.forEach((g, i) => {
      bytes[2 * i] = g >> 8;
      bytes[2 * i + 1] = g & 0xff;
    });
    return bytes;
  });

describe('parseIpAddress / formatIpAddress', () => {
  it('IPv4: round trip, and the same text WHATWG URL writes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 4, maxLength: 4 }), (bytes) => {
        const text = formatIpAddress({ version: 4, bytes });
        expect(parseIpAddress(text)?.bytes).toEqual(bytes);
        expect(new URL(`http://${text}/`).hostname).toBe(text);
      }),
    );
  });

  it('IPv6: round trip, the same text WHATWG URL writes, and every other spelling parses alike', () => {
    fc.assert(
      fc.property(ipv6Bytes, fc.boolean(), (bytes, upper) => {
        const text = formatIpAddress({ version: 6, bytes });
        expect(new URL(`http://[${text}]/`).hostname).toBe(`[${text}]`);
        expect(parseIpAddress(text)?.bytes).toEqual(bytes);
        const groups = Array.from({ length: 8 }, (_, i) =>
          (((bytes[2 * i] as number) << 8) | (bytes[2 * i + 1] as number)).toString(16),
        );
        const full = groups.join(':');
        expect(parseIpAddress(upper ? full.toUpperCase() : full)?.bytes).toEqual(bytes);
        const dotted = `${groups.slice(0, 6).join(':')}:${Array.from(bytes.slice(12)).join('.')}`;
        expect(parseIpAddress(dotted)?.bytes).toEqual(bytes);
        expect(parseIpAddress(`[${text}]`)?.bytes).toEqual(bytes);
      }),
    );
  });

  it('accepts exactly what node:net isIP accepts (random strings over the address alphabet)', () => {
    const alphabet = fc.constantFrom(...'0123456789abcdefABCDEF:.'.split(''), '::', '255', 'ffff');
    fc.assert(
      fc.property(fc.array(alphabet, { maxLength: 24 }), (pieces) => {
        const text = pieces.join('');
        expect(parseIpAddress(text) !== undefined, JSON.stringify(text)).toBe(isIP(text) !== 0);
      }),
      { numRuns: 5_000 },
    );
  });

  it('refuses odd IPv4 spellings itself (URL normalises them first) and host names', () => {
    for (const text of [
      '2130706433',
      '0x7f.1',
      '0177.0.0.1',
      '127.1',
      '01.2.3.4',
      '1.2.3.256',
      'example.com',
      '',
      '::1::',
      '1:2:3:4:5:6:7:8:9',
      'fe80::1%',
    ]) {
      expect(parseIpAddress(text), text).toBeUndefined();
    }
    expect(formatIpAddress(ip('fe80::1%eth0'))).toBe('fe80::1');
    expect(formatIpAddress(ip('::FFFF:127.0.0.1'))).toBe('::ffff:7f00:1');
    expect(formatIpAddress(ip('1:0:0:1:0:0:0:1'))).toBe('1:0:0:1::1');
    expect(formatIpAddress(ip('1:0:2:3:4:5:6:7'))).toBe('1:0:2:3:4:5:6:7');
  });
});

describe('parseCidr / cidrContains', () => {
  it('parses, formats and matches', () => {
    const c = parseCidr('10.0.0.0/8');
    expect(formatCidr(c)).toBe('10.0.0.0/8');
    expect(cidrContains(c, ip('10.255.0.1'))).toBe(true);
    expect(cidrContains(c, ip('11.0.0.1'))).toBe(false);
    expect(cidrContains(c, ip('::ffff:10.0.0.1'))).toBe(false); // versions differ; the policy maps
    expect(formatCidr(parseCidr('[fd00::]/8'.replace(/[[\]]/g, '')))).toBe('fd00::/8');
    expect(formatCidr(parseCidr('192.0.2.7'))).toBe('192.0.2.7/32');
    expect(cidrContains(parseCidr('0.0.0.0/0'), ip('8.8.8.8'))).toBe(true);
  });

  it('matches exactly the addresses that share the prefix', () => {
    fc.assert(
      fc.property(ipv6Bytes, ipv6Bytes, fc.integer({ min: 0, max: 128 }), (a, b, prefixLength) => {
        const network = new Uint8Array(a);
        for (let bit = prefixLength; bit < 128; bit++) {
          network[bit >> 3] = (network[bit >> 3] as number) & ~(0x80 >> (bit & 7));
        }
        const cidr = parseCidr(
          `${formatIpAddress({ version: 6, bytes: network })}/${prefixLength}`,
        );
        let same = true;
        for (let bit = 0; bit < prefixLength; bit++) {
          const mask = 0x80 >> (bit & 7);
          if (((a[bit >> 3] as number) & mask) !== ((b[bit >> 3] as number) & mask)) same = false;
        }
        expect(cidrContains(cidr, { version: 6, bytes: b })).toBe(same);
        expect(cidrContains(cidr, { version: 6, bytes: a })).toBe(true);
      }),
    );
  });

  it.each([
    ['10.1.2.3/8', /host bits set; did you mean 10\.0\.0\.0\/8/],
    ['10.0.0.0/33', /prefix length must be 0…32/],
    ['fd00::/129', /prefix length must be 0…128/],
    ['10.0.0.0/', /prefix length/],
    ['10.0.0.0/-1', /prefix length/],
    ['example.com/8', /not an IP address or CIDR range/],
  ])('%s is refused with a clear error', (text, message) => {
    expect(() => parseCidr(text)).toThrow(message);
  });
});

const group = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 0xffff }));
const groups = fc.array(group, { minLength: 8, maxLength: 8 });

/** One way a person, a socket or a proxy may write `gs`: case, padding, `::` anywhere it fits, an IPv4 tail. */
const spelling = (gs: readonly number[]) =>
  fc
    .record({
      upper: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
      pad: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 8, maxLength: 8 }),
      gap: fc.nat(),
      compress: fc.boolean(),
      ipv4Tail: fc.boolean(),
    })
    .map(({ upper, pad, gap, compress, ipv4Tail }) => {
      const text = gs.map((g, i) => {
        const hex = g
          .toString(16)
          .padStart(Math.min(4, g.toString(16).length + (pad[i] ?? 0)), '0');
        return upper[i] ? hex.toUpperCase() : hex;
      });
      const tail = ipv4Tail
        ? [
            `${(gs[6] ?? 0) >> 8}.${(gs[6] ?? 0) & 0xff}.${(gs[7] ?? 0) >> 8}.${(gs[7] ?? 0) & 0xff}`,
          ]
        : undefined;
      const parts: string[] = tail === undefined ? text : [...text.slice(0, 6), ...tail];
      // Zero runs among the hex groups (an IPv4 tail is never inside `::`).
      const runs: [number, number][] = [];
      const hexCount = tail === undefined ? 8 : 6;
      for (let i = 0; i < hexCount; ) {
        if (gs[i] !== 0) {
          i++;
          continue;
        }
        let j = i;
        while (j < hexCount && gs[j] === 0) j++;
        for (let a = i; a < j; a++) for (let b = a + 1; b <= j; b++) runs.push([a, b]);
        i = j;
      }
      if (!compress || runs.length === 0) return parts.join(':');
      const [from, to] = runs[gap % runs.length] as [number, number];
      return `${parts.slice(0, from).join(':')}::${parts.slice(to).join(':')}`;
    });

describe('parseIpv6Groups', () => {
  it('reads every spelling of an address back to its groups (property)', () => {
    fc.assert(
      fc.property(
        groups.chain((gs) => fc.tuple(fc.constant(gs), spelling(gs))),
        ([gs, text]) => {
          expect(parseIpv6Groups(text), text).toEqual(gs);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('ignores a zone id', () => {
    expect(parseIpv6Groups('fe80::1%eth0')).toEqual([0xfe80, 0, 0, 0, 0, 0, 0, 1]);
    expect(parseIpv6Groups('fe80::1%25')).toEqual([0xfe80, 0, 0, 0, 0, 0, 0, 1]);
    expect(parseIpv6Groups('fe80::1%')).toBeUndefined();
  });

  it('knows the short forms', () => {
    expect(parseIpv6Groups('::')).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(parseIpv6Groups('::1')).toEqual([0, 0, 0, 0, 0, 0, 0, 1]);
    expect(parseIpv6Groups('1::')).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
    expect(parseIpv6Groups('1:2:3:4:5:6:7::')).toEqual([1, 2, 3, 4, 5, 6, 7, 0]);
    expect(parseIpv6Groups('::2:3:4:5:6:7:8')).toEqual([0, 2, 3, 4, 5, 6, 7, 8]);
    expect(parseIpv6Groups('::ffff:1.2.3.4')).toEqual([0, 0, 0, 0, 0, 0xffff, 0x102, 0x304]);
  });

  it.each([
    '',
    ':',
    ':::',
    '1:::2',
    '1::2::3',
    ':1::',
    '1::2:',
    '1:2:3:4:5:6:7',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7::8',
    '12345::',
    'g::',
    '1.2.3.4::',
    '::1.2.3',
    '::01.2.3.4',
    '::256.2.3.4',
    '1:2:3:4:5:6:7:1.2.3.4',
  ])('refuses %j', (text) => {
    expect(parseIpv6Groups(text)).toBeUndefined();
  });
});

describe('parseIpAddress, against Node and in every spelling', () => {
  const alphabet = fc.constantFrom(...'0123456789abcdefABCDEFg:.'.split(''));
  const fuzzed = fc.oneof(
    fc.string({ unit: alphabet, maxLength: 45 }),
    groups.chain(spelling),
    fc.ipV4(),
    fc.ipV6(),
  );

  it("accepts exactly what Node's own parser accepts (property)", () => {
    fc.assert(
      fc.property(fuzzed, (text) => {
        expect(parseIpAddress(text) !== undefined, text).toBe(isIP(text) !== 0);
      }),
      { numRuns: 5000 },
    );
  });

  it("agrees with Node on zone ids in Node's alphabet (property)", () => {
    const zone = fc.string({
      unit: fc.constantFrom(...'0123456789azAZ-.:'.split('')),
      minLength: 1,
      maxLength: 8,
    });
    fc.assert(
      fc.property(fc.ipV6(), zone, (text, z) => {
        expect(isIP(`${text}%${z}`)).toBe(6);
        expect(parseIpAddress(`${text}%${z}`)).toEqual(parseIpAddress(text));
      }),
    );
  });

  it('an IPv4-mapped IPv6 address is its IPv4 address, in every spelling', () => {
    const v4 = { version: 4, bytes: new Uint8Array([203, 0, 113, 9]) };
    for (const text of [
      '203.0.113.9',
      '::ffff:203.0.113.9',
      '::FFFF:203.0.113.9',
      '0:0:0:0:0:ffff:203.0.113.9',
      '::ffff:cb00:7109',
      '0000:0000:0000:0000:0000:FFFF:CB00:7109',
    ]) {
      const parsed = parseIpAddress(text);
      expect(parsed && (embeddedIpv4(parsed) ?? parsed), text).toEqual(v4);
    }
  });

  it('refuses what is no address', () => {
    for (const text of [
      '',
      'unknown',
      'localhost',
      '01.2.3.4',
      '1.2.3',
      '1.2.3.4.5',
      '256.0.0.1',
    ]) {
      expect(parseIpAddress(text), text).toBeUndefined();
    }
  });
});

describe('formatIpv6', () => {
  it('writes what the WHATWG URL parser writes (RFC 5952), for any spelling (property)', () => {
    fc.assert(
      fc.property(
        groups.chain((gs) => fc.tuple(fc.constant(gs), spelling(gs))),
        ([gs, text]) => {
          const ours = formatIpv6(gs);
          expect(`[${ours}]`).toBe(new URL(`http://[${text}]/`).hostname);
          expect(parseIpv6Groups(ours)).toEqual(gs);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('compresses the longest zero run, the first on a tie, never a single zero', () => {
    expect(formatIpv6([0x2001, 0xdb8, 0, 0, 1, 0, 0, 1])).toBe('2001:db8::1:0:0:1');
    expect(formatIpv6([1, 0, 2, 0, 0, 0, 3, 4])).toBe('1:0:2::3:4');
    expect(formatIpv6([1, 2, 3, 4, 5, 6, 0, 8])).toBe('1:2:3:4:5:6:0:8');
    expect(formatIpv6([0, 0, 0, 0, 0, 0, 0, 0])).toBe('::');
  });
});

describe('ipv6Prefix', () => {
  it('keeps the first bits and clears the rest (property)', () => {
    fc.assert(
      fc.property(groups, fc.integer({ min: 0, max: 128 }), (gs, length) => {
        const prefix = ipv6Prefix(gs, length);
        const bits = (g: readonly number[]) =>
          g.map((x) => x.toString(2).padStart(16, '0')).join('');
        const all = bits(gs);
        expect(bits(prefix)).toBe(all.slice(0, length) + '0'.repeat(128 - length));
      }),
    );
  });
});
