/**
 * @module policy-set-version
 * A policy set's version: a stable content hash, the same on every replica running the same set.
 */

import type { CompiledPolicySet } from './compiled-policy.js';

/** Sets already hashed (a set is immutable once compiled). */
const versions = new WeakMap<CompiledPolicySet, string>();

/**
 * The version of `set`: 16 hex digits hashing every policy as declared (in order, object keys
 * sorted, so spelling a policy's fields in another order gives the same version) and the hold
 * options. A function in a policy (a custom scope's `key`, an `exempt` predicate) counts by its
 * source text.
 *
 * @example
 * ```ts
 * policySetVersion(compilePolicies(policies)) === policySetVersion(compilePolicies(policies)); // true
 * ```
 */
export function policySetVersion(set: CompiledPolicySet): string {
  const known = versions.get(set);
  if (known !== undefined) return known;
  const text = canonical({ policies: set.policies.map((p) => p.source), holds: set.holds });
  const version = hash64(text);
  versions.set(set, version);
  return version;
}

/** JSON-like text with sorted keys; functions as their source, undefined members left out. */
function canonical(value: unknown): string {
  if (typeof value === 'function') return JSON.stringify(`fn:${String(value)}`);
  if (value === undefined) return 'null';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : `"${value}"`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}

/** Two independent 32-bit FNV-1a lanes with murmur3 finalisers, as 16 hex digits. */
function hash64(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  return (
    fmix(a).toString(16).padStart(8, '0') +
    fmix(b ^ text.length)
      .toString(16)
      .padStart(8, '0')
  );
}

function fmix(h: number): number {
  let x = h >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}
