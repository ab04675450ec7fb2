/**
 * @module policy-scope
 * Scopes: the built-in names, each policy's subject and key functions, exemptions.
 */

import {
  BUILTIN_SCOPES,
  type BuiltinScope,
  type CustomScope,
  type RequestIdentity,
} from './policy.js';
import { describeValue, PolicyError } from './policy-error.js';
import { NO_TENANT_KEY, pairKey, wellFormedKey } from './table-key.js';

const BUILTIN_SCOPE_SET: ReadonlySet<string> = new Set<string>(BUILTIN_SCOPES);

const CALLER_SCOPES: ReadonlySet<string> = new Set(['caller', 'caller+method', 'caller+skill']);

/** The subject's tenant label of a request without a tenant (the key is {@link NO_TENANT_KEY}). */
const NO_TENANT = '-';

function builtinSubject(scope: BuiltinScope): (r: RequestIdentity) => string | undefined {
  switch (scope) {
    case 'caller':
      return (r) => `caller:${r.caller}`;
    case 'tenant':
      return (r) => `tenant:${r.tenant || NO_TENANT}`;
    case 'skill':
      return (r) => (r.skill ? `skill:${r.skill}` : undefined);
    case 'method':
      return (r) => `method:${r.method}`;
    case 'agent':
      return () => 'agent';
    case 'caller+method':
      return (r) => `caller:${r.caller}/method:${r.method}`;
    case 'caller+skill':
      return (r) => (r.skill ? `caller:${r.caller}/skill:${r.skill}` : undefined);
    case 'tenant+method':
      return (r) => `tenant:${r.tenant || NO_TENANT}/method:${r.method}`;
  }
}

/** The scope fields of a compiled policy. */
export interface Scoped {
  scopeName: string;
  callerScoped: boolean;
  subjectOf: (r: RequestIdentity) => string | undefined;
  keyOf: (r: RequestIdentity) => string | undefined;
}

/** Table key of the `caller` scope. */
const callerKey = (r: RequestIdentity): string | undefined => r.caller;

/**
 * The tenant part of a request's keys: its tenant, or {@link NO_TENANT_KEY} (apart from every
 * tenant name, `-` and `''` included) when it has none.
 *
 * @example
 * ```ts
 * tenantPartOf({ caller: 'a', method: 'GetTask', tenant: '-' }); // '-'
 * tenantPartOf({ caller: 'a', method: 'GetTask' });              // NO_TENANT_KEY
 * ```
 */
export function tenantPartOf(r: RequestIdentity): string {
  const tenant = r.tenant;
  return tenant === undefined ? NO_TENANT_KEY : tenant;
}

/** Table key of the `tenant` scope. */
const tenantKey = (r: RequestIdentity): string | undefined => tenantPartOf(r);
/** Table key of the `skill` scope. */
const skillKey = (r: RequestIdentity): string | undefined => r.skill || undefined;
/** Table key of the `method` scope. */
const methodKey = (r: RequestIdentity): string | undefined => r.method;
/** Table key of the `agent` scope. */
const agentKey = (): string | undefined => 'agent';
/** Table key of the `caller+method` scope: the pair, injectively (`pairKey`). */
const callerMethodKey = (r: RequestIdentity): string | undefined => pairKey(r.caller, r.method);
/** Table key of the `caller+skill` scope (none without a skill). */
const callerSkillKey = (r: RequestIdentity): string | undefined =>
  r.skill ? pairKey(r.caller, r.skill) : undefined;
/** Table key of the `tenant+method` scope. */
const tenantMethodKey = (r: RequestIdentity): string | undefined =>
  pairKey(tenantPartOf(r), r.method);

/**
 * Table keys of the built-in scopes: a part as it is, two parts by `pairKey` (never the subject,
 * whose `caller:a/skill:b` form is ambiguous), a missing tenant as {@link NO_TENANT_KEY}. Every
 * store uses these keys, so distinct identities have distinct keys in all of them. One function
 * per scope for the whole process, not one closure per compiled policy: the decision's `keyOf`
 * call stays monomorphic across policy sets (stores, tiers, `updatePolicies`).
 */
function builtinKey(scope: BuiltinScope): (r: RequestIdentity) => string | undefined {
  switch (scope) {
    case 'caller':
      return callerKey;
    case 'tenant':
      return tenantKey;
    case 'skill':
      return skillKey;
    case 'method':
      return methodKey;
    case 'agent':
      return agentKey;
    case 'caller+method':
      return callerMethodKey;
    case 'caller+skill':
      return callerSkillKey;
    case 'tenant+method':
      return tenantMethodKey;
  }
}

/** Validates a policy's `scope` (default `fallback`) and builds its subject and key functions. */
export function compileScope(label: string, scope: unknown, fallback: BuiltinScope): Scoped {
  const value = scope ?? fallback;
  if (typeof value === 'string') {
    if (!BUILTIN_SCOPE_SET.has(value)) {
      throw new PolicyError(
        label,
        'scope',
        `must be one of ${BUILTIN_SCOPES.join(', ')} or a custom scope, got ${describeValue(value)}`,
      );
    }
    const subjectOf = builtinSubject(value as BuiltinScope);
    return {
      scopeName: value,
      callerScoped: CALLER_SCOPES.has(value),
      subjectOf,
      keyOf: builtinKey(value as BuiltinScope),
    };
  }
  if (typeof value === 'object' && value !== null) {
    const custom = value as Partial<CustomScope>;
    if (typeof custom.name !== 'string' || !/^[a-z][a-zA-Z0-9_-]{0,62}$/.test(custom.name)) {
      throw new PolicyError(label, 'scope.name', 'must match [a-z][a-zA-Z0-9_-]{0,62}');
    }
    if (typeof custom.key !== 'function') {
      throw new PolicyError(
        label,
        'scope.key',
        'must be a function (request) => string | undefined',
      );
    }
    if (typeof custom.callerScoped !== 'boolean') {
      throw new PolicyError(label, 'scope.callerScoped', 'must be true or false');
    }
    const { key, name } = custom;
    return {
      scopeName: name,
      callerScoped: custom.callerScoped,
      subjectOf: (r) => {
        const k = key(r);
        return k === undefined ? undefined : `${name}:${k}`;
      },
      keyOf: (r) => {
        const k = key(r);
        return k === undefined ? undefined : wellFormedKey(k);
      },
    };
  }
  throw new PolicyError(
    label,
    'scope',
    `must be a string or a custom scope, got ${describeValue(value)}`,
  );
}

/** A scope whose key and subject are undefined (the policy does not apply) for exempt requests. */
export function withExemptions(label: string, exempt: unknown, scoped: Scoped): Scoped {
  if (exempt === undefined) return scoped;
  let isExempt: (r: RequestIdentity) => boolean;
  if (typeof exempt === 'function') {
    isExempt = exempt as (r: RequestIdentity) => boolean;
  } else if (Array.isArray(exempt) && exempt.every((c) => typeof c === 'string' && c !== '')) {
    const callers = new Set<string>(exempt as string[]);
    isExempt = (r) => callers.has(r.caller);
  } else {
    throw new PolicyError(
      label,
      'exempt',
      `must be a list of caller names or a function (request) => boolean, got ${describeValue(exempt)}`,
    );
  }
  const { keyOf, subjectOf } = scoped;
  return {
    ...scoped,
    keyOf: (r) => (isExempt(r) ? undefined : keyOf(r)),
    subjectOf: (r) => (isExempt(r) ? undefined : subjectOf(r)),
  };
}
