/**
 * @module probe-command
 * `a2a-ratelimit probe <base-url>`: runs {@link runProbe} and prints a pass/fail report naming
 * each check and what was lost (or one JSON object with `--json`). Exit code 0 when every check
 * passed, 1 when one failed, 2 when the probe could not run (a `CliError`).
 */

import type { CAC } from 'cac';
import { CliError, EXIT_CODES } from './cli-error.js';
import {
  parseBinding,
  parseHttpUrl,
  parseOptionalString,
  parsePositiveInteger,
  parsePositiveNumber,
} from './cli-options.js';
import type { ProbeOptions, ProbeReport } from './probe.js';
import { PROBE_METHODS, type ProbeMethod } from './probe-methods.js';
import { createStatusLine } from './status-line.js';

const METHODS: readonly ProbeMethod[] = Object.values(PROBE_METHODS);

/**
 * Parses `probe`'s argument and flags.
 *
 * @example
 * ```ts
 * parseProbeOptions('http://127.0.0.1:9090', { binding: 'rest', burst: '50' }).burst; // 50
 * ```
 */
export function parseProbeOptions(baseUrl: unknown, flags: Record<string, unknown>): ProbeOptions {
  const url = parseHttpUrl(baseUrl, 'base-url');
  const method = flags.method === undefined ? 'SendMessage' : String(flags.method);
  if (!METHODS.includes(method as ProbeMethod)) {
    throw new CliError(`--method must be one of ${METHODS.join(', ')}, got "${method}"`);
  }
  const callerToken = parseOptionalString(flags.callerToken, '--caller-token');
  const grpcTarget = parseOptionalString(flags.grpcTarget, '--grpc-target');
  if (grpcTarget !== undefined && !/^(\[[0-9a-f:.]+\]|[^:/\s]+):\d{1,5}$/i.test(grpcTarget)) {
    throw new CliError(`--grpc-target must be host:port, got "${grpcTarget}"`);
  }
  return {
    baseUrl: url.href,
    binding: parseBinding(flags.binding, 'jsonrpc'),
    method: method as ProbeMethod,
    burst: parsePositiveInteger(flags.burst, '--burst', 100),
    timeoutMs: parsePositiveNumber(flags.timeout, '--timeout', 10) * 1000,
    maxWaitSeconds: parsePositiveNumber(flags.maxWait, '--max-wait', 65),
    ...(callerToken === undefined ? {} : { callerToken }),
    ...(grpcTarget === undefined ? {} : { grpcTarget }),
  };
}

/**
 * The human-readable report.
 *
 * @example
 * ```ts
 * process.stdout.write(renderProbeReport(report));
 * ```
 */
export function renderProbeReport(report: ProbeReport): string {
  const width = Math.max(...report.checks.map((c) => c.name.length));
  const lines = [
    `probe ${report.baseUrl}: ${report.method} over ${report.binding} at ${report.endpoint}`,
    `refused on call ${report.calls} after ${report.admittedBefore} admitted: ${report.rejection.summary}`,
    ...report.checks.map(
      (c) => `  ${c.status.toUpperCase().padEnd(4)}  ${c.name.padEnd(width)}  ${c.detail}`,
    ),
    report.passed
      ? `PASS: the rejection arrived intact (${report.checks.filter((c) => c.status === 'pass').length} checks passed)`
      : `FAIL: ${report.lost.length} of ${report.checks.length} checks failed; lost on the way: ${report.lost.join(', ')}`,
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * Registers `probe` on the CLI.
 *
 * @example
 * ```ts
 * registerProbeCommand(cac('a2a-ratelimit'));
 * ```
 */
export function registerProbeCommand(cli: CAC): void {
  cli
    .command(
      'probe <base-url>',
      'Send a rejection end to end through whatever gateway is in front of an agent and check what survived',
    )
    .option('--binding <binding>', 'jsonrpc, rest or grpc (default: jsonrpc)')
    .option(`--method <method>`, `${METHODS.join(', ')} (default: SendMessage)`)
    .option(
      '--burst <n>',
      'Calls sent at most before giving up: "the agent never rejected" (default: 100)',
    )
    .option(
      '--caller-token <token>',
      'Sent as "Authorization: Bearer <token>" (serve takes it as the caller\'s name)',
    )
    .option(
      '--grpc-target <host:port>',
      "gRPC address to call, e.g. a gateway's gRPC listener (default: the base URL's host and port)",
    )
    .option(
      '--max-wait <seconds>',
      'Longest hinted delay to wait out before the retry check (default: 65)',
    )
    .option('--timeout <seconds>', 'Longest wait for one response (default: 10)')
    .option('--json', 'Print the report as one JSON object')
    .usage(
      'probe <base-url> [options]\n\n' +
        'Talks only to <base-url> (and --grpc-target): the agent card is read from\n' +
        '<base-url>/.well-known/agent-card.json and only the PATHS of its interfaces are used,\n' +
        'so every call goes through the gateway in front of the agent, not around it.',
    )
    .example('a2a-ratelimit probe http://127.0.0.1:8080 --binding rest --caller-token probe-1')
    .example(
      'a2a-ratelimit probe https://gateway.example.com --binding grpc --grpc-target gateway.example.com:443',
    )
    .action(async (baseUrl: unknown, flags: Record<string, unknown>) => {
      // Loaded here, so `--help` and other commands need none of the probe's peers.
      const { runProbe } = await import('./probe.js');
      const json = flags.json === true;
      const status = json
        ? undefined
        : createStatusLine({
            write: (text) => process.stderr.write(text),
            tty: process.stderr.isTTY === true,
          });
      const parsed = parseProbeOptions(baseUrl, flags);
      const report = await runProbe(status === undefined ? parsed : { ...parsed, status });
      process.stdout.write(
        flags.json === true ? `${JSON.stringify(report)}\n` : renderProbeReport(report),
      );
      return report.passed ? EXIT_CODES.ok : EXIT_CODES.failure;
    });
}
