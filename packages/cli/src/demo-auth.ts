/**
 * @module demo-auth
 * The demo agent's authentication: the bearer token names the caller (and its tier), and the tier
 * last seen per caller.
 */

import type { User } from '@a2a-js/sdk/server';

/**
 * The demo's authentication: `Bearer <name>` makes an authenticated user named `<name>`; anything
 * else is unauthenticated (the adapters then key the caller by address).
 *
 * @example
 * ```ts
 * bearerUser('Bearer orchestrator-7').userName; // 'orchestrator-7'
 * ```
 */
export function bearerUser(value: unknown): User {
  const text = Array.isArray(value) ? value[0] : value;
  const match = typeof text === 'string' ? /^Bearer\s+(\S.*)$/i.exec(text.trim()) : null;
  const name = demoToken(match?.[1]?.trim() ?? '').caller;
  return { isAuthenticated: name !== '', userName: name };
}

/**
 * The demo token's parts: `<caller>@<tier>` authenticates `<caller>` with tier `<tier>`; a plain
 * `<caller>` has no tier (each policy's default tier).
 *
 * @example
 * ```ts
 * demoToken('alice@pro'); // { caller: 'alice', tier: 'pro' }
 * ```
 */
export function demoToken(token: string): { caller: string; tier?: string } {
  const at = token.lastIndexOf('@');
  if (at <= 0 || at === token.length - 1) return { caller: token };
  return { caller: token.slice(0, at), tier: token.slice(at + 1) };
}

/** The tier the demo authentication last saw for each caller (bounded; a real agent asks its accounts). */
export class DemoTiers {
  private readonly tiers = new Map<string, string>();
  note(value: unknown): void {
    const text = Array.isArray(value) ? value[0] : value;
    const match = typeof text === 'string' ? /^Bearer\s+(\S.*)$/i.exec(text.trim()) : null;
    const { caller, tier } = demoToken(match?.[1]?.trim() ?? '');
    if (caller === '') return;
    if (tier === undefined) this.tiers.delete(caller);
    else {
      if (this.tiers.size >= 10_000 && !this.tiers.has(caller)) return;
      this.tiers.set(caller, tier);
    }
  }
  of(caller: string): string | undefined {
    return this.tiers.get(caller);
  }
}
