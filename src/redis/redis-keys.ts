/**
 * @module redis-keys
 * The Redis key layout of `RedisStore`, by policy name, with Cluster hash tags; keys made
 * UTF-8-safe (lone surrogates escaped).
 */

import type { CompiledPolicy } from '../core/compiled-policy.js';
import type { DecisionInput } from '../core/decision-state.js';
import { tenantPartOf } from '../core/policy-scope.js';
import { escapeSurrogates, isWellFormedKey } from '../core/table-key.js';
import { boundedKey } from '../store/bounded-key.js';
import { messageRecordKey } from '../store/message-records.js';

/**
 * One applicable policy of one request, with its key.
 *
 * @internal
 */
export interface RequestStep {
  readonly policy: CompiledPolicy;
  /** The hash tag (the slot); steps with one tag can be decided in one script call. */
  readonly tag: string;
  /** Main key (role `k`); the script derives its companion hash (role `h`). */
  readonly key: string;
  /** Takes a lease when admitted. */
  readonly takesLease: boolean;
}

/** A hash tag's content: `}` would end the tag early, so it is replaced (the tag only picks the slot). */
function tagOf(raw: string): string {
  const tag = redisKeyPart(raw);
  return tag.includes('}') ? tag.replaceAll('}', ')') : tag;
}

/** The mark of an escaped key part: U+FFFF, a noncharacter no name begins with in practice. */
const ESCAPED_MARK = '\uffff';

/**
 * A table key (or a record's, or a hold's) as Redis keeps it. Redis stores bytes and ioredis sends
 * UTF-8, which turns every lone surrogate into U+FFFD (`x\ud800` and `x\udc00` would be one
 * caller); so a part that is not well-formed — or begins with U+FFFF, the escape's own mark — is
 * written U+FFFF + the part with `\` doubled and each lone surrogate as `\uXXXX`. Injective on
 * UTF-16 strings, and its output is well-formed, so UTF-8 keeps apart in Redis exactly what a `Map`
 * keeps apart in `MemoryStore`; every other part is sent as it is (one engine check, on the Redis
 * path only: the in-memory decision never pays it).
 *
 * @example
 * ```ts
 * redisKeyPart('orchestrator-7'); // 'orchestrator-7'
 * redisKeyPart('x\ud800');        // '\uffffx\\ud800'
 * ```
 *
 * @internal
 */
export function redisKeyPart(part: string): string {
  return isWellFormedKey(part) && part.charCodeAt(0) !== 0xffff
    ? part
    : escapeSurrogates(ESCAPED_MARK, part);
}

/** Whether an admission under `p` takes a lease. */
function takesLease(p: CompiledPolicy): boolean {
  return p.kind === 'concurrency' || (p.kind === 'overload' && Number.isFinite(p.maxInFlight));
}

/**
 * A policy's key for a request: `prefix k {tag} name \0 tableKey` — by the policy's name, never its
 * position, so a reordered or changed set keeps every key's state. `tableKey` is the policy's
 * `keyOf` — the very key `MemoryStore` uses — made UTF-8-safe ({@link redisKeyPart}), so both
 * stores keep the same identities apart. The
 * hash tag is a function of the key alone, so one key always lives in one slot: caller-scoped keys
 * share the caller's tag, tenant keys the tenant's, the others their own. Policy names cannot
 * contain `\0`, so a key decodes uniquely (see {@link policyNameOfKey}).
 *
 * @internal
 */
export function requestStep(
  prefix: string,
  p: CompiledPolicy,
  input: DecisionInput,
  tableKey: string,
): RequestStep {
  let tag: string;
  if (p.callerScoped) {
    tag = `c:${input.caller}`;
  } else {
    const scope = 'scope' in p.source ? p.source.scope : undefined; // overload: agent-wide
    tag =
      scope === 'tenant' || scope === 'tenant+method'
        ? `t:${tenantPartOf(input)}`
        : `s:${tableKey}`;
  }
  tag = tagOf(tag);
  return {
    policy: p,
    tag,
    key: `${prefix}k{${tag}}${p.name}\u0000${redisKeyPart(tableKey)}`,
    takesLease: takesLease(p),
  };
}

/**
 * The policy name in a key made by {@link requestStep} (a lease's key), or undefined when `key`
 * is not one of this prefix's policy keys.
 *
 * @internal
 */
export function policyNameOfKey(prefix: string, key: string): string | undefined {
  if (!key.startsWith(`${prefix}k{`)) return undefined;
  const tagEnd = key.indexOf('}', prefix.length + 2);
  const nameEnd = key.indexOf('\u0000', tagEnd + 1);
  return tagEnd < 0 || nameEnd < 0 ? undefined : key.slice(tagEnd + 1, nameEnd);
}

/**
 * The deduplication record of (caller, messageId): `prefix d {c:caller}` and the key
 * `MemoryStore` uses (`messageRecordKey`: both parts bounded, joined injectively) made
 * UTF-8-safe ({@link redisKeyPart}), in the caller's slot.
 *
 * @internal
 */
export function messageKey(prefix: string, caller: string, messageId: string): string {
  const record = redisKeyPart(messageRecordKey(caller, messageId));
  return `${prefix}d{${tagOf(`c:${boundedKey(caller)}`)}}${record}`;
}

/**
 * The key a background probe touches (a missing key's pending record: nothing is written).
 *
 * @internal
 */
export function probeKey(prefix: string): string {
  return `${prefix}probe`;
}

/**
 * The hash holding the published policy set of a prefix: fields `g` (generation), `v` (the set's
 * version), `d` (its data, JSON).
 *
 * @internal
 */
export function policySetKey(prefix: string): string {
  return `${prefix}policy-set`;
}
