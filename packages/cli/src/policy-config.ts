/**
 * @module policy-config
 * Policy files (`serve --config`, JSON or YAML): validated with every problem named by its field,
 * compiled by `compilePolicies`.
 */

import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import {
  ALL_A2A_METHODS,
  BUILTIN_SCOPES,
  compilePolicies,
  type HoldOptions,
  type Policy,
  PolicyError,
} from 'a2a-ratelimit';
import { parse as parseYaml } from 'yaml';
import * as z from 'zod';
import { CliError } from './cli-error.js';

/**
 * A policy configuration file's content.
 *
 * @example
 * ```ts
 * const config: PolicyConfig = { policies: [{ name: 'per-caller', kind: 'rate', limit: 60, windowSeconds: 60, burst: 10 }] };
 * ```
 */
export interface PolicyConfig {
  readonly policies: readonly Policy[];
  /** Hold (reservation) options. */
  readonly holds?: HoldOptions;
  /** ErrorInfo domain (a `--domain` flag wins). */
  readonly domain?: string;
}

type IssueLike = { readonly input?: unknown };

/** An error message that says "is required" when the field is missing, `text` otherwise. */
function says(text: string): { error: (issue: IssueLike) => string } {
  return { error: (issue) => (issue.input === undefined ? 'is required' : text) };
}

const positiveInteger = z
  .int(says('must be a positive integer'))
  .positive(says('must be a positive integer'));
const nonNegativeInteger = z
  .int(says('must be an integer ≥ 0'))
  .min(0, says('must be an integer ≥ 0'));
const positiveNumber = z
  .number(says('must be a positive number'))
  .positive(says('must be a positive number'));
const name = z
  .string(says('must be a non-empty string'))
  .min(1, says('must be a non-empty string'));
const methods = z
  .array(
    z.enum(
      ALL_A2A_METHODS as [string, ...string[]],
      says('must be an A2A 1.0 method name, e.g. SendMessage or GetTask'),
    ),
    says('must be a list of A2A method names'),
  )
  .min(1, says('must list at least one method (leave it out for all methods)'));
const scope = z.enum(BUILTIN_SCOPES, says(`must be one of ${BUILTIN_SCOPES.join(', ')}`));
const rejectAs = z.enum(['quota', 'overload'], says('must be "quota" or "overload"'));
const description = z.string(says('must be a string')).optional();

const mode = z.enum(['enforce', 'shadow'], says('must be "enforce" or "shadow"')).optional();
const exempt = z.array(name, says('must be a list of caller names')).optional();
const tier = z.strictObject({
  limit: positiveInteger,
  windowSeconds: positiveInteger,
  burst: positiveInteger.optional(),
});
const ratePolicy = z.strictObject({
  name,
  kind: z.literal('rate'),
  scope: scope.optional(),
  methods: methods.optional(),
  description,
  // Required unless `tiers` (compilePolicies says which is missing).
  limit: positiveInteger.optional(),
  windowSeconds: positiveInteger.optional(),
  burst: positiveInteger.optional(),
  rejectAs: rejectAs.optional(),
  tiers: z
    .record(z.string(), tier, says('must map tier names to { limit, windowSeconds, burst }'))
    .optional(),
  defaultTier: name.optional(),
  unit: name.optional(),
  estimate: nonNegativeInteger.optional(),
  mode,
  exempt,
});
const concurrencyPolicy = z.strictObject({
  name,
  kind: z.literal('concurrency'),
  scope: scope.optional(),
  methods: methods.optional(),
  description,
  max: positiveInteger,
  leaseTtlSeconds: positiveNumber.optional(),
  initialHoldEstimateMs: positiveNumber.optional(),
  holdUntil: z.enum(['task', 'response']).optional(),
  rejectAs: rejectAs.optional(),
  mode,
  exempt,
});
const overloadPolicy = z.strictObject({
  name,
  kind: z.literal('overload'),
  scope: z.literal('agent', says('of an overload policy is always "agent"')).optional(),
  methods: methods.optional(),
  description,
  maxInFlight: positiveInteger.optional(),
  maxInFlightPerCaller: z.union([positiveInteger, z.literal(false)]).optional(),
  maxEventLoopDelayMs: positiveNumber.optional(),
  leaseTtlSeconds: positiveNumber.optional(),
  initialHoldEstimateMs: positiveNumber.optional(),
  mode,
  exempt,
});

/**
 * The zod schema of a policy configuration file.
 *
 * @example
 * ```ts
 * POLICY_CONFIG_SCHEMA.safeParse({ policies: [] }).success; // false: at least one policy
 * ```
 */
export const POLICY_CONFIG_SCHEMA = z.strictObject(
  {
    domain: z.string(says('must be a domain name, e.g. agents.example.com')).min(1).optional(),
    holds: z
      .strictObject(
        {
          maxNoShows: nonNegativeInteger.optional(),
          maxHoldsPerKey: nonNegativeInteger.optional(),
          minGraceMs: positiveNumber.optional(),
          graceFraction: z
            .number(says('must be a number between 0 and 1'))
            .min(0, says('must be a number between 0 and 1'))
            .max(1, says('must be a number between 0 and 1'))
            .optional(),
        },
        says('must be an object'),
      )
      .optional(),
    policies: z
      .array(
        z.discriminatedUnion('kind', [ratePolicy, concurrencyPolicy, overloadPolicy], {
          error: (issue: IssueLike & { code?: string }) =>
            issue.code === 'invalid_union' && issue.input === undefined
              ? 'is required: "rate", "concurrency" or "overload"'
              : 'must be "rate", "concurrency" or "overload"',
        }),
        says('must be a list of policies'),
      )
      .min(1, says('must list at least one policy')),
  },
  says('must be an object with a "policies" list'),
);

/**
 * A field path as a user reads it: `policies[0].limit`.
 *
 * @example
 * ```ts
 * formatFieldPath(['policies', 0, 'limit']); // 'policies[0].limit'
 * ```
 */
export function formatFieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const at = formatFieldPath(issue.path);
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => `"${k}"`).join(', ');
    return `${at === '' ? '' : `${at}: `}unknown field${issue.keys.length > 1 ? 's' : ''} ${keys}`;
  }
  if (issue.code === 'invalid_union' && at.endsWith('kind') === false && at !== '') {
    return `${at}.kind: ${issue.message}`;
  }
  return at === '' ? issue.message : `${at}: ${issue.message}`;
}

/** `policies[i].limit: is required` (and windowSeconds) for rate policies without `tiers`. */
function missingRateFields(value: unknown): string[] {
  const policies = (value as { policies?: unknown } | null)?.policies;
  if (!Array.isArray(policies)) return [];
  const missing: string[] = [];
  policies.forEach((raw: unknown, i) => {
    const p = raw as Record<string, unknown> | null;
    if (p === null || typeof p !== 'object' || p.kind !== 'rate' || p.tiers !== undefined) return;
    for (const field of ['limit', 'windowSeconds']) {
      if (p[field] === undefined) missing.push(`policies[${i}].${field}: is required`);
    }
  });
  return missing;
}

/**
 * Validates a parsed configuration value and compiles its policies. Throws a {@link CliError}
 * whose one-line message starts with `source` and names every bad field (unknown ones too).
 *
 * @example
 * ```ts
 * parsePolicyConfig({ policies: [{ name: 'p', kind: 'rate', limit: 0, windowSeconds: 60 }] }, 'policies.yaml');
 * // throws CliError: policies.yaml: policies[0].limit: must be a positive integer
 * ```
 */
export function parsePolicyConfig(value: unknown, source: string): PolicyConfig {
  const result = POLICY_CONFIG_SCHEMA.safeParse(value);
  if (!result.success) {
    // Every problem, unknown fields included, so one edit fixes the file. (A rate policy's
    // `limit` and `windowSeconds` are required only without `tiers`: zod checks that only on
    // an object that passed, so it is checked here too, where other problems hide it.)
    const problems = [
      ...new Set([...missingRateFields(value), ...result.error.issues.map(describeIssue)]),
    ];
    throw new CliError(
      problems.length <= 1
        ? `${source}: ${problems[0] ?? 'invalid'}`
        : `${source}: ${problems.length} problems: ${problems.join('; ')}`,
    );
  }
  const data = result.data;
  // The schema mirrors the Policy type; exactOptionalPropertyTypes needs the undefineds gone.
  const policies = data.policies.map(
    (p) =>
      Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined)) as unknown as Policy,
  );
  const holds =
    data.holds === undefined
      ? undefined
      : (Object.fromEntries(
          Object.entries(data.holds).filter(([, v]) => v !== undefined),
        ) as HoldOptions);
  try {
    compilePolicies(policies, holds);
  } catch (error) {
    if (error instanceof PolicyError)
      throw new CliError(`${source}: ${error.message}`, { cause: error });
    throw error;
  }
  return {
    policies,
    ...(holds === undefined ? {} : { holds }),
    ...(data.domain === undefined ? {} : { domain: data.domain }),
  };
}

/**
 * Reads a JSON or YAML config file (by extension; otherwise JSON, then YAML) into its value,
 * unvalidated. Unreadable or unparsable files are {@link CliError}s naming the file.
 *
 * @example
 * ```ts
 * const value = await readConfigFile('gateway.yaml');
 * ```
 */
export async function readConfigFile(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CliError(
      `cannot read config file ${file}: ${code === 'ENOENT' ? 'no such file' : ((error as Error).message ?? code)}`,
      { cause: error },
    );
  }
  const ext = extname(file).toLowerCase();
  try {
    if (ext === '.json') return JSON.parse(text);
    if (ext === '.yaml' || ext === '.yml') return parseYaml(text);
    try {
      return JSON.parse(text);
    } catch {
      return parseYaml(text);
    }
  } catch (error) {
    throw new CliError(
      `${file}: not valid ${ext === '.json' ? 'JSON' : ext === '.yaml' || ext === '.yml' ? 'YAML' : 'JSON or YAML'}: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

/**
 * Reads a JSON or YAML policy file ({@link readConfigFile}) and validates it with
 * {@link parsePolicyConfig}.
 *
 * @example
 * ```ts
 * const config = await loadPolicyConfig('policies.yaml');
 * const limiter = createLimiter({ policies: config.policies, domain: 'agents.example.com' });
 * ```
 */
export async function loadPolicyConfig(file: string): Promise<PolicyConfig> {
  return parsePolicyConfig(await readConfigFile(file), file);
}
