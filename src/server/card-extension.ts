/**
 * @module card-extension
 * The agent-card extension that publishes the limiter's policies (and, on an extended card, the
 * caller's tier). Structural types: no SDK import.
 */

import { variantFor } from '../core/policy-tiers.js';
import type { Limiter } from './limiter-api.js';

/**
 * URI of the rate-limit extension (versioned; a breaking change gets a new URI).
 *
 * @example
 * ```ts
 * card.capabilities.extensions.some((e) => e.uri === RATE_LIMIT_EXTENSION_URI);
 * ```
 */
export const RATE_LIMIT_EXTENSION_URI = 'https://a2a-ratelimit.dev/ext/rate-limits/v1';

/**
 * One policy as published in the extension's params.
 */
export interface PublishedPolicy {
  readonly name: string;
  readonly kind: 'rate' | 'concurrency' | 'overload';
  readonly scope: string;
  readonly methods: readonly string[];
  /** How a rejection by it is reported: `quota` (429) or `overload` (503). */
  readonly rejectAs: 'quota' | 'overload';
  readonly description?: string;
  /** Rate: requests per window. */
  readonly limit?: number;
  /** Rate: window, seconds. */
  readonly windowSeconds?: number;
  /** Rate: burst. */
  readonly burst?: number;
  /** Concurrency: maximum in flight per key. */
  readonly max?: number;
  /** Overload: agent-wide in-flight cap. */
  readonly maxInFlight?: number;
  /** Overload: requests in flight one caller may hold (its share; over it, that caller gets 429). */
  readonly maxInFlightPerCaller?: number;
  /** Overload: event-loop delay cap, ms. */
  readonly maxEventLoopDelayMs?: number;
  /** Tiered rate policy: every tier's limits, in declared order. */
  readonly tiers?: readonly PublishedTier[];
  /** Tiered rate policy: the tier of callers with none. */
  readonly defaultTier?: string;
  /**
   * Tiered rate policy on a caller's extended card: the caller's tier, whose limits `limit` /
   * `windowSeconds` / `burst` are.
   */
  readonly tier?: string;
  /** Usage policy: the unit `limit` and `burst` count (e.g. `tokens`); absent = requests. */
  readonly unit?: string;
}

/**
 * One tier of a tiered rate policy as published (the shape `readRateLimitCard` reads).
 */
export interface PublishedTier {
  readonly name: string;
  /** Requests per window. */
  readonly limit: number;
  /** Window, seconds. */
  readonly windowSeconds: number;
  readonly burst: number;
}

/**
 * Options of `rateLimitExtension` and {@link withRateLimitExtension}.
 */
export interface RateLimitExtensionOptions {
  readonly description?: string;
  /**
   * For a caller's extended card: the authenticated caller (as the adapters key it, e.g. the
   * SDK user's `userName`). Tiered policies then state that caller's tier (`limiter.tierOf`) and
   * its limits, and the extension its `callerTier`.
   */
  readonly caller?: string;
  /** For an extended card: the caller's tier, when known directly (overrides `caller`). */
  readonly tier?: string;
}

/**
 * The extension object (shape of A2A `AgentExtension`).
 *
 * @example
 * ```ts
 * const ext: RateLimitExtension = rateLimitExtension(limiter);
 * ext.params.deduplicatesMessageIds; // true
 * ```
 */
export interface RateLimitExtension {
  readonly uri: string;
  readonly description: string;
  readonly required: boolean;
  readonly params: {
    readonly policies: readonly PublishedPolicy[];
    /** True when a retried message (same caller and messageId) is never run twice. */
    readonly deduplicatesMessageIds: boolean;
    /** Methods deduplicated by messageId. */
    readonly deduplicatedMethods: readonly string[];
    /** ErrorInfo domain of rejections. */
    readonly errorDomain: string;
    /** Rejection reasons: caller quota and agent overload. */
    readonly reasons: { readonly quota: string; readonly overload: string };
    /** Extended card of a caller with a tier: that tier. */
    readonly callerTier?: string;
  };
}

/**
 * Builds the extension from the limiter's compiled policies.
 *
 * @example
 * ```ts
 * const ext = rateLimitExtension(limiter);
 * ext.params.policies.map((p) => p.name); // ['per-caller', 'tasks-per-caller']
 * ```
 */
export function rateLimitExtension(
  limiter: Limiter,
  options: RateLimitExtensionOptions = {},
): RateLimitExtension {
  const extended = options.tier !== undefined || options.caller !== undefined;
  const callerTier =
    options.tier ??
    (options.caller === undefined
      ? undefined
      : limiter.tierOf({ caller: options.caller, method: 'GetExtendedAgentCard' }));
  // Shadow policies refuse no one: a client must not plan with them.
  const enforced = limiter.policySet.policies.filter((p) => !p.shadow);
  const policies: PublishedPolicy[] = enforced.map((base) => {
    const p = extended ? variantFor(base, callerTier) : base;
    const published = {
      name: p.name,
      kind: p.kind,
      scope: p.scopeName,
      methods: [...p.methods],
      rejectAs: p.rejectAs,
      ...(p.source.description === undefined ? {} : { description: p.source.description }),
    };
    switch (p.kind) {
      case 'rate': {
        const limits = {
          limit: p.limit,
          windowSeconds: p.windowSeconds,
          burst: p.burst,
          ...(p.unit === undefined ? {} : { unit: p.unit }),
        };
        if (p.tierVariants.length === 0) return { ...published, ...limits };
        return {
          ...published,
          ...limits,
          tiers: p.tierVariants.map((v) => ({
            name: v.tier as string,
            limit: v.limit,
            windowSeconds: v.windowSeconds,
            burst: v.burst,
          })),
          defaultTier: base.kind === 'rate' ? (base.tier as string) : '',
          ...(extended ? { tier: p.tier as string } : {}),
        };
      }
      case 'concurrency':
        return { ...published, max: p.max };
      default:
        return {
          ...published,
          ...(Number.isFinite(p.maxInFlight) ? { maxInFlight: p.maxInFlight } : {}),
          ...(p.callerShare === undefined ? {} : { maxInFlightPerCaller: p.callerShare.max }),
          ...(Number.isFinite(p.maxEventLoopDelayMs)
            ? { maxEventLoopDelayMs: p.maxEventLoopDelayMs }
            : {}),
        };
    }
  });
  return {
    uri: RATE_LIMIT_EXTENSION_URI,
    description:
      options.description ??
      'Rate limits: a rejected call created nothing and started nothing (safe to retry after the delay it names); a retried message with the same messageId is never run twice.',
    required: false,
    params: {
      policies,
      deduplicatesMessageIds: limiter.dedupMethods.size > 0,
      deduplicatedMethods: [...limiter.dedupMethods],
      errorDomain: limiter.domain,
      reasons: { quota: 'RATE_LIMIT_EXCEEDED', overload: 'AGENT_OVERLOADED' },
      ...(extended && callerTier !== undefined ? { callerTier } : {}),
    },
  };
}

/**
 * A card shape with capabilities (the SDK's `AgentCard` fits).
 */
export interface CardWithCapabilities {
  readonly capabilities?: { readonly extensions?: readonly unknown[] } | undefined;
}

/**
 * A copy of `card` whose `capabilities.extensions` carries the rate-limit extension (replacing an
 * older copy of it). Use it for the public card and inside the extended-card provider.
 *
 * @example
 * ```ts
 * const publicCard = withRateLimitExtension(card, limiter);
 * const handler = new DefaultRequestHandler(publicCard, taskStore, executor, manager, undefined, undefined,
 *   async (ctx) => withRateLimitExtension(extendedCardFor(ctx), limiter, { caller: ctx.user?.userName ?? '' }));
 * ```
 */
export function withRateLimitExtension<C extends CardWithCapabilities>(
  card: C,
  limiter: Limiter,
  options: RateLimitExtensionOptions = {},
): C {
  const others = (card.capabilities?.extensions ?? []).filter(
    (e) => (e as { uri?: unknown } | null)?.uri !== RATE_LIMIT_EXTENSION_URI,
  );
  return {
    ...card,
    capabilities: {
      ...card.capabilities,
      extensions: [...others, rateLimitExtension(limiter, options)],
    },
  };
}

/**
 * Keeps the rate-limit extension of a card object that is already being served equal to the
 * limiter's policies in force: after every {@link Limiter.updatePolicies} (or a set adopted from
 * another replica) the extension inside `card.capabilities.extensions` is replaced *in place*, so
 * every holder of this object — the SDK's request handler (GetAgentCard on every binding), the card
 * route — serves the new policies. Returns the unsubscribe.
 *
 * @example
 * ```ts
 * const card = withRateLimitExtension(baseCard, limiter);
 * const stop = followPolicyChanges(card, limiter);
 * const handler = new DefaultRequestHandler(card, taskStore, executor);
 * ```
 */
export function followPolicyChanges(
  card: CardWithCapabilities,
  limiter: Limiter,
  options: RateLimitExtensionOptions = {},
): () => void {
  return limiter.onPoliciesChanged(() => {
    const extensions = card.capabilities?.extensions;
    if (!Array.isArray(extensions)) return;
    const next = rateLimitExtension(limiter, options);
    const at = extensions.findIndex(
      (e) => (e as { uri?: unknown } | null)?.uri === RATE_LIMIT_EXTENSION_URI,
    );
    // The served object is the SDK's: its arrays are mutable even where our type says readonly.
    const mutable = extensions as unknown[];
    if (at === -1) mutable.push(next);
    else mutable[at] = next;
  });
}
