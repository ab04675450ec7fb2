/**
 * @module gateway-config
 * The gateway's config file: `policies:` as `serve` reads them, plus `identity:`, `usage:` and
 * `logRefusals:`.
 */

import { compilePolicies, type Policy, PolicyError } from 'a2a-ratelimit';
import * as z from 'zod';
import { CliError } from './cli-error.js';
import {
  formatFieldPath,
  type PolicyConfig,
  parsePolicyConfig,
  readConfigFile,
} from './policy-config.js';

/** `usage:` of a gateway config. */
export interface GatewayUsageConfig {
  /** Dotted path of the report in a task's final Task / status update, e.g. `metadata.usage.totalTokens`. */
  readonly path: string;
  /** The usage policies charged (rate policies with `unit`), added to `policies:`. */
  readonly policies: readonly Policy[];
}

const USAGE_SCHEMA = z.strictObject(
  {
    path: z
      .string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') })
      .regex(/^[^.]+(\.[^.]+)*$/, 'must be dotted field names, e.g. metadata.usage.totalTokens'),
    policies: z.array(z.unknown(), {
      error: (i) => (i.input === undefined ? 'is required' : 'must be a list of usage policies'),
    }),
  },
  { error: () => 'must be an object with path: and policies:' },
);

/**
 * A parsed gateway config.
 *
 * @example
 * ```ts
 * const config: GatewayConfig = { policies: [], identity: { apiKeys: [] } };
 * ```
 */
export interface GatewayConfig extends PolicyConfig {
  /** `identity:` as written (the identity resolver validates its fields). */
  readonly identity?: Readonly<Record<string, unknown>>;
  /** `usage:`: usage charged from the agent's reports. */
  readonly usage?: GatewayUsageConfig;
  /** `logRefusals: true`: one line per refused request (as `--log-refusals`). */
  readonly logRefusals?: boolean;
}

function section(
  value: unknown,
  name: string,
  source: string,
): Readonly<Record<string, unknown>> | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new CliError(`${source}: ${name}: must be an object`);
  }
  return value as Record<string, unknown>;
}

/** `usage:` validated: its path, and its policies as `serve` reads them, each with `unit`. */
function parseUsage(value: unknown, source: string, config: PolicyConfig): GatewayUsageConfig {
  const result = USAGE_SCHEMA.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0];
    const at = formatFieldPath(['usage', ...(issue?.path ?? [])]);
    throw new CliError(`${source}: ${at}: ${issue?.message ?? 'invalid'}`);
  }
  const { policies } = parsePolicyConfig({ policies: result.data.policies }, `${source}: usage`);
  policies.forEach((p, i) => {
    if (p.kind !== 'rate' || p.unit === undefined) {
      throw new CliError(
        `${source}: usage.policies[${i}]: must be a usage policy: kind: rate with unit: (e.g. tokens)`,
      );
    }
  });
  try {
    compilePolicies([...config.policies, ...policies], config.holds);
  } catch (error) {
    if (error instanceof PolicyError) {
      throw new CliError(`${source}: ${error.message}`, { cause: error });
    }
    throw error;
  }
  return { path: result.data.path, policies };
}

/**
 * Every policy a gateway config puts in force: `policies:` then `usage.policies`.
 *
 * @example
 * ```ts
 * createLimiter({ policies: gatewayPolicies(config), domain });
 * ```
 */
export function gatewayPolicies(config: GatewayConfig): readonly Policy[] {
  return config.usage === undefined
    ? config.policies
    : [...config.policies, ...config.usage.policies];
}

/**
 * Validates a gateway config value: `policies:` (with `holds:` and `domain:`) as `serve` reads
 * them, `identity:`, `usage:` (`{ path, policies }`, usage policies only) and `logRefusals:`. Any
 * other key, or a bad section, is refused naming the source and the field.
 *
 * @example
 * ```ts
 * parseGatewayConfig({ policies: [], identity: 'x' }, 'gw.yaml'); // throws: gw.yaml: identity: must be an object
 * ```
 */
export function parseGatewayConfig(value: unknown, source: string): GatewayConfig {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new CliError(`${source}: must be an object with policies:`);
  }
  const { identity, usage, logRefusals, ...rest } = value as Record<string, unknown>;
  if (logRefusals !== undefined && typeof logRefusals !== 'boolean') {
    throw new CliError(`${source}: logRefusals: must be true or false`);
  }
  const identitySection = section(identity, 'identity', source);
  const policyConfig = parsePolicyConfig(rest, source);
  const usageSection = usage === undefined ? undefined : parseUsage(usage, source, policyConfig);
  return {
    ...policyConfig,
    ...(identitySection === undefined ? {} : { identity: identitySection }),
    ...(usageSection === undefined ? {} : { usage: usageSection }),
    ...(logRefusals === undefined ? {} : { logRefusals }),
  };
}

/**
 * Reads and validates a gateway config file.
 *
 * @example
 * ```ts
 * const config = await loadGatewayConfig('gateway.yaml');
 * ```
 */
export async function loadGatewayConfig(file: string): Promise<GatewayConfig> {
  return parseGatewayConfig(await readConfigFile(file), file);
}
