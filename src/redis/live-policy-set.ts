/**
 * @module live-policy-set
 * `LivePolicySet`: the policy set a `RedisStore` decides with (its script and insurance limiter,
 * built here only) and its live changes (swap, publish, adopt, tell listeners).
 */

import type { Clock } from '../core/clock.js';
import { compilePolicies } from '../core/compile-policies.js';
import type { CompiledPolicy, CompiledPolicySet } from '../core/compiled-policy.js';
import { policySetVersion } from '../core/policy-set-version.js';
import { MemoryStore } from '../store/memory-store.js';
import type { Store } from '../store/store.js';
import { buildDecisionScript, type DecisionScript } from './decision-script.js';
import { insurancePolicies } from './insurance-policies.js';
import { PolicySetFollower } from './policy-set-sync.js';
import {
  describeError,
  type FailurePolicy,
  notify,
  type RedisStoreLogger,
} from './redis-store-options.js';
import type { ScriptRunner } from './script-runner.js';

/**
 * What the live set needs from its store.
 *
 * @internal
 */
export interface LivePolicySetOptions {
  readonly initial: CompiledPolicySet;
  /** The store's calls to Redis (its prefix too). */
  readonly runner: ScriptRunner;
  readonly keyTtlPaddingMs: number;
  readonly onError: FailurePolicy;
  readonly replicas: number | undefined;
  readonly clock: Clock | undefined;
  readonly logger: RedisStoreLogger;
  /** `false`: do not follow published sets. */
  readonly pollIntervalMs: number | false;
}

/**
 * The current set of one store and its changes. State in Redis is kept per policy name, so a swap
 * touches no key.
 *
 * @internal
 */
export class LivePolicySet {
  set: CompiledPolicySet;
  /** {@link policySetVersion} of `set`. */
  version: string;
  /** The decision script of `set` (a decision keeps the script it started with). */
  script: DecisionScript;
  /** The insurance limiter of `set` (`onError: 'insurance'` only). */
  insurance: MemoryStore | undefined;
  private byName: ReadonlyMap<string, CompiledPolicy>;
  private readonly options: LivePolicySetOptions;
  private readonly follower: PolicySetFollower;
  private readonly listeners = new Set<(set: CompiledPolicySet) => void>();
  private closed = false;

  constructor(options: LivePolicySetOptions) {
    this.options = options;
    const set = options.initial;
    this.set = set;
    this.version = policySetVersion(set);
    this.byName = new Map(set.policies.map((p) => [p.name, p]));
    this.script = buildDecisionScript(set, options.keyTtlPaddingMs, options.runner.prefix);
    this.insurance = this.insuranceFor(set);
    this.follower = new PolicySetFollower(
      {
        runner: options.runner,
        current: () => this.set,
        adopt: (next) => this.adopt(next),
        refused: (generation, error) =>
          notify(options.logger, 'warn', 'published policy set refused; keeping the current one', {
            generation,
            error: describeError(error),
          }),
      },
      options.pollIntervalMs,
    );
  }

  /** The newest published generation seen (0: none). */
  get generation(): number {
    return this.follower.generation;
  }

  /** The current set's policy named `name`. */
  policyNamed(name: string): CompiledPolicy | undefined {
    return this.byName.get(name);
  }

  /**
   * Publishes `next`, then swaps to it here. A set this store cannot run is refused before
   * anything is written; when the publication fails (Redis unreachable) this store keeps its set
   * and the call rejects, so the limiter, the other replicas and this store never disagree. (A
   * publication that reached Redis but whose reply was lost is adopted by this store's own poll.)
   */
  async update(next: CompiledPolicySet): Promise<void> {
    this.check(next);
    await this.follower.publish(next);
    if (!this.closed) this.swap(next);
  }

  /** Subscribes to sets adopted from other stores; returns the unsubscribe function. */
  onChanged(listener: (set: CompiledPolicySet) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stops following; drops the listeners. */
  close(): void {
    this.closed = true;
    this.follower.close();
    this.listeners.clear();
  }

  /** Swaps to `next` (checked first: see {@link LivePolicySet.check}). */
  private swap(next: CompiledPolicySet): void {
    this.check(next);
    const { options } = this;
    const script = buildDecisionScript(next, options.keyTtlPaddingMs, options.runner.prefix);
    const insurance = this.insuranceFor(next);
    this.set = next;
    this.version = policySetVersion(next);
    this.byName = new Map(next.policies.map((p) => [p.name, p]));
    this.script = script;
    this.insurance = insurance;
  }

  /**
   * Throws when this store cannot run `next`, changing nothing: a policy may not change its kind
   * under one name (its keys hold another Redis type), and the insurance limiter must be buildable.
   */
  private check(next: CompiledPolicySet): void {
    if (next.policies.length === 0) {
      throw new TypeError(
        'RedisStore: a shared policy set needs at least one policy (no replica adopts an empty one)',
      );
    }
    for (const p of next.policies) {
      const old = this.byName.get(p.name);
      if (old !== undefined && old.kind !== p.kind) {
        throw new TypeError(
          `RedisStore: policy "${p.name}" changes kind (${old.kind} → ${p.kind}); give it a new name`,
        );
      }
    }
    insurancePolicies(next, this.options.replicas ?? 1); // validates `replicas` for this set
  }

  /** A set another store published: adopted here, then the listeners are told. */
  private adopt(next: CompiledPolicySet): void {
    if (this.closed) return;
    this.swap(next);
    notify(this.options.logger, 'info', 'adopted the policy set published on this prefix', {
      version: this.version,
      generation: this.follower.generation,
    });
    for (const listener of this.listeners) {
      try {
        listener(next);
      } catch {
        // A failing listener must not stop the others.
      }
    }
  }

  /**
   * The insurance limiter for `set` (`onError: 'insurance'`; validates `replicas` either way). The
   * current one keeps its state when it can swap its policies (a `Store` with `updatePolicies`).
   */
  private insuranceFor(set: CompiledPolicySet): MemoryStore | undefined {
    const { options } = this;
    const divided = insurancePolicies(set, options.replicas ?? 1);
    if (options.onError !== 'insurance') return undefined;
    const fresh = () =>
      new MemoryStore({
        policies: divided.policies,
        holds: divided.holds,
        ...(options.clock === undefined ? {} : { clock: options.clock }),
      });
    const current: (MemoryStore & Pick<Store, 'updatePolicies'>) | undefined = this.insurance;
    if (current?.updatePolicies === undefined) return fresh();
    current.updatePolicies(compilePolicies(divided.policies, divided.holds)).catch(() => {
      if (this.insurance === current) this.insurance = fresh();
    });
    return current;
  }
}
