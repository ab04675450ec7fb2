/**
 * @module policy-set-sync
 * How replicas sharing a Redis prefix converge on one policy set: publish under
 * `<prefix>policy-set`, follow by generation.
 */

import { createHash } from 'node:crypto';
import { compilePolicies } from '../core/compile-policies.js';
import type { CompiledPolicySet } from '../core/compiled-policy.js';
import type { HoldOptions, Policy } from '../core/policy.js';
import { policySetVersion } from '../core/policy-set-version.js';
import type { DecisionScript } from './decision-script.js';
import { LUA_POLICY_SET } from './lua-files.js';
import { policySetKey } from './redis-keys.js';
import type { ScriptRunner } from './script-runner.js';

/** Where a function-valued field was in the published data. */
const LOCAL_FUNCTION = '$localFunction';
/** A non-finite number (JSON has none). */
const NUMBER = '$number';

/**
 * The hold options a compiled set was made with (µs back to the declared ms).
 *
 * @internal
 */
export function holdOptionsOf(set: CompiledPolicySet): HoldOptions {
  const h = set.holds;
  return {
    maxNoShows: h.maxNoShows,
    maxHoldsPerKey: h.maxHoldsPerKey,
    minGraceMs: h.minGraceUs / 1000,
    graceFraction: h.graceFraction,
  };
}

/**
 * The published data of a set: `{ policies, holds }` as JSON, function-valued fields as markers.
 *
 * @internal
 */
export function encodePolicySet(set: CompiledPolicySet): string {
  return JSON.stringify(
    { policies: set.policies.map((p) => p.source), holds: holdOptionsOf(set) },
    (_key, value: unknown) => {
      if (typeof value === 'function') return { [LOCAL_FUNCTION]: true };
      if (typeof value === 'number' && !Number.isFinite(value)) return { [NUMBER]: String(value) };
      return value;
    },
  );
}

/** `published` with every marker replaced by the function at the same path of `local`. */
function reattach(published: unknown, local: unknown, path: string, missing: string[]): unknown {
  if (typeof published !== 'object' || published === null) return published;
  const record = published as Record<string, unknown>;
  if (record[LOCAL_FUNCTION] === true) {
    if (typeof local === 'function') return local;
    missing.push(path);
    return undefined;
  }
  if (typeof record[NUMBER] === 'string') return Number(record[NUMBER]);
  const localRecord =
    typeof local === 'object' && local !== null ? (local as Record<string, unknown>) : {};
  if (Array.isArray(published)) {
    return published.map((v, i) => reattach(v, localRecord[i], `${path}[${i}]`, missing));
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(record)) {
    out[k] = reattach(v, localRecord[k], path === '' ? k : `${path}.${k}`, missing);
  }
  return out;
}

/**
 * The set published as `data`, compiled, with this replica's own functions re-attached by policy
 * name. Throws (naming the policy and field) when the data is not a valid set, or when this
 * replica has no function for a field that was one on the publisher.
 *
 * @internal
 */
export function decodePolicySet(data: string, local: CompiledPolicySet): CompiledPolicySet {
  const parsed = JSON.parse(data) as { policies?: unknown; holds?: unknown };
  // An empty set would turn every limit off on every replica at once: never adopted from Redis
  // (anyone who can write the key could do it); a replica that wants no limits says so itself.
  if (!Array.isArray(parsed.policies) || parsed.policies.length === 0) {
    throw new TypeError('published policy set has no policies');
  }
  const byName = new Map(local.policies.map((p) => [p.name, p.source]));
  const missing: string[] = [];
  const policies = parsed.policies.map((raw: unknown) => {
    const name = (raw as { name?: unknown } | null)?.name;
    const own = typeof name === 'string' ? byName.get(name) : undefined;
    return reattach(raw, own, `policy "${String(name)}"`, missing);
  });
  if (missing.length > 0) {
    throw new TypeError(
      `published policy set needs functions this replica does not have: ${missing.join(', ')}`,
    );
  }
  const holds = reattach(parsed.holds, undefined, 'holds', missing) as HoldOptions | undefined;
  return compilePolicies(policies as Policy[], holds);
}

function scriptOf(text: string): DecisionScript {
  return { text, sha1: createHash('sha1').update(text).digest('hex') };
}

const POLICY_SET_SCRIPT = scriptOf(LUA_POLICY_SET);

/**
 * What the follower needs from its store.
 *
 * @internal
 */
export interface PolicySetHost {
  /** The store's calls to Redis (prefix and timeout too). */
  readonly runner: ScriptRunner;
  /** The set the store uses now. */
  current(): CompiledPolicySet;
  /** Adopts a set another replica published. */
  adopt(set: CompiledPolicySet, generation: number): void;
  /** A published set this replica cannot adopt (logged once per generation). */
  refused(generation: number, error: unknown): void;
}

/**
 * Publishes this store's set and follows the sets other stores publish on the same prefix: a set
 * is published under `<prefix>policy-set` with a generation number, and every other store polls
 * the generation (one cheap script call per interval).
 *
 * At start a store uses its own configured set and remembers the generation published then (it
 * does not adopt it); it publishes only when told (`updatePolicies`); any generation published
 * later by another store is adopted.
 *
 * @internal
 */
export class PolicySetFollower {
  /** The newest generation this store has seen (0: none published yet, or not read yet). */
  generation = 0;
  private readonly host: PolicySetHost;
  private readonly key: string;
  private baseline: Promise<void> | undefined;
  private polling = false;
  /** Publications started; a poll that saw another one start meanwhile drops its result. */
  private epoch = 0;
  private publishing = 0;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(host: PolicySetHost, pollIntervalMs: number | false) {
    this.host = host;
    this.key = policySetKey(host.runner.prefix);
    if (pollIntervalMs === false) return;
    this.baseline = this.readGeneration().then(
      (g) => {
        this.generation = Math.max(this.generation, g);
      },
      () => {}, // Unreachable now: every later generation counts as new (`generation` stays 0).
    );
    this.timer = setInterval(this.poll, pollIntervalMs);
    this.timer.unref?.();
  }

  /** Publishes `set`; resolves to its generation. */
  async publish(set: CompiledPolicySet): Promise<number> {
    // Synchronous part: a poll in flight now must not adopt an older set after the caller swaps.
    this.epoch++;
    this.publishing++;
    let reply: unknown;
    try {
      await this.baseline;
      reply = await this.host.runner.timed(
        POLICY_SET_SCRIPT,
        [this.key],
        ['p', policySetVersion(set), encodePolicySet(set)],
      );
    } finally {
      this.publishing--;
    }
    const generation = Number(reply);
    if (!Number.isSafeInteger(generation)) {
      throw new Error(`a2a-ratelimit: unexpected policy-set reply ${String(reply)}`);
    }
    this.generation = Math.max(this.generation, generation);
    return generation;
  }

  /** Stops polling. */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async readGeneration(): Promise<number> {
    const reply = await this.host.runner.timed(POLICY_SET_SCRIPT, [this.key], ['g']);
    const generation = Number(reply);
    return Number.isSafeInteger(generation) ? generation : 0;
  }

  /** One poll: the generation; when newer than seen, the set (adopted, or refused once). */
  private readonly poll = (): void => {
    if (this.polling || this.publishing > 0 || this.baseline === undefined) return;
    this.polling = true;
    const epoch = this.epoch;
    void this.baseline
      .then(async () => {
        const generation = await this.readGeneration();
        if (generation <= this.generation || epoch !== this.epoch) return;
        const reply = await this.host.runner.timed(POLICY_SET_SCRIPT, [this.key], ['f']);
        const [g, , data] = Array.isArray(reply) ? reply : [];
        const fetched = Number(g);
        if (!Number.isSafeInteger(fetched) || fetched <= this.generation) return;
        // This store published meanwhile: its own set (or a later poll) decides.
        if (epoch !== this.epoch || this.publishing > 0) return;
        this.generation = fetched;
        try {
          const set = decodePolicySet(String(data), this.host.current());
          this.host.adopt(set, fetched);
        } catch (error) {
          this.host.refused(fetched, error);
        }
      })
      .catch(() => {
        // Redis unreachable: the next poll tries again (the decisions report the outage).
      })
      .finally(() => {
        this.polling = false;
      });
  };
}
