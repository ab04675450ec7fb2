/**
 * @module gateway-config
 * The gateway's one config file (`--config`, JSON or YAML): `policies:` (with `holds:` and
 * `domain:`) exactly as `serve` reads them, plus `identity:` (handed to the identity resolver) and
 * `usage:` (reserved for usage charged from the agent's reports), each an object when present,
 * and `logRefusals:` (a boolean).
 * A file with anything else, or a bad section, is refused naming the file and field.
 */

import { CliError } from './cli-error.js';
import { type PolicyConfig, parsePolicyConfig, readConfigFile } from './policy-config.js';

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
  /** `usage:` as written (not acted on yet: usage from the agent's reports). */
  readonly usage?: Readonly<Record<string, unknown>>;
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

/**
 * Validates a gateway config value.
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
  const usageSection = section(usage, 'usage', source);
  return {
    ...parsePolicyConfig(rest, source),
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
