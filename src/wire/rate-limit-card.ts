/**
 * @module rate-limit-card
 * Reading the rate-limit extension an agent publishes on its card, for a client that plans its
 * sends.
 */

import { type A2AMethod, ALL_A2A_METHODS, toA2AMethod } from '../core/a2a-methods.js';

/**
 * URI of the rate-limit extension this parser reads (the server's `RATE_LIMIT_EXTENSION_URI`).
 *
 * @example
 * ```ts
 * card.capabilities.extensions.find((e) => e.uri === RATE_LIMIT_CARD_URI);
 * ```
 */
export const RATE_LIMIT_CARD_URI = 'https://a2a-ratelimit.dev/ext/rate-limits/v1';

/**
 * One tier of a rate policy: its own limit, window and burst.
 */
export interface CardRateTier {
  readonly name: string;
  /** Requests per window. */
  readonly limit: number;
  /** Window, seconds. */
  readonly windowSeconds: number;
  /** Bucket size. */
  readonly burst: number;
}

/**
 * A rate policy as published. `limit` / `windowSeconds` / `burst` are the ones to plan with: the
 * caller's own when the card says whose they are (`tier`, an extended card), else the default
 * tier's, else the most restrictive tier's.
 */
export interface CardRatePolicy {
  readonly kind: 'rate';
  readonly name: string;
  /** Scope name as published (`caller`, `caller+method`, `tenant`, a custom name…). */
  readonly scope: string;
  readonly methods: readonly A2AMethod[];
  readonly limit: number;
  readonly windowSeconds: number;
  readonly burst: number;
  /** Every tier the card lists (empty when the policy is not tiered). */
  readonly tiers: readonly CardRateTier[];
  /** The tier whose limits these are, when the card says (the caller's own on an extended card). */
  readonly tier?: string;
  /**
   * A usage budget's unit (e.g. `tokens`): `limit` and `burst` count these, not requests, so the
   * policy is no request pace. Absent for request rates.
   */
  readonly unit?: string;
}

/**
 * A concurrency policy as published: at most `max` in flight per key of its scope.
 */
export interface CardConcurrencyPolicy {
  readonly kind: 'concurrency';
  readonly name: string;
  readonly scope: string;
  readonly methods: readonly A2AMethod[];
  readonly max: number;
}

/**
 * A policy a client can plan with (overload guards are left out: they say nothing about one caller).
 */
export type CardPolicy = CardRatePolicy | CardConcurrencyPolicy;

/**
 * What a card's rate-limit extension says.
 *
 * @example
 * ```ts
 * const limits: CardRateLimits | undefined = readRateLimitCard(card);
 * limits?.deduplicatesMessageIds; // true
 * ```
 */
export interface CardRateLimits {
  readonly policies: readonly CardPolicy[];
  /** A retried message (same caller, same messageId) is never run twice. */
  readonly deduplicatesMessageIds: boolean;
  /** The caller's tier, when the extension names it (an extended card). */
  readonly callerTier?: string;
}

type Json = Readonly<Record<string, unknown>>;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function positiveInteger(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

function name(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' && value.length <= 256 ? value : undefined;
}

/** The extension's params, or undefined when the card does not carry the extension. */
function extensionParams(card: unknown): Json | undefined {
  if (!isRecord(card) || !isRecord(card.capabilities)) return undefined;
  const extensions = card.capabilities.extensions;
  if (!Array.isArray(extensions)) return undefined;
  for (const e of extensions) {
    if (isRecord(e) && e.uri === RATE_LIMIT_CARD_URI) return isRecord(e.params) ? e.params : {};
  }
  return undefined;
}

/** Published methods (A2A 1.0 or legacy names); missing means all, unknown names are dropped. */
function methodsOf(value: unknown): readonly A2AMethod[] | undefined {
  if (value === undefined) return ALL_A2A_METHODS;
  if (!Array.isArray(value)) return undefined;
  const out: A2AMethod[] = [];
  for (const m of value) {
    const method = typeof m === 'string' ? toA2AMethod(m) : undefined;
    if (method !== undefined && !out.includes(method)) out.push(method);
  }
  return out.length === 0 ? undefined : out;
}

function rateLimits(
  entry: Json,
): { limit: number; windowSeconds: number; burst: number } | undefined {
  const limit = positiveInteger(entry.limit);
  const windowSeconds = positiveInteger(entry.windowSeconds);
  if (limit === undefined || windowSeconds === undefined) return undefined;
  const burst = positiveInteger(entry.burst) ?? limit;
  return { limit, windowSeconds, burst };
}

/** Tiers as an array of `{ name, limit, windowSeconds, burst }` or a record keyed by name. */
function tiersOf(value: unknown): CardRateTier[] {
  const entries: [unknown, unknown][] = Array.isArray(value)
    ? value.map((t) => [isRecord(t) ? (t.name ?? t.tier) : undefined, t])
    : isRecord(value)
      ? Object.entries(value)
      : [];
  const out: CardRateTier[] = [];
  for (const [rawName, entry] of entries) {
    const tierName = name(rawName);
    const limits = isRecord(entry) ? rateLimits(entry) : undefined;
    if (tierName === undefined || limits === undefined) continue;
    if (out.some((t) => t.name === tierName)) continue;
    out.push({ name: tierName, ...limits });
  }
  return out;
}

/** Requests per second a tier allows in the long run. */
function ratePerSecond(t: { limit: number; windowSeconds: number }): number {
  return t.limit / t.windowSeconds;
}

/** The most restrictive tier: the lowest long-run rate, then the smallest burst. */
function mostRestrictive(tiers: readonly CardRateTier[]): CardRateTier | undefined {
  let best: CardRateTier | undefined;
  for (const t of tiers) {
    if (
      best === undefined ||
      ratePerSecond(t) < ratePerSecond(best) ||
      (ratePerSecond(t) === ratePerSecond(best) && t.burst < best.burst)
    ) {
      best = t;
    }
  }
  return best;
}

function ratePolicy(
  entry: Json,
  base: { name: string; scope: string; methods: readonly A2AMethod[] },
  callerTier: string | undefined,
): CardRatePolicy | undefined {
  const tiers = tiersOf(entry.tiers);
  const own = rateLimits(entry);
  const ownTier = name(entry.tier);
  const known = ownTier ?? callerTier;
  let chosen: { limit: number; windowSeconds: number; burst: number; name?: string } | undefined;
  if (own !== undefined && known !== undefined) {
    chosen = { ...own, name: known }; // an extended card: the caller's own limits
  } else {
    chosen =
      tiers.find((t) => t.name === known) ??
      own ??
      tiers.find((t) => t.name === name(entry.defaultTier)) ??
      mostRestrictive(tiers);
  }
  if (chosen === undefined) return undefined;
  const unit = name(entry.unit);
  return {
    kind: 'rate',
    ...base,
    limit: chosen.limit,
    windowSeconds: chosen.windowSeconds,
    burst: chosen.burst,
    tiers,
    ...(chosen.name === undefined ? {} : { tier: chosen.name }),
    ...(unit === undefined || unit === 'requests' ? {} : { unit }),
  };
}

/**
 * The rate-limit extension of an agent card (as JSON or as the SDK's decoded object), or
 * `undefined` when the card does not carry it. Overload policies and malformed entries (a policy
 * with a bad number, a tier without a name) are left out; it never throws. Tiers (not yet written
 * by this package's server; the shape a tiered agent publishes): a rate policy may list `tiers` (an
 * array of `{ name, limit, windowSeconds, burst }` or a record keyed by tier name) and a
 * `defaultTier`; an extended card names the caller's own tier as the policy's `tier` (its `limit` /
 * `windowSeconds` / `burst` are then that tier's) or as the extension's `callerTier`.
 *
 * @example
 * ```ts
 * readRateLimitCard({ capabilities: { extensions: [{ uri: RATE_LIMIT_CARD_URI, params: {
 *   policies: [{ name: 'per-caller', kind: 'rate', scope: 'caller', methods: ['SendMessage'], limit: 60, windowSeconds: 60, burst: 10 }],
 *   deduplicatesMessageIds: true } }] } });
 * // { policies: [{ kind: 'rate', name: 'per-caller', scope: 'caller', methods: ['SendMessage'], limit: 60, windowSeconds: 60, burst: 10, tiers: [] }], deduplicatesMessageIds: true }
 * ```
 */
export function readRateLimitCard(card: unknown): CardRateLimits | undefined {
  const params = extensionParams(card);
  if (params === undefined) return undefined;
  const callerTier = name(params.callerTier);
  const policies: CardPolicy[] = [];
  for (const entry of Array.isArray(params.policies) ? params.policies : []) {
    if (!isRecord(entry)) continue;
    const policyName = name(entry.name);
    const methods = methodsOf(entry.methods);
    if (policyName === undefined || methods === undefined) continue;
    if (policies.some((p) => p.name === policyName)) continue;
    const base = { name: policyName, scope: name(entry.scope) ?? 'caller', methods };
    if (entry.kind === 'rate') {
      const policy = ratePolicy(entry, base, callerTier);
      if (policy !== undefined) policies.push(policy);
    } else if (entry.kind === 'concurrency') {
      const max = positiveInteger(entry.max);
      if (max !== undefined) policies.push({ kind: 'concurrency', ...base, max });
    }
  }
  return {
    policies,
    deduplicatesMessageIds: params.deduplicatesMessageIds === true,
    ...(callerTier === undefined ? {} : { callerTier }),
  };
}
