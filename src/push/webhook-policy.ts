/**
 * @module webhook-policy
 * `createWebhookPolicy`: where push notifications may go, as two pure checks (URL, resolved
 * address).
 */

import {
  type Cidr,
  cidrContains,
  embeddedIpv4,
  formatCidr,
  formatIpAddress,
  parseCidr,
  parseIpAddress,
} from '../wire/ip-address.js';
import {
  ADDRESS_RANGE,
  type AddressRange,
  classifyIpAddress,
  isOpenedByPrivateNetworks,
} from './special-purpose-ranges.js';

/**
 * Why a webhook was refused.
 * - `invalid-url`: not an absolute URL.
 * - `scheme`: not `http:` or `https:`.
 * - `credentials`: the URL carries a user name or password (use the config's `authentication`).
 * - `local-name`: `localhost` or a `*.localhost` name (loopback by definition, RFC 6761).
 * - `address`: the URL's IP address, or an address its host name resolved to, is not public
 *   and not opened by the allow list or `allowPrivateNetworks`.
 * - `no-address`: the host name resolved to no address.
 *
 * @example
 * ```ts
 * if (verdict.reason === WEBHOOK_REFUSAL_REASONS.address) log(verdict.range);
 * ```
 */
export const WEBHOOK_REFUSAL_REASONS = {
  invalidUrl: 'invalid-url',
  scheme: 'scheme',
  credentials: 'credentials',
  localName: 'local-name',
  address: 'address',
  noAddress: 'no-address',
} as const;

/**
 * One of {@link WEBHOOK_REFUSAL_REASONS}.
 */
export type WebhookRefusalReason =
  (typeof WEBHOOK_REFUSAL_REASONS)[keyof typeof WEBHOOK_REFUSAL_REASONS];

/**
 * A refused webhook. `message` is safe to show the caller who registered it: it never names an
 * address the caller did not write itself (a resolved address is kept in `address`, for logs).
 *
 * @example
 * ```ts
 * const refusal: WebhookRefusal = { allowed: false, reason: 'address', range: 'loopback', address: '127.0.0.1',
 *   message: 'http://127.0.0.1/hook: 127.0.0.1 is a loopback address' };
 * ```
 */
export interface WebhookRefusal {
  readonly allowed: false;
  readonly reason: WebhookRefusalReason;
  readonly message: string;
  /** The refused address (literal, or resolved). */
  readonly address?: string;
  /** Its range. */
  readonly range?: AddressRange;
}

/**
 * What opened a webhook: it is public, the allow list names it, or `allowPrivateNetworks`.
 */
export type WebhookAllowance = 'public' | 'allow-list' | 'private-networks';

/**
 * An address the policy lets the sender connect to.
 */
export interface AllowedAddress {
  readonly allowed: true;
  readonly by: WebhookAllowance;
  /** The address, as WHATWG `URL` writes it (IPv6 without brackets). */
  readonly address: string;
  readonly family: 4 | 6;
}

/**
 * A webhook URL the policy accepts (so far: a host name still has to resolve to allowed addresses).
 *
 * @example
 * ```ts
 * const check = policy.checkUrl('https://hooks.example.com/a2a');
 * if (check.allowed && check.literal === undefined) await resolve(check.hostname);
 * ```
 */
export interface AllowedUrl {
  readonly allowed: true;
  readonly url: URL;
  /** Host name or address without brackets, lower case, as `URL` normalised it. */
  readonly hostname: string;
  /** The URL's host is an IP address: this is the check of it (nothing to resolve). */
  readonly literal?: AllowedAddress;
  /** The host name is on the allow list: any address it resolves to is allowed. */
  readonly hostAllowed: boolean;
}

/**
 * Options of {@link createWebhookPolicy}.
 */
export interface WebhookPolicyOptions {
  /**
   * Local development: also allow loopback, RFC 1918, CGNAT, link-local (including the cloud
   * metadata address 169.254.169.254), unique-local and the other non-public unicast ranges, and
   * `localhost`. Never in production; prefer `allow`. Unspecified (`0.0.0.0`, `::`), multicast,
   * broadcast and reserved addresses stay refused. @defaultValue false
   */
  readonly allowPrivateNetworks?: boolean;
  /**
   * Allowed despite the default denial: host names (`hooks.internal.example`: may resolve to any
   * address), wildcards (`*.corp.example`: any name below it, not the name itself), IP addresses
   * and CIDR ranges (`10.20.0.0/16`, `fd00:1::/32`: any host name resolving into them, and URLs
   * naming them; an IPv4 range also covers the IPv4-mapped IPv6 forms of its addresses). A bad
   * entry throws a `RangeError` naming it.
   */
  readonly allow?: readonly string[];
}

/**
 * The compiled policy: two pure checks. `checkUrl` reads the URL with WHATWG `URL`, which
 * normalises `http://2130706433/`, `0x7f.1`, `0177.0.0.1` and IPv6 spellings to one form;
 * `checkAddress` checks each address a host name resolved to, and the transport runs it before it
 * connects to exactly that address.
 *
 * @example
 * ```ts
 * const policy = createWebhookPolicy({ allow: ['10.20.0.0/16'] });
 * policy.checkUrl('http://10.20.1.1/hook').allowed;          // true
 * policy.checkAddress('hooks.example.com', '10.0.0.1').allowed; // false
 * ```
 */
export interface WebhookPolicy {
  readonly allowPrivateNetworks: boolean;
  /** The allow list as given, normalised (`URL` host names, canonical CIDRs). */
  readonly allow: readonly string[];
  /** Checks a URL: scheme, credentials, `localhost`, and its address when it is a literal. */
  checkUrl(url: string | URL): AllowedUrl | WebhookRefusal;
  /**
   * Checks one address `hostname` resolved to (or the literal itself). `hostname` as
   * `AllowedUrl.hostname`.
   */
  checkAddress(hostname: string, address: string): AllowedAddress | WebhookRefusal;
}

const SCHEMES: ReadonlySet<string> = new Set(['http:', 'https:']);

/**
 * Compiles a webhook policy. With no options: only public addresses, http(s) only.
 *
 * @example
 * ```ts
 * const policy = createWebhookPolicy();                                    // production
 * const dev = createWebhookPolicy({ allowPrivateNetworks: true });         // loopback tests, docker-compose
 * const corp = createWebhookPolicy({ allow: ['hooks.corp.example', '10.8.0.0/16'] });
 * ```
 */
export function createWebhookPolicy(options: WebhookPolicyOptions = {}): WebhookPolicy {
  const allowPrivateNetworks = options.allowPrivateNetworks === true;
  const hosts = new Set<string>();
  const suffixes: string[] = [];
  const cidrs: Cidr[] = [];
  const normalised: string[] = [];
  for (const raw of options.allow ?? []) {
    const text = String(raw).trim();
    const slash = text.indexOf('/');
    const addressPart = (slash < 0 ? text : text.slice(0, slash)).replace(/^\[(.*)\]$/, '$1');
    if (parseIpAddress(addressPart) !== undefined) {
      const cidr = parseCidr(slash < 0 ? addressPart : `${addressPart}${text.slice(slash)}`);
      cidrs.push(cidr);
      normalised.push(formatCidr(cidr));
      continue;
    }
    const wildcard = text.startsWith('*.');
    const host = hostOfEntry(wildcard ? text.slice(2) : text, raw);
    if (wildcard) suffixes.push(`.${host}`);
    else hosts.add(host);
    normalised.push(wildcard ? `*.${host}` : host);
  }

  const hostAllowed = (hostname: string): boolean => {
    const name = stripDot(hostname);
    return hosts.has(name) || suffixes.some((s) => name.endsWith(s));
  };

  const checkAddress = (hostname: string, address: string): AllowedAddress | WebhookRefusal => {
    const ip = parseIpAddress(address);
    if (ip === undefined) {
      return {
        allowed: false,
        reason: WEBHOOK_REFUSAL_REASONS.address,
        message: `${hostname} did not resolve to an IP address`,
        address,
      };
    }
    const text = formatIpAddress(ip);
    const allowed = (by: WebhookAllowance): AllowedAddress => ({
      allowed: true,
      by,
      address: text,
      family: ip.version,
    });
    if (hostAllowed(hostname)) return allowed('allow-list');
    const mapped = embeddedIpv4(ip);
    if (cidrs.some((c) => cidrContains(c, ip) || (mapped !== undefined && cidrContains(c, mapped))))
      return allowed('allow-list');
    const { range, cidr } = classifyIpAddress(ip);
    if (range === ADDRESS_RANGE.public) return allowed('public');
    if (allowPrivateNetworks && isOpenedByPrivateNetworks(range))
      return allowed('private-networks');
    const literal = parseIpAddress(hostname) !== undefined;
    return {
      allowed: false,
      reason: WEBHOOK_REFUSAL_REASONS.address,
      message: literal
        ? `${text} is ${article(range)} ${range} address (${cidr}), not a public one`
        : `${hostname} resolves to an address that is not public`,
      address: text,
      range,
    };
  };

  const checkUrl = (input: string | URL): AllowedUrl | WebhookRefusal => {
    let url: URL;
    try {
      url = new URL(String(input));
    } catch {
      return refusal(WEBHOOK_REFUSAL_REASONS.invalidUrl, `"${clip(String(input))}" is not a URL`);
    }
    if (!SCHEMES.has(url.protocol)) {
      return refusal(
        WEBHOOK_REFUSAL_REASONS.scheme,
        `${url.protocol} URLs are not allowed; use http: or https:`,
      );
    }
    if (url.username !== '' || url.password !== '') {
      return refusal(
        WEBHOOK_REFUSAL_REASONS.credentials,
        'the URL carries credentials; put them in the config’s authentication instead',
      );
    }
    const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const literalIp = parseIpAddress(hostname);
    if (literalIp !== undefined) {
      const literal = checkAddress(hostname, hostname);
      if (!literal.allowed) return literal;
      return { allowed: true, url, hostname, literal, hostAllowed: false };
    }
    const name = stripDot(hostname);
    const allowedHost = hostAllowed(name);
    if (
      !allowedHost &&
      !allowPrivateNetworks &&
      (name === 'localhost' || name.endsWith('.localhost'))
    ) {
      return {
        ...refusal(WEBHOOK_REFUSAL_REASONS.localName, `${name} is a loopback name`),
        range: ADDRESS_RANGE.loopback,
      };
    }
    return { allowed: true, url, hostname, hostAllowed: allowedHost };
  };

  return { allowPrivateNetworks, allow: normalised, checkUrl, checkAddress };
}

/**
 * The refusal for a host name that resolved to nothing.
 *
 * @example
 * ```ts
 * if (addresses.length === 0) return noAddressRefusal('hooks.example.com');
 * ```
 */
export function noAddressRefusal(hostname: string): WebhookRefusal {
  return refusal(WEBHOOK_REFUSAL_REASONS.noAddress, `${hostname} resolved to no address`);
}

function refusal(reason: WebhookRefusalReason, message: string): WebhookRefusal {
  return { allowed: false, reason, message };
}

function hostOfEntry(text: string, raw: unknown): string {
  let url: URL | undefined;
  try {
    url = new URL(`http://${text}`);
  } catch {
    url = undefined;
  }
  if (url === undefined || text === '' || /[/?#@:]/.test(text) || url.hostname === '') {
    throw new RangeError(
      `webhook allow list: "${String(raw)}" is neither a host name, "*.domain", an IP address nor a CIDR range`,
    );
  }
  return stripDot(url.hostname);
}

function stripDot(hostname: string): string {
  return hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
}

function article(word: string): string {
  return /^[aeiou]/.test(word) ? 'an' : 'a';
}

function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
}
