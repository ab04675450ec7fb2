/**
 * @module card-extension
 * The agent-card extension that publishes the limiter's policies (DESIGN §8): an `AgentExtension`
 * for `capabilities.extensions`, on the public card and on the extended card, whose `params` list
 * every policy and say whether messageIds are deduplicated. Structural types: no SDK import.
 */

import type { Limiter } from './limiter.js';

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
 *
 * @example
 * ```ts
 * const p: PublishedPolicy = { name: 'per-caller', kind: 'rate', scope: 'caller', methods: ['SendMessage'], rejectAs: 'quota', limit: 60, windowSeconds: 60, burst: 10 };
 * ```
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
  /** Overload: event-loop delay cap, ms. */
  readonly maxEventLoopDelayMs?: number;
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
  options: { readonly description?: string } = {},
): RateLimitExtension {
  const policies: PublishedPolicy[] = limiter.policySet.policies.map((p) => {
    const base = {
      name: p.name,
      kind: p.kind,
      scope: p.scopeName,
      methods: [...p.methods],
      rejectAs: p.rejectAs,
      ...(p.source.description === undefined ? {} : { description: p.source.description }),
    };
    switch (p.kind) {
      case 'rate':
        return { ...base, limit: p.limit, windowSeconds: p.windowSeconds, burst: p.burst };
      case 'concurrency':
        return { ...base, max: p.max };
      default:
        return {
          ...base,
          ...(Number.isFinite(p.maxInFlight) ? { maxInFlight: p.maxInFlight } : {}),
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
    },
  };
}

/**
 * A card shape with capabilities (the SDK's `AgentCard` fits).
 *
 * @example
 * ```ts
 * const card: CardWithCapabilities = { capabilities: { extensions: [] } };
 * ```
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
 *   async (ctx) => withRateLimitExtension(extendedCardFor(ctx), limiter));
 * ```
 */
export function withRateLimitExtension<C extends CardWithCapabilities>(
  card: C,
  limiter: Limiter,
  options: { readonly description?: string } = {},
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
