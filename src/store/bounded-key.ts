/**
 * @module bounded-key
 * Bounds what a store keeps per key: over-long caller, tenant, skill or messageId values are
 * replaced by their SHA-256, injectively.
 */

import { createHash } from 'node:crypto';
import type { DecisionInput } from '../core/decision-state.js';
import { HASHED_KEY_LENGTH, HASHED_KEY_PREFIX } from '../core/table-key.js';

/**
 * Longest value kept as it is, UTF-16 code units.
 *
 * @example
 * ```ts
 * boundedKey('a'.repeat(MAX_KEY_LENGTH)).length; // MAX_KEY_LENGTH: kept
 * ```
 */
export const MAX_KEY_LENGTH = 256;

/**
 * Prefix of a hashed value (followed by 43 base64url characters); defined with the table keys
 * (`core/table-key.ts`), whose reserved keys share the shape.
 *
 * @example
 * ```ts
 * boundedKey('x'.repeat(300)).startsWith(HASHED_KEY_PREFIX); // true
 * ```
 */
export { HASHED_KEY_PREFIX };

/**
 * A value as a store keeps it: itself when it has at most {@link MAX_KEY_LENGTH} code units and
 * is not shaped like a hashed value (51 code units beginning with {@link HASHED_KEY_PREFIX}),
 * otherwise `#sha256:` + the base64url SHA-256 of its UTF-16 code units (lossless, so lone
 * surrogates stay distinct). Distinct values give distinct keys (up to SHA-256 collisions).
 *
 * @example
 * ```ts
 * boundedKey('orchestrator-7');  // 'orchestrator-7'
 * boundedKey('x'.repeat(16_000)); // '#sha256:…' (51 characters)
 * ```
 */
export function boundedKey(value: string): string {
  if (keptAsIs(value)) return value;
  return `${HASHED_KEY_PREFIX}${createHash('sha256').update(value, 'utf16le').digest('base64url')}`;
}

/**
 * Whether a value is kept as it is. Only a value of a hashed value's length has its characters
 * read: the usual check reads the length alone, so a decision never touches the text of a caller
 * name (nor flattens a concatenated one) just to bound it.
 */
function keptAsIs(value: string): boolean {
  const length = value.length;
  return (
    length <= MAX_KEY_LENGTH &&
    (length !== HASHED_KEY_LENGTH || !value.startsWith(HASHED_KEY_PREFIX))
  );
}

/** Inputs this module made: bounding them again gives them back (a store inside a store). */
const BOUNDED = new WeakSet<DecisionInput>();

/**
 * A decision input with `caller`, `tenant`, `skill` and `messageId` as {@link boundedKey} gives
 * them; the same object when all are already bounded (the usual case: no allocation), or when it
 * is an input this function made.
 *
 * @example
 * ```ts
 * boundedInput({ caller: 'x'.repeat(300), method: 'GetTask' }).caller; // '#sha256:…'
 * ```
 */
export function boundedInput(input: DecisionInput): DecisionInput {
  const { tenant, skill, messageId } = input;
  return keptAsIs(input.caller) &&
    (tenant === undefined || keptAsIs(tenant)) &&
    (skill === undefined || keptAsIs(skill)) &&
    (messageId === undefined || keptAsIs(messageId))
    ? input
    : boundedCopy(input);
}

/**
 * {@link boundedInput}'s rare path, a function of its own so the usual check stays small enough
 * for engines to inline into every decision.
 */
function boundedCopy(input: DecisionInput): DecisionInput {
  if (BOUNDED.has(input)) return input;
  const { tenant, skill, messageId } = input;
  const bounded: DecisionInput = {
    ...input,
    caller: boundedKey(input.caller),
    ...(tenant === undefined ? {} : { tenant: boundedKey(tenant) }),
    ...(skill === undefined ? {} : { skill: boundedKey(skill) }),
    ...(messageId === undefined ? {} : { messageId: boundedKey(messageId) }),
  };
  BOUNDED.add(bounded);
  return bounded;
}
