/**
 * @module compile-policies
 * Validation and compilation of a policy set: GCRA parameters, tier variants, hold options, and the
 * per-method (and per-tier) selections.
 */

import { A2A_METHODS, type A2AMethod, ALL_A2A_METHODS, isA2AMethod } from './a2a-methods.js';
import { callerShareOf, callerShareVariant, withCallerShares } from './caller-share.js';
import {
  type CompiledHoldOptions,
  type CompiledPolicy,
  type CompiledPolicySet,
  compiledRatePolicy,
} from './compiled-policy.js';
import type { HoldOptions, Policy, RejectionKind } from './policy.js';
import { describeValue, PolicyError } from './policy-error.js';
import { compileScope, withExemptions } from './policy-scope.js';
import {
  compileTierVariants,
  rateParams,
  tierSelections,
  usageGcra,
  variantFor,
} from './policy-tiers.js';

const NAME_PATTERN = /^[\x21-\x7e](?:[\x20-\x7e]{0,62}[\x21-\x7e])?$/;

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

function isPositiveFinite(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}

function compileHoldUntil(label: string, value: unknown): 'task' | 'response' | undefined {
  if (value === undefined || value === 'task' || value === 'response') return value;
  throw new PolicyError(
    label,
    'holdUntil',
    `must be "task" or "response", got ${describeValue(value)}`,
  );
}

function compileMethods(label: string, methods: unknown): ReadonlySet<A2AMethod> {
  if (methods === undefined) return new Set(ALL_A2A_METHODS);
  if (!Array.isArray(methods) || methods.length === 0) {
    throw new PolicyError(label, 'methods', 'must be a non-empty array of A2A method names');
  }
  for (const m of methods) {
    if (!isA2AMethod(m)) {
      throw new PolicyError(
        label,
        'methods',
        `has unknown A2A method ${describeValue(m)} (known: ${Object.keys(A2A_METHODS).join(', ')})`,
      );
    }
  }
  return new Set(methods as A2AMethod[]);
}

function compileRejectAs(label: string, value: unknown): RejectionKind {
  if (value === undefined || value === 'quota') return 'quota';
  if (value === 'overload') return 'overload';
  throw new PolicyError(
    label,
    'rejectAs',
    `must be "quota" or "overload", got ${describeValue(value)}`,
  );
}

function optionalPositive(label: string, field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (!isPositiveFinite(value)) {
    throw new PolicyError(label, field, `must be a positive number, got ${describeValue(value)}`);
  }
  return value;
}

function compileOne(
  raw: unknown,
  index: number,
  names: Set<string>,
  extraRows: CompiledPolicy[],
  nextRow: () => number,
): CompiledPolicy {
  if (typeof raw !== 'object' || raw === null) {
    throw new PolicyError(`#${index}`, 'policy', `must be an object, got ${describeValue(raw)}`);
  }
  const p = raw as Record<string, unknown>;
  const name = p.name;
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new PolicyError(
      `#${index}`,
      'name',
      `must be 1–64 printable ASCII characters without surrounding spaces, got ${describeValue(name)}`,
    );
  }
  if (names.has(name)) throw new PolicyError(name, 'name', 'is used by more than one policy');
  names.add(name);
  const methods = compileMethods(name, p.methods);
  const source = raw as Policy;
  if (p.mode !== undefined && p.mode !== 'enforce' && p.mode !== 'shadow') {
    throw new PolicyError(
      name,
      'mode',
      `must be "enforce" or "shadow", got ${describeValue(p.mode)}`,
    );
  }
  const shadow = p.mode === 'shadow';

  switch (p.kind) {
    case 'rate': {
      const scoped = withExemptions(name, p.exempt, compileScope(name, p.scope, 'caller'));
      const rejectAs = compileRejectAs(name, p.rejectAs);
      const common = { kind: 'rate' as const, index, paramIndex: index, name, shadow, ...scoped };
      if (p.tiers !== undefined || p.defaultTier !== undefined) {
        for (const field of ['limit', 'windowSeconds', 'burst'] as const) {
          if (p[field] !== undefined) {
            throw new PolicyError(name, field, 'must be left out when tiers are given');
          }
        }
        const compiled = compileTierVariants(
          { ...common, rejectAs, methods, source },
          p.tiers,
          p.defaultTier,
          nextRow,
          p.unit === undefined && p.estimate === undefined
            ? undefined
            : { unit: p.unit, estimate: p.estimate },
        );
        if ('problem' in compiled) throw new PolicyError(name, compiled.field, compiled.problem);
        extraRows.push(...compiled.extraRows);
        return compiled.policy;
      }
      const params = rateParams(p, '');
      if ('problem' in params) throw new PolicyError(name, params.field, params.problem);
      if (p.unit === undefined) {
        if (p.estimate !== undefined) {
          throw new PolicyError(name, 'estimate', 'is for usage policies (give `unit`)');
        }
        return compiledRatePolicy({
          ...common,
          rejectAs,
          methods,
          source,
          ...params,
          tier: undefined,
          tierVariants: [],
          unit: undefined,
          unitUs: params.emissionUs,
        });
      }
      if (typeof p.unit !== 'string' || !/^[a-z][a-z0-9_-]{0,31}$/.test(p.unit)) {
        throw new PolicyError(
          name,
          'unit',
          `must match [a-z][a-z0-9_-]{0,31}, got ${describeValue(p.unit)}`,
        );
      }
      const estimate = p.estimate as number | undefined;
      if (
        estimate !== undefined &&
        (!Number.isSafeInteger(estimate) || estimate < 0 || estimate > params.burst)
      ) {
        throw new PolicyError(
          name,
          'estimate',
          `must be an integer from 0 to burst (${params.burst}), got ${describeValue(p.estimate)}`,
        );
      }
      return compiledRatePolicy({
        ...common,
        // A budget is not a queue of slots: usage policies never hold.
        callerScoped: false,
        rejectAs,
        methods,
        source,
        ...params,
        ...usageGcra(params, estimate),
        tier: undefined,
        tierVariants: [],
        unit: p.unit,
      });
    }
    case 'concurrency': {
      if (!isPositiveInteger(p.max)) {
        throw new PolicyError(
          name,
          'max',
          `must be a positive integer, got ${describeValue(p.max)}`,
        );
      }
      return {
        kind: 'concurrency',
        index,
        paramIndex: index,
        shadow,
        name,
        ...withExemptions(name, p.exempt, compileScope(name, p.scope, 'caller')),
        rejectAs: compileRejectAs(name, p.rejectAs),
        methods,
        source,
        max: p.max,
        leaseTtlMs: optionalPositive(name, 'leaseTtlSeconds', p.leaseTtlSeconds, 600) * 1000,
        initialHoldEstimateMs: optionalPositive(
          name,
          'initialHoldEstimateMs',
          p.initialHoldEstimateMs,
          1000,
        ),
        holdUntil: compileHoldUntil(name, p.holdUntil),
        shareOfInFlight: undefined,
      };
    }
    case 'overload': {
      if (p.scope !== undefined && p.scope !== 'agent') {
        throw new PolicyError(
          name,
          'scope',
          `of an overload policy is always "agent", got ${describeValue(p.scope)}`,
        );
      }
      if (p.maxInFlight === undefined && p.maxEventLoopDelayMs === undefined) {
        throw new PolicyError(name, 'maxInFlight', 'or maxEventLoopDelayMs must be set');
      }
      if (p.maxInFlight !== undefined && !isPositiveInteger(p.maxInFlight)) {
        throw new PolicyError(
          name,
          'maxInFlight',
          `must be a positive integer, got ${describeValue(p.maxInFlight)}`,
        );
      }
      const maxInFlight = (p.maxInFlight as number | undefined) ?? Number.POSITIVE_INFINITY;
      const overload = {
        kind: 'overload' as const,
        index,
        paramIndex: index,
        shadow,
        name,
        ...withExemptions(name, p.exempt, compileScope(name, 'agent', 'agent')),
        rejectAs: 'overload' as const,
        methods,
        source,
        maxInFlight,
        maxEventLoopDelayMs: optionalPositive(
          name,
          'maxEventLoopDelayMs',
          p.maxEventLoopDelayMs,
          Number.POSITIVE_INFINITY,
        ),
        leaseTtlMs: optionalPositive(name, 'leaseTtlSeconds', p.leaseTtlSeconds, 600) * 1000,
        initialHoldEstimateMs: optionalPositive(
          name,
          'initialHoldEstimateMs',
          p.initialHoldEstimateMs,
          1000,
        ),
      };
      const share = callerShareOf(name, maxInFlight, p.maxInFlightPerCaller);
      const callerShare =
        share === undefined ? undefined : callerShareVariant(overload, share, nextRow());
      if (callerShare !== undefined) extraRows.push(callerShare);
      return { ...overload, callerShare };
    }
    default:
      throw new PolicyError(
        name,
        'kind',
        `must be "rate", "concurrency" or "overload", got ${describeValue(p.kind)}`,
      );
  }
}

function compileHolds(options: HoldOptions | undefined): CompiledHoldOptions {
  const o = options ?? {};
  const label = '(hold options)';
  const maxNoShows = o.maxNoShows ?? 3;
  if (!Number.isSafeInteger(maxNoShows) || maxNoShows < 0) {
    throw new PolicyError(
      label,
      'maxNoShows',
      `must be an integer ≥ 0, got ${describeValue(o.maxNoShows)}`,
    );
  }
  const maxHoldsPerKey = o.maxHoldsPerKey ?? 1000;
  if (!Number.isSafeInteger(maxHoldsPerKey) || maxHoldsPerKey < 0) {
    throw new PolicyError(
      label,
      'maxHoldsPerKey',
      `must be an integer ≥ 0, got ${describeValue(o.maxHoldsPerKey)}`,
    );
  }
  const minGraceMs = optionalPositive(label, 'minGraceMs', o.minGraceMs, 3000);
  const graceFraction = o.graceFraction ?? 0.1;
  if (typeof graceFraction !== 'number' || !(graceFraction >= 0 && graceFraction <= 1)) {
    throw new PolicyError(
      label,
      'graceFraction',
      `must be between 0 and 1, got ${describeValue(graceFraction)}`,
    );
  }
  return { maxNoShows, maxHoldsPerKey, minGraceUs: Math.round(minGraceMs * 1000), graceFraction };
}

/**
 * Validates a policy set and precomputes everything the decision needs. Throws {@link PolicyError}
 * naming the policy and field for: a missing or duplicate name, an unknown kind, scope or method, a
 * limit, window or max that is not a positive integer, a burst below 1, an overload policy with no
 * threshold.
 *
 * @example
 * ```ts
 * const set = compilePolicies([
 *   { name: 'per-caller', kind: 'rate', scope: 'caller', methods: ['SendMessage'], limit: 60, windowSeconds: 60, burst: 10 },
 *   { name: 'per-tenant', kind: 'rate', scope: 'tenant', limit: 1000, windowSeconds: 60 },
 * ]);
 * set.forMethod('SendMessage').map((p) => p.name); // ['per-caller', 'per-tenant']
 * ```
 */
export function compilePolicies(
  policies: readonly Policy[],
  holdOptions?: HoldOptions,
): CompiledPolicySet {
  if (!Array.isArray(policies)) {
    throw new PolicyError('(policy set)', 'policies', 'must be an array');
  }
  const names = new Set<string>();
  const extraRows: CompiledPolicy[] = [];
  let rowCount = policies.length;
  const nextRow = () => rowCount++;
  const compiled = policies.map((p, i) => compileOne(p, i, names, extraRows, nextRow));
  const byMethod = new Map<A2AMethod, readonly CompiledPolicy[]>();
  const shadowByMethod = new Map<A2AMethod, readonly number[]>();
  for (const method of ALL_A2A_METHODS) {
    byMethod.set(
      method,
      withCallerShares(compiled.filter((p) => p.methods.has(method) && !p.shadow)),
    );
    shadowByMethod.set(
      method,
      compiled.filter((p) => p.methods.has(method) && p.shadow).map((p) => p.index),
    );
  }
  const none: readonly CompiledPolicy[] = [];
  const noIndexes: readonly number[] = [];
  // A plain object, not the Map: the per-decision lookup is a property load the engine caches.
  const byMethodName: Partial<Record<string, readonly CompiledPolicy[]>> = {};
  for (const [method, list] of byMethod) byMethodName[method] = list;
  const plain = (method: A2AMethod) => {
    const list = byMethodName[method];
    // Array.isArray: a name such as `constructor` finds the prototype's member, not a list.
    return Array.isArray(list) ? list : none;
  };
  const byTier = tierSelections(compiled, ALL_A2A_METHODS, plain);
  const tiered = byTier.size > 0;
  // One function for tiered and untiered sets alike: a process holding both (a tiered store beside
  // a plain one) keeps the decision's call monomorphic, so engines still inline it. `plain`'s lookup
  // is written in place, one call fewer on every decision (`bench:decide`).
  const forMethod = (method: A2AMethod, tier?: string) => {
    if (tiered && tier !== undefined) {
      const variants = byTier.get(tier)?.get(method);
      if (variants !== undefined) return variants;
    }
    const list = byMethodName[method];
    return Array.isArray(list) ? list : none;
  };
  return {
    policies: compiled,
    rows: [...compiled, ...extraRows],
    tiered,
    holds: compileHolds(holdOptions),
    forMethod,
    shadowIndexes: (method) => shadowByMethod.get(method) ?? noIndexes,
    atIndex: (i, tier) => {
      const p = compiled[i];
      return p === undefined ? undefined : variantFor(p, tier);
    },
  };
}
