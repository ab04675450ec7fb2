/**
 * @module gateway-command
 * `a2a-ratelimit gateway --upstream URL`: the gateway engine as a command (flags, listeners,
 * reload, drain).
 */

import { createServer, type Server } from 'node:http';
import type { AddressInfo, Server as NetServer } from 'node:net';
import type { Policy, Store } from 'a2a-ratelimit';
import type { Limiter } from 'a2a-ratelimit/server';
import { WORKED_EXAMPLE_POLICY } from 'a2a-ratelimit/simulation';
import type { Gateway } from 'a2a-ratelimit-gateway';
import type { CAC } from 'cac';
import { CliError } from './cli-error.js';
import {
  parseHttpUrl,
  parseOptionalString,
  parsePort,
  parsePositiveNumber,
} from './cli-options.js';
import { describePolicy } from './describe-policy.js';
import { adminHandler } from './gateway-admin.js';
import { type GatewayConfig, gatewayPolicies, loadGatewayConfig } from './gateway-config.js';
import {
  advertisedGrpcTarget,
  type GrpcFlags,
  listenGrpc,
  parseGrpcFlags,
} from './gateway-grpc-listener.js';
import { type GatewayIdentityHolder, identityFromConfig } from './gateway-identity.js';
import { createTlsServer, parseTlsFlags, reloadTlsOnSignal, type TlsFiles } from './gateway-tls.js';
import { METRICS_NEED_PROM_CLIENT, metricsIfInstalled } from './optional-metrics.js';
import { type PolicyFileReloader, watchPolicyFile } from './policy-file-reloader.js';
import { connectRedis, parseFailureMode, type RedisFailureMode } from './redis-connection.js';
import { refusalLine } from './refusal-line.js';
import { untilSignal } from './until-signal.js';

/** Parsed options of `gateway`. */
export interface GatewayCommandOptions extends GrpcFlags {
  readonly upstream: string;
  readonly host: string;
  readonly port: number;
  /** Admin port (`/metrics`, `/healthz`, `/readyz`); undefined: none. */
  readonly adminPort?: number;
  readonly config?: string;
  readonly publicUrl?: string;
  readonly domain?: string;
  readonly mirrorHttpStatus: boolean;
  readonly redis?: string;
  readonly redisOnError: RedisFailureMode;
  readonly redisPrefix?: string;
  /** How long SIGINT / SIGTERM wait for in-flight requests and streams, seconds. */
  readonly drainSeconds: number;
  /** HTTPS on the listener with this certificate and key (re-read on SIGHUP); undefined: HTTP. */
  readonly tls?: TlsFiles;
  /** One line per refused request on the log (stderr), whatever the config says. */
  readonly logRefusals: boolean;
}

/**
 * Parses `gateway`'s flags.
 *
 * @example
 * ```ts
 * parseGatewayOptions({ upstream: 'http://127.0.0.1:9000' }).port; // 8080
 * ```
 */
export function parseGatewayOptions(flags: Record<string, unknown>): GatewayCommandOptions {
  if (flags.upstream === undefined) throw new CliError('--upstream <url> is required');
  const upstream = parseHttpUrl(flags.upstream, '--upstream').href;
  const config = parseOptionalString(flags.config, '--config');
  const domain = parseOptionalString(flags.domain, '--domain');
  const redis = parseOptionalString(flags.redis, '--redis');
  if (redis !== undefined && !/^rediss?:\/\//.test(redis)) {
    throw new CliError(`--redis must be a redis:// or rediss:// URL, got "${redis}"`);
  }
  const redisPrefix = parseOptionalString(flags.redisPrefix, '--redis-prefix');
  if (redisPrefix !== undefined && redis === undefined) {
    throw new CliError('--redis-prefix needs --redis <url>');
  }
  const publicUrl =
    flags.publicUrl === undefined ? undefined : parseHttpUrl(flags.publicUrl, '--public-url').href;
  const adminPort =
    flags.adminPort === undefined ? undefined : parsePort(flags.adminPort, '--admin-port', 0);
  const tls = parseTlsFlags(flags);
  const grpc = parseGrpcFlags(flags);
  return {
    upstream,
    host: parseOptionalString(flags.host, '--host') ?? '127.0.0.1',
    port: parsePort(flags.port, '--port', 8080),
    mirrorHttpStatus: flags.mirrorHttpStatus === true,
    redisOnError: parseFailureMode(flags.redisOnError),
    drainSeconds: parsePositiveNumber(flags.drainSeconds, '--drain-seconds', 10),
    logRefusals: flags.logRefusals === true,
    ...(tls === undefined ? {} : { tls }),
    ...(adminPort === undefined ? {} : { adminPort }),
    ...(config === undefined ? {} : { config }),
    ...(domain === undefined ? {} : { domain }),
    ...(redis === undefined ? {} : { redis }),
    ...(redisPrefix === undefined ? {} : { redisPrefix }),
    ...(publicUrl === undefined ? {} : { publicUrl }),
    ...grpc,
  };
}

/**
 * The engine's `usage` option: the path in force, and ignored reports counted in
 * `a2a_ratelimit_gateway_usage_reports_ignored_total` when metrics are on.
 */
async function usageOption(
  path: () => string,
  registry: import('prom-client').Registry | undefined,
): Promise<{ path: () => string; onIgnoredReport?: () => void }> {
  if (registry === undefined) return { path };
  const { Counter } = await import('prom-client');
  const ignored = new Counter({
    name: 'a2a_ratelimit_gateway_usage_reports_ignored_total',
    help: 'Usage reports of the agent that were not a finite number ≥ 0 (ignored)',
    registers: [registry],
  });
  return { path, onIgnoredReport: () => ignored.inc() };
}

/** A started gateway: its servers, engine and limiter. */
export interface RunningGateway {
  readonly url: string;
  readonly adminUrl: string | undefined;
  /** The gRPC listener's `host:port` (`--grpc-port`), if any. */
  readonly grpcTarget?: string | undefined;
  readonly gateway: Gateway;
  readonly limiter: Limiter;
  /** The usage path in force (`usage.path`), swapped by a reload. */
  readonly usage: { path: string };
  /** The identity resolver in force (`identity:`), swapped by a reload. */
  readonly identity: GatewayIdentityHolder;
  /** Turns the refusal log on or off as a reloaded config says (`--log-refusals` keeps it on). */
  setLogRefusals(fromConfig: boolean): void;
  /** Stops listening, drains up to `deadlineMs`, closes everything. */
  stop(deadlineMs: number): Promise<{ readonly drained: boolean }>;
}

function listen(server: NetServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (error) =>
      reject(new CliError(`cannot listen on ${host}:${port}: ${error.message}`)),
    );
    server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
  });
}

function urlOf(host: string, port: number, scheme = 'http'): string {
  return `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * Starts the gateway as the command does (without waiting for a signal).
 *
 * @example
 * ```ts
 * const running = await startGateway(parseGatewayOptions({ upstream: 'http://127.0.0.1:9000', port: '0' }));
 * ```
 */
export async function startGateway(
  options: GatewayCommandOptions,
  config: GatewayConfig | undefined,
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<RunningGateway> {
  const policies: readonly Policy[] =
    config === undefined ? [WORKED_EXAMPLE_POLICY] : gatewayPolicies(config);
  const identity = await identityFromConfig(config?.identity, options.config ?? '');
  const domain =
    options.domain ??
    config?.domain ??
    new URL(options.publicUrl ?? urlOf(options.host, options.port)).hostname;
  const store: Store | undefined =
    options.redis === undefined
      ? undefined
      : await connectRedis(
          options.redis,
          policies,
          config?.holds,
          options.redisOnError,
          options.redisPrefix,
        );
  // Loaded here, so `--help` and the other commands need none of the gateway's peers.
  const { createLimiter } = await import('a2a-ratelimit/server');
  const { createGateway } = await import('a2a-ratelimit-gateway');
  const metrics = await metricsIfInstalled();
  const limiter = createLimiter({
    ...(store === undefined ? { policies } : { store }),
    ...(store === undefined && config?.holds !== undefined ? { holds: config.holds } : {}),
    domain,
    ...(metrics === undefined ? {} : { observer: metrics.observer }),
  });
  const tls = options.tls;
  const tlsServer = tls === undefined ? undefined : await createTlsServer(tls);
  const server = tlsServer ?? createServer();
  const stopTlsReload =
    tls === undefined || tlsServer === undefined
      ? undefined
      : reloadTlsOnSignal(tlsServer, tls, log);
  let logRefusals = options.logRefusals || config?.logRefusals === true;
  const gatewayMetrics =
    metrics === undefined
      ? undefined
      : (await import('./gateway-metrics.js')).createGatewayMetrics(metrics.registry);
  const usage = { path: config?.usage?.path ?? '' };
  let publicUrl = options.publicUrl ?? '';
  let grpcPublic = options.publicGrpcTarget ?? '';
  const gateway = createGateway({
    upstream: options.upstream,
    limiter,
    publicUrl: () => publicUrl,
    mirrorHttpStatus: options.mirrorHttpStatus,
    log,
    identify: identity.identify,
    onRefusal: (refusal) => {
      if (logRefusals) log(refusalLine(refusal, new Date(limiter.clock.nowMs())));
    },
    ...(gatewayMetrics === undefined ? {} : { onUpstream: gatewayMetrics.onUpstream }),
    ...(config?.usage === undefined
      ? {}
      : { usage: await usageOption(() => usage.path, metrics?.registry) }),
    ...(options.grpcPort === undefined ? {} : { grpcPublicTarget: () => grpcPublic }),
    ...(options.upstreamGrpc === undefined ? {} : { upstreamGrpc: options.upstreamGrpc }),
  });
  server.on('request', gateway.handler);
  const port = await listen(server, options.port, options.host);
  const url = urlOf(options.host, port, options.tls === undefined ? 'http' : 'https');
  if (publicUrl === '') publicUrl = url;
  // gRPC: an HTTP/2 (h2c) listener relaying lf.a2a.v1.A2AService calls.
  const grpc =
    options.grpcPort === undefined
      ? undefined
      : await listenGrpc(gateway, options.host, options.grpcPort);
  if (grpc !== undefined && grpcPublic === '') {
    grpcPublic = advertisedGrpcTarget(undefined, options.publicUrl, grpc.target);
  }
  await gateway.ready();
  let admin: Server | undefined;
  let adminUrl: string | undefined;
  if (options.adminPort !== undefined) {
    admin = createServer(adminHandler(gateway, metrics?.registry));
    adminUrl = urlOf(options.host, await listen(admin, options.adminPort, options.host));
  }
  return {
    url,
    adminUrl,
    grpcTarget: grpc?.target,
    gateway,
    limiter,
    usage,
    identity,
    setLogRefusals(fromConfig) {
      logRefusals = options.logRefusals || fromConfig;
    },
    async stop(deadlineMs) {
      stopTlsReload?.();
      server.close();
      grpc?.stopAccepting();
      const drained = await gateway.drained(deadlineMs);
      server.closeAllConnections();
      grpc?.close();
      admin?.close();
      admin?.closeAllConnections();
      await gateway.close();
      await limiter.close();
      identity.close();
      return { drained };
    },
  };
}

/**
 * The ready banner.
 *
 * @example
 * ```ts
 * process.stdout.write(gatewayBanner(running, options));
 * ```
 */
export function gatewayBanner(running: RunningGateway, options: GatewayCommandOptions): string {
  const lines = [
    'a2a-ratelimit gateway: ready',
    `  upstream    ${options.upstream}${running.gateway.isReady() ? '' : ` (card not fetched yet: ${running.gateway.cardError()})`}`,
    `  agent card  ${running.url}/.well-known/agent-card.json`,
    `  listening   ${running.url}${options.mirrorHttpStatus ? ' (JSON-RPC rejections mirrored as HTTP 429/503)' : ''}`,
    ...(running.grpcTarget === undefined
      ? []
      : [
          `  gRPC        ${running.grpcTarget} (h2c; to the agent's gRPC interface${options.upstreamGrpc === undefined ? '' : ` at ${options.upstreamGrpc}`})`,
        ]),
    `  admin       ${running.adminUrl === undefined ? '(off: --admin-port)' : `${running.adminUrl}/metrics ${running.adminUrl}/healthz ${running.adminUrl}/readyz`}`,
    `  domain      ${running.limiter.domain}`,
    ...running.limiter.policySet.policies.map(
      (p, i) => `  ${i === 0 ? 'policies   ' : '           '} ${describePolicy(p)}`,
    ),
    `  store       ${options.redis === undefined ? 'memory (this process)' : `redis ${options.redis}, keys ${options.redisPrefix ?? 'a2arl:'}* (when Redis fails: ${options.redisOnError})`}`,
    'Press Ctrl-C to stop (in-flight requests and streams drain first).',
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * Reloads `--config` into the running gateway on SIGHUP and file changes: the policies swapped in
 * with `limiter.updatePolicies`; a file that cannot be read, parsed or validated keeps the
 * running config, and its one line says why. `identity:` is reloaded too (its files re-read).
 *
 * @example
 * ```ts
 * const reloader = reloadGatewayConfig(running, options);
 * ```
 */
export function reloadGatewayConfig(
  running: RunningGateway,
  options: GatewayCommandOptions,
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): PolicyFileReloader | undefined {
  if (options.config === undefined) return undefined;
  const limiter = running.limiter;
  return watchPolicyFile({
    file: options.config,
    log,
    isTransient: (error) => !(error instanceof CliError),
    apply: async (file) => {
      const config = await loadGatewayConfig(file);
      // Identity first: a bad identity: keeps everything running as it was.
      await running.identity.swap(config.identity, file);
      await limiter.updatePolicies(gatewayPolicies(config));
      running.setLogRefusals(config.logRefusals === true);
      if (config.usage !== undefined) running.usage.path = config.usage.path;
      const names = limiter.policySet.policies.map((p) => p.name);
      return `version ${limiter.policySetVersion}, ${names.length} ${names.length === 1 ? 'policy' : 'policies'} (${names.join(', ')})`;
    },
  });
}

/**
 * Registers `gateway` on the CLI.
 *
 * @example
 * ```ts
 * registerGatewayCommand(cac('a2a-ratelimit'));
 * ```
 */
export function registerGatewayCommand(cli: CAC): void {
  cli
    .command(
      'gateway',
      'Rate-limit any A2A agent: a reverse proxy in front of --upstream, until Ctrl-C',
    )
    .option('--upstream <url>', "The agent's base URL (its card at /.well-known/agent-card.json)")
    .option('--host <host>', 'Interface to listen on (default: 127.0.0.1)')
    .option('--port <port>', 'Port; 0 = any (default: 8080)')
    .option('--admin-port <port>', 'Admin port: /metrics, /healthz, /readyz (default: none)')
    .option(
      '--config <file>',
      'JSON or YAML: policies: as serve reads them, plus identity: and usage:; reloaded on SIGHUP and file changes',
    )
    .option('--public-url <url>', 'Base URL the card advertises (default: the listening URL)')
    .option('--domain <domain>', 'ErrorInfo domain of rejections (default: the public URL’s host)')
    .option('--mirror-http-status', 'JSON-RPC rejections travel with HTTP 429/503 instead of 200')
    .option('--redis <url>', 'Share limits and deduplication with other gateways through Redis')
    .option('--redis-prefix <prefix>', 'Prefix of every Redis key (default: a2arl:)')
    .option(
      '--redis-on-error <mode>',
      'When Redis fails: fail-open, fail-closed or insurance (default: insurance)',
    )
    .option('--tls-cert <file>', 'Serve HTTPS with this certificate chain (PEM; needs --tls-key)')
    .option('--tls-key <file>', 'The private key of --tls-cert (PEM); both re-read on SIGHUP')
    .option('--log-refusals', 'One line per refused request on stderr (also logRefusals: true)')
    .option(
      '--grpc-port <port>',
      'Also relay gRPC (HTTP/2, h2c) on this port; 0 = any (default: off)',
    )
    .option(
      '--upstream-grpc <host:port>',
      "The agent's gRPC server when its card's gRPC interface is not reachable as written",
    )
    .option(
      '--public-grpc-target <host:port>',
      'gRPC target the card advertises (default: the public URL’s host and the gRPC port)',
    )
    .option(
      '--drain-seconds <n>',
      'On SIGINT/SIGTERM, wait this long for in-flight requests and streams (default: 10)',
    )
    .action(async (flags: Record<string, unknown>) => {
      const options = parseGatewayOptions(flags);
      const config =
        options.config === undefined ? undefined : await loadGatewayConfig(options.config);
      const running = await startGateway(options, config);
      process.stdout.write(gatewayBanner(running, options));
      if (running.adminUrl === undefined && options.adminPort !== undefined) {
        process.stdout.write(`  metrics     (${METRICS_NEED_PROM_CLIENT})\n`);
      }
      const reloader = reloadGatewayConfig(running, options);
      const signal = await untilSignal();
      reloader?.close();
      const { drained } = await running.stop(options.drainSeconds * 1000);
      process.stdout.write(
        `a2a-ratelimit gateway: stopped on ${signal}${drained ? '' : ` (in-flight requests cut after ${options.drainSeconds} s)`}\n`,
      );
    });
}
