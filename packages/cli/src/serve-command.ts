/**
 * @module serve-command
 * `a2a-ratelimit serve`: the example research agent as a long-lived process, with `--config`
 * reloads and optional Redis.
 */

import { WORKED_EXAMPLE_POLICY } from 'a2a-ratelimit/simulation';
import type { CAC } from 'cac';
import { CliError } from './cli-error.js';
import {
  parseHttpUrl,
  parseOptionalString,
  parsePort,
  parsePositiveNumber,
} from './cli-options.js';
import { describePolicy } from './describe-policy.js';
import { METRICS_NEED_PROM_CLIENT } from './optional-metrics.js';
import { loadPolicyConfig } from './policy-config.js';
import { type PolicyFileReloader, watchPolicyFile } from './policy-file-reloader.js';
import { connectRedis, parseFailureMode, type RedisFailureMode } from './redis-connection.js';
import type { ResearchAgent } from './research-agent.js';
import { untilSignal } from './until-signal.js';

/**
 * Parsed options of `serve`.
 */
export interface ServeOptions {
  readonly host: string;
  /** HTTP port; 0 = any free port. */
  readonly port: number;
  /** gRPC port; 0 = any free port. */
  readonly grpcPort: number;
  readonly domain?: string;
  /** Policy file (JSON or YAML). */
  readonly config?: string;
  /** Redis URL; limits are shared through it. */
  readonly redis?: string;
  readonly redisOnError: RedisFailureMode;
  /** Prefix of every Redis key (`--redis-prefix`); default the store's `a2arl:`. */
  readonly redisPrefix?: string;
  /**
   * Longest wait for one Redis call before `redisOnError` answers, ms (`--redis-timeout`);
   * default the store's 50.
   */
  readonly redisTimeoutMs?: number;
  /** JSON-RPC rejections with HTTP 429 / 503 instead of 200. */
  readonly mirrorHttpStatus: boolean;
  /** Base URL to advertise in the agent card (e.g. the gateway's). */
  readonly publicUrl?: string;
  /** gRPC `host:port` to advertise in the agent card. */
  readonly publicGrpcTarget?: string;
  /** Seconds each task stays WORKING before it completes (`--task-seconds`); default 0. */
  readonly taskSeconds: number;
}

/**
 * Waits `ms` on a timer that does not keep the process alive: a task still working when `serve`
 * stops does not hold up the exit.
 *
 * @example
 * ```ts
 * await unrefSleep(5_000);
 * ```
 */
export function unrefSleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * Starts the agent as `serve` does and returns it (without waiting for a signal).
 *
 * @example
 * ```ts
 * const agent = await startServe({ host: '127.0.0.1', port: 0, grpcPort: 0, mirrorHttpStatus: false, redisOnError: 'insurance' });
 * ```
 */
export async function startServe(options: ServeOptions): Promise<ResearchAgent> {
  const config = options.config === undefined ? undefined : await loadPolicyConfig(options.config);
  const policies = config?.policies ?? [WORKED_EXAMPLE_POLICY];
  const holds = config?.holds;
  const domain = options.domain ?? config?.domain;
  const store =
    options.redis === undefined
      ? undefined
      : await connectRedis(
          options.redis,
          policies,
          holds,
          options.redisOnError,
          options.redisPrefix,
          options.redisTimeoutMs,
        );
  try {
    // Loaded here, so `--help` and other commands need none of the agent's peers.
    const { startResearchAgent } = await import('./research-agent.js');
    return await startResearchAgent({
      host: options.host,
      port: options.port,
      grpcPort: options.grpcPort,
      policies,
      ...(holds === undefined ? {} : { holds }),
      ...(store === undefined ? {} : { store }),
      ...(domain === undefined ? {} : { domain }),
      ...(options.publicUrl === undefined ? {} : { publicUrl: options.publicUrl }),
      ...(options.publicGrpcTarget === undefined
        ? {}
        : { publicGrpcTarget: options.publicGrpcTarget }),
      mirrorHttpStatus: options.mirrorHttpStatus,
      ...(options.taskSeconds > 0
        ? { task: { durationMs: options.taskSeconds * 1000, sleep: unrefSleep } }
        : {}),
    });
  } catch (error) {
    if (error instanceof RangeError) throw new CliError(error.message, { cause: error });
    throw error;
  }
}

/**
 * The ready banner: every URL, the policies, the store and how callers are identified.
 *
 * @example
 * ```ts
 * process.stdout.write(readyBanner(agent, options));
 * ```
 */
export function readyBanner(agent: ResearchAgent, options: ServeOptions): string {
  const lines = [
    'a2a-ratelimit serve: research agent ready',
    `  agent card  ${agent.cardUrl}`,
    `  JSON-RPC    ${agent.jsonRpcUrl}${options.mirrorHttpStatus ? ' (rejections mirrored as HTTP 429/503)' : ''}`,
    `  REST        ${agent.restUrl}`,
    `  gRPC        ${agent.grpcTarget}`,
    `  metrics     ${agent.metricsUrl ?? `(${METRICS_NEED_PROM_CLIENT})`}`,
    `  domain      ${agent.limiter.domain}`,
    ...agent.limiter.policySet.policies.map(
      (p, i) => `  ${i === 0 ? 'policies   ' : '           '} ${describePolicy(p)}`,
    ),
    `  tasks       ${options.taskSeconds > 0 ? `each stays WORKING ${options.taskSeconds} s, then completes (send with returnImmediately to get it back at once)` : 'complete at once'}`,
    `  store       ${options.redis === undefined ? 'memory (this process)' : `redis ${options.redis}, keys ${options.redisPrefix ?? 'a2arl:'}* (when Redis fails: ${options.redisOnError})`}`,
    '  callers     Authorization: Bearer <caller>[@<tier>] (demo authentication: the token is the name, @<tier> its tier); no token = anonymous, keyed by client address',
    'Press Ctrl-C to stop.',
  ];
  return `${lines.join('\n')}\n`;
}

function parseTaskSeconds(value: unknown): number {
  if (value === undefined) return 0;
  const n = Number(String(value).trim());
  if (typeof value === 'boolean' || String(value).trim() === '' || !Number.isFinite(n) || n < 0) {
    throw new CliError(`--task-seconds must be a number of seconds ≥ 0, got "${String(value)}"`);
  }
  return n;
}

/**
 * Parses `serve`'s flags.
 *
 * @example
 * ```ts
 * parseServeOptions({ port: '0', grpcPort: '0' }).port; // 0
 * ```
 */
export function parseServeOptions(flags: Record<string, unknown>): ServeOptions {
  const domain = parseOptionalString(flags.domain, '--domain');
  const config = parseOptionalString(flags.config, '--config');
  const redis = parseOptionalString(flags.redis, '--redis');
  const publicUrl =
    flags.publicUrl === undefined ? undefined : parseHttpUrl(flags.publicUrl, '--public-url').href;
  const publicGrpcTarget = parseOptionalString(flags.publicGrpcTarget, '--public-grpc-target');
  if (redis !== undefined && !/^rediss?:\/\//.test(redis)) {
    throw new CliError(`--redis must be a redis:// or rediss:// URL, got "${redis}"`);
  }
  const redisPrefix = parseOptionalString(flags.redisPrefix, '--redis-prefix');
  if (redisPrefix !== undefined && redis === undefined) {
    throw new CliError('--redis-prefix needs --redis <url>');
  }
  if (redisPrefix !== undefined && /[{}]/.test(redisPrefix)) {
    throw new CliError(`--redis-prefix must not contain { or }, got "${redisPrefix}"`);
  }
  const redisTimeoutMs =
    flags.redisTimeout === undefined
      ? undefined
      : parsePositiveNumber(flags.redisTimeout, '--redis-timeout', 50);
  if (redisTimeoutMs !== undefined && redis === undefined) {
    throw new CliError('--redis-timeout needs --redis <url>');
  }
  return {
    host: parseOptionalString(flags.host, '--host') ?? '127.0.0.1',
    port: parsePort(flags.port, '--port', 8080),
    grpcPort: parsePort(flags.grpcPort, '--grpc-port', 50051),
    mirrorHttpStatus: flags.mirrorHttpStatus === true,
    taskSeconds: parseTaskSeconds(flags.taskSeconds),
    redisOnError: parseFailureMode(flags.redisOnError),
    ...(domain === undefined ? {} : { domain }),
    ...(config === undefined ? {} : { config }),
    ...(redis === undefined ? {} : { redis }),
    ...(redisPrefix === undefined ? {} : { redisPrefix }),
    ...(redisTimeoutMs === undefined ? {} : { redisTimeoutMs }),
    ...(publicUrl === undefined ? {} : { publicUrl }),
    ...(publicGrpcTarget === undefined ? {} : { publicGrpcTarget }),
  };
}

/**
 * Reloads `--config` into the running agent on SIGHUP and whenever the file changes (undefined
 * without `--config`): the new policies are validated, then swapped in with
 * `limiter.updatePolicies` (callers keep their state; with `--redis` the other replicas follow).
 * One line per reload goes to `log`; a file that cannot be read, parsed or validated keeps the
 * running set and its line names the file and the field. `holds` and `domain` are read at start
 * only.
 *
 * @example
 * ```ts
 * const reloader = reloadServeConfig(agent, options); // then: kill -HUP <pid>, or edit the file
 * ```
 */
export function reloadServeConfig(
  agent: ResearchAgent,
  options: ServeOptions,
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): PolicyFileReloader | undefined {
  if (options.config === undefined) return undefined;
  const limiter = agent.limiter;
  return watchPolicyFile({
    file: options.config,
    log,
    // A file that failed to parse or validate stays refused until it changes; anything else (a
    // store that could not publish the set) is tried again on the next change event.
    isTransient: (error) => !(error instanceof CliError),
    apply: async (file) => {
      const config = await loadPolicyConfig(file);
      await limiter.updatePolicies(config.policies);
      const names = limiter.policySet.policies.map((p) => p.name);
      return `version ${limiter.policySetVersion}, ${names.length} ${names.length === 1 ? 'policy' : 'policies'} (${names.join(', ')})`;
    },
  });
}

/**
 * Registers `serve` on the CLI.
 *
 * @example
 * ```ts
 * registerServeCommand(cac('a2a-ratelimit'));
 * ```
 */
export function registerServeCommand(cli: CAC): void {
  cli
    .command(
      'serve',
      'Run the example research agent (JSON-RPC, REST and gRPC) with rate limits, until Ctrl-C',
    )
    .option('--host <host>', 'Interface to listen on (default: 127.0.0.1)')
    .option(
      '--port <port>',
      'HTTP port: JSON-RPC at /a2a/jsonrpc, REST at /a2a/rest, card at /.well-known/agent-card.json, metrics at /metrics; 0 = any (default: 8080)',
    )
    .option('--grpc-port <port>', 'gRPC port; 0 = any (default: 50051)')
    .option(
      '--domain <domain>',
      'ErrorInfo domain of rejections (default: the host the card advertises)',
    )
    .option(
      '--config <file>',
      'Policy set, JSON or YAML: {"policies": [...]}; reloaded on SIGHUP and when the file changes (default: per-caller 60 SendMessage/min, burst 10)',
    )
    .option(
      '--redis <url>',
      'Share limits with other replicas through Redis, e.g. redis://127.0.0.1:6379',
    )
    .option(
      '--redis-prefix <prefix>',
      'Prefix of every Redis key, e.g. "myagent:" to share one Redis between agents (default: a2arl:)',
    )
    .option(
      '--redis-on-error <mode>',
      'When Redis fails: fail-open, fail-closed or insurance (default: insurance)',
    )
    .option(
      '--redis-timeout <ms>',
      'Longest wait for one Redis call before --redis-on-error answers, ms (default: 50)',
    )
    .option('--mirror-http-status', 'JSON-RPC rejections travel with HTTP 429/503 instead of 200')
    .option(
      '--task-seconds <n>',
      'Each task stays WORKING n seconds before it completes, so concurrency and overload limits have something to count (default: 0)',
    )
    .option('--public-url <url>', 'Base URL to advertise in the agent card (e.g. your gateway)')
    .option('--public-grpc-target <host:port>', 'gRPC address to advertise in the agent card')
    .usage(
      'serve [options]\n\n' +
        "Demo authentication, on every binding: the bearer token IS the caller's name.\n" +
        '  Authorization: Bearer orchestrator-7   (HTTP header, or gRPC "authorization" metadata)\n' +
        'makes the caller "orchestrator-7". No token means an anonymous caller, limited by its\n' +
        "client address (behind a gateway: the gateway's address). Do not expose this to the internet.",
    )
    .example('a2a-ratelimit serve --port 8080 --grpc-port 50051')
    .example('a2a-ratelimit serve --port 0 --grpc-port 0 --config policies.yaml')
    .example('a2a-ratelimit serve --config concurrency.yaml --task-seconds 30')
    .action(async (flags: Record<string, unknown>) => {
      const options = parseServeOptions(flags);
      const agent = await startServe(options);
      process.stdout.write(readyBanner(agent, options));
      const reloader = reloadServeConfig(agent, options);
      const signal = await untilSignal();
      process.stdout.write(`${signal}: stopping…\n`);
      reloader?.close();
      await agent.close();
      process.stdout.write('stopped\n');
    });
}
