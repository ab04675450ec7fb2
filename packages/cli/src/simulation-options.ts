/**
 * @module simulation-options
 * The flags of `simulate` turned into a `SimulationScenario`, every mistake a one-line `CliError`.
 */

import {
  compilePolicies,
  type HoldOptions,
  type Policy,
  PolicyError,
  toA2AMethod,
} from 'a2a-ratelimit';
import { WORKED_EXAMPLE_POLICY } from 'a2a-ratelimit/simulation';
import { CliError } from './cli-error.js';
import { parseOptionalString, parsePositiveInteger, parsePositiveNumber } from './cli-options.js';
import { loadPolicyConfig } from './policy-config.js';
import { type ArrivalPattern, DEFAULT_SCENARIO, type SimulationScenario } from './simulation.js';
import { CLIENT_KINDS, type ClientKind } from './simulation-summary.js';

/**
 * The flags of `simulate` as cac hands them over (numbers may still be strings). Every field is
 * optional; the defaults reproduce the seed's worked example.
 */
export interface SimulateFlags {
  /** Callers, each with its own client. @defaultValue 1 */
  readonly callers?: unknown;
  /** Calls per caller. @defaultValue 30 */
  readonly calls?: unknown;
  /** Per-caller rate policy when there is no `config`: requests per window. @defaultValue 60 */
  readonly limit?: unknown;
  /** Window of that policy, s. @defaultValue 60 */
  readonly windowSeconds?: unknown;
  /** Burst of that policy. @defaultValue 10 (at most `limit`) */
  readonly burst?: unknown;
  /** A JSON or YAML policy file, as for `serve --config`. */
  readonly config?: unknown;
  /** A2A method of every call. @defaultValue 'SendMessage' */
  readonly method?: unknown;
  /** `burst` (all at once), `uniform:<seconds>` or `poisson:<calls per second per caller>`. @defaultValue 'burst' */
  readonly arrival?: unknown;
  /** Comma-separated client kinds, or `all`. @defaultValue 'all' */
  readonly clients?: unknown;
  /** Seed of arrivals, jitter and backoff. @defaultValue 1 */
  readonly seed?: unknown;
  /** Own delay of the `fixed` and `give-up-early` clients, ms. @defaultValue 1000 */
  readonly fixedDelayMs?: unknown;
  /** How long admitted calls keep concurrency leases, ms. @defaultValue 1000 */
  readonly taskMs?: unknown;
  /** Answers come when the task ends (blocking SendMessage). @defaultValue false */
  readonly answerAfterTask?: unknown;
}

/** Calls simulated at most in one run (callers × calls). */
const MAX_CALLS = 10_000_000;

/** An integer flag that may be 0 (a seed, a delay); undefined gives `fallback`. */
function nonNegativeInteger(value: unknown, flag: string, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  const n = typeof value === 'number' ? value : Number(String(value).trim());
  if (typeof value === 'boolean' || !Number.isSafeInteger(n) || n < 0 || n > max) {
    throw new CliError(`${flag} must be an integer from 0 to ${max}, got "${String(value)}"`);
  }
  return n;
}

/**
 * Parses `--arrival`: `burst` (also `at-once`), `uniform:<seconds>`, `poisson:<per-second>`.
 *
 * @example
 * ```ts
 * parseArrival('poisson:2'); // { kind: 'poisson', perSecond: 2 }
 * ```
 */
export function parseArrival(value: unknown): ArrivalPattern {
  if (value === undefined) return DEFAULT_SCENARIO.arrival;
  const text = String(value).trim();
  const [kind, parameter, extra] = text.split(':');
  if (extra === undefined) {
    if ((kind === 'burst' || kind === 'at-once') && parameter === undefined) {
      return { kind: 'burst' };
    }
    if (kind === 'uniform' && parameter !== undefined) {
      return {
        kind: 'uniform',
        overSeconds: parsePositiveNumber(parameter, 'uniform:<seconds>', 1),
      };
    }
    if (kind === 'poisson' && parameter !== undefined) {
      return {
        kind: 'poisson',
        perSecond: parsePositiveNumber(parameter, 'poisson:<calls per second>', 1),
      };
    }
  }
  throw new CliError(
    `--arrival must be burst, uniform:<seconds> or poisson:<calls per second per caller>, got "${text}"`,
  );
}

/**
 * Parses `--clients`: a comma-separated list of {@link CLIENT_KINDS}, or `all`; duplicates dropped.
 *
 * @example
 * ```ts
 * parseClientKinds('ours,naive'); // ['ours', 'naive']
 * ```
 */
export function parseClientKinds(value: unknown): ClientKind[] {
  if (value === undefined || value === 'all') return [...CLIENT_KINDS];
  const kinds: ClientKind[] = [];
  for (const raw of String(value).split(',')) {
    const name = raw.trim();
    if (name === '') continue;
    if (!(CLIENT_KINDS as readonly string[]).includes(name)) {
      throw new CliError(
        `--clients: unknown client kind "${name}" (known: ${CLIENT_KINDS.join(', ')}, all)`,
      );
    }
    if (!kinds.includes(name as ClientKind)) kinds.push(name as ClientKind);
  }
  if (kinds.length === 0) throw new CliError('--clients: name at least one client kind');
  return kinds;
}

/** The worked example's per-caller policy with the flags' numbers, for `method`. */
function perCallerPolicy(flags: SimulateFlags, method: Policy['methods']): Policy {
  const base = WORKED_EXAMPLE_POLICY;
  const limit = parsePositiveInteger(flags.limit, '--limit', base.limit);
  const policy: Policy = {
    ...base,
    ...(method === undefined ? {} : { methods: method }),
    limit,
    windowSeconds: parsePositiveInteger(
      flags.windowSeconds,
      '--window-seconds',
      base.windowSeconds,
    ),
    burst: parsePositiveInteger(flags.burst, '--burst', Math.min(base.burst ?? limit, limit)),
  };
  try {
    compilePolicies([policy]);
  } catch (error) {
    if (error instanceof PolicyError) throw new CliError(error.message, { cause: error });
    throw error;
  }
  return policy;
}

/**
 * Builds the scenario from the flags, reading `--config` if given. Throws a `CliError` for
 * anything the user must fix.
 *
 * @example
 * ```ts
 * const scenario = await scenarioFromFlags({ callers: 1000, clients: 'ours,naive', arrival: 'uniform:10' });
 * ```
 */
export async function scenarioFromFlags(flags: SimulateFlags): Promise<SimulationScenario> {
  const callers = parsePositiveInteger(flags.callers, '--callers', DEFAULT_SCENARIO.callers);
  const callsPerCaller = parsePositiveInteger(
    flags.calls,
    '--calls',
    DEFAULT_SCENARIO.callsPerCaller,
  );
  if (callers * callsPerCaller > MAX_CALLS) {
    throw new CliError(`--callers × --calls must be at most ${MAX_CALLS}`);
  }
  const method = flags.method === undefined ? DEFAULT_SCENARIO.method : toA2AMethod(flags.method);
  if (method === undefined) {
    throw new CliError(
      `--method must be an A2A method (e.g. SendMessage, GetTask), got "${String(flags.method)}"`,
    );
  }
  const configFile = parseOptionalString(flags.config, '--config');
  let policies: readonly Policy[];
  let holds: HoldOptions | undefined;
  if (configFile === undefined) {
    policies = [perCallerPolicy(flags, [method])];
  } else {
    ({ policies, holds } = await loadPolicyConfig(configFile));
  }
  return {
    callers,
    callsPerCaller,
    policies,
    ...(holds === undefined ? {} : { holds }),
    method,
    arrival: parseArrival(flags.arrival),
    clients: parseClientKinds(flags.clients),
    seed: nonNegativeInteger(flags.seed, '--seed', DEFAULT_SCENARIO.seed, 2 ** 32 - 1),
    fixedDelayMs: nonNegativeInteger(
      flags.fixedDelayMs,
      '--fixed-delay-ms',
      DEFAULT_SCENARIO.fixedDelayMs,
      3_600_000,
    ),
    taskMs: nonNegativeInteger(flags.taskMs, '--task-ms', DEFAULT_SCENARIO.taskMs, 3_600_000),
    answerAfterTask: flags.answerAfterTask === true,
  };
}
