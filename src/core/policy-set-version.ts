/**
 * @module policy-set-version
 * The version of a compiled policy set: a short content hash of its policies (as declared) and
 * hold options, equal for equal sets whatever process compiled them. Pure (no Node APIs).
 */

import type { CompiledPolicySet } from './policy.js';

/** JSON with object keys sorted; functions as their source text (they cannot travel as data). */
function canonical(value: unknown): string {
  if (typeof value === 'function') return JSON.stringify(`fn:${String(value)}`);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** 32-bit FNV-1a of `text`'s UTF-16 code units from `seed`, as 8 hex digits. */
function fnv1a(text: string, seed: number): string {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

/**
 * The set's version: 16 hex digits, a function of its declared policies and hold options only.
 *
 * @example
 * ```ts
 * policySetVersion(compilePolicies(policies)) === policySetVersion(compilePolicies(policies)); // true
 * ```
 */
export function policySetVersion(set: CompiledPolicySet): string {
  const text = canonical({ policies: set.policies.map((p) => p.source), holds: set.holds });
  return fnv1a(text, 0x811c9dc5) + fnv1a(text, 0x050c5d1f);
}
