/**
 * @module extended-card
 * Each caller's own limits on the extended card the upstream answers (JSON; gRPC in
 * `grpc-agent-card.ts`).
 */

import { type Limiter, withRateLimitExtension } from 'a2a-ratelimit/server';
import { type GrpcCardExtension, rewriteGrpcAgentCard } from './grpc-agent-card.js';
import { rewriteCard } from './upstream-card.js';

/** Who the extended card is for: the identified caller, and its tier when the identity says. */
export interface ExtendedCardCaller {
  readonly caller: string;
  readonly tier?: string | undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * A copy of an extended card (an A2A `AgentCard` object, as decoded from any binding) for
 * `caller`: interface URLs rewritten onto `publicBase` (the gRPC one onto `grpcPublic` when the
 * gateway relays gRPC), the rate-limit extension stating the caller's tier and limits (replacing
 * any copy the upstream put there).
 *
 * @example
 * ```ts
 * const card = callerExtendedCard(upstreamCard, limiter, { caller: 'alice', tier: 'pro' }, 'https://gw.example');
 * ```
 */
export function callerExtendedCard(
  card: Record<string, unknown>,
  limiter: Limiter,
  who: ExtendedCardCaller,
  publicBase: string,
  grpcPublic?: string,
): Record<string, unknown> {
  const { card: rewritten } = rewriteCard(card, publicBase, grpcPublic);
  return withRateLimitExtension(
    rewritten,
    limiter,
    who.tier === undefined ? { caller: who.caller } : { caller: who.caller, tier: who.tier },
  );
}

/**
 * The caller's extended card in place of the upstream's, in a JSON-RPC response's `result` or a
 * REST body; undefined (relay the upstream's bytes untouched) when the body is not a card: an
 * error, a body that is not JSON.
 *
 * @example
 * ```ts
 * const body = extendedCardBody('jsonrpc', upstreamBody, (card) => callerExtendedCard(card, limiter, who, base));
 * ```
 */
export function extendedCardBody(
  binding: 'jsonrpc' | 'rest',
  body: Buffer,
  forCaller: (card: Record<string, unknown>) => Record<string, unknown>,
): Buffer | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (!isObject(parsed)) return undefined;
  if (binding === 'rest') {
    if (parsed.name === undefined && parsed.supportedInterfaces === undefined) return undefined;
    return Buffer.from(JSON.stringify(forCaller(parsed)));
  }
  if (parsed.error !== undefined || !isObject(parsed.result)) return undefined;
  return Buffer.from(JSON.stringify({ ...parsed, result: forCaller(parsed.result) }));
}

/**
 * The caller's extended card in place of the upstream's, from a gRPC `AgentCard` message's bytes:
 * interface URLs rewritten onto `publicBase` (the gRPC one onto `grpcPublic`), the rate-limit
 * extension the library builds for `who`; undefined (relay the upstream's bytes untouched) when
 * the bytes are not a message.
 *
 * @example
 * ```ts
 * const bytes = callerGrpcExtendedCard(answer, limiter, { caller: 'alice', tier: 'pro' }, 'https://gw.example', 'gw.example:50051');
 * ```
 */
export function callerGrpcExtendedCard(
  card: Uint8Array,
  limiter: Limiter,
  who: ExtendedCardCaller,
  publicBase: string,
  grpcPublic: string | undefined,
): Uint8Array | undefined {
  const built = withRateLimitExtension(
    { capabilities: { extensions: [] as unknown[] } },
    limiter,
    who.tier === undefined ? { caller: who.caller } : { caller: who.caller, tier: who.tier },
  );
  // Its JSON form (undefined members dropped), as every other binding writes it.
  const extension = JSON.parse(JSON.stringify(built.capabilities.extensions.at(-1))) as
    | GrpcCardExtension
    | undefined;
  if (extension === undefined) return undefined;
  return rewriteGrpcAgentCard(card, {
    extension,
    interfaceUrls: (interfaces) => {
      const { card: rewritten } = rewriteCard(
        { supportedInterfaces: interfaces.map((i) => ({ ...i })) },
        publicBase,
        grpcPublic,
      );
      const list = rewritten.supportedInterfaces as readonly { readonly url: unknown }[];
      return list.map((i, at) => (typeof i.url === 'string' ? i.url : (interfaces[at]?.url ?? '')));
    },
  });
}
