/**
 * @module probe-command
 * `a2a-ratelimit probe <base-url>`: its flags, `runProbe`, the report and the exit code.
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
 * parseProbeOptions('http://127.0.0.1:9090', { binding: 'rest', maxRequests: '50' }).maxRequests; // 50
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
  const direct =
    flags.direct === undefined ? undefined : parseHttpUrl(flags.direct, '--direct').href;
  const maxRequests =
    flags.maxRequests === undefined
      ? parsePositiveInteger(flags.burst, '--burst', 100)
      : parsePositiveInteger(flags.maxRequests, '--max-requests', 100);
  const least = method === 'GetTask' ? 2 : 1;
  if (maxRequests < least) {
    throw new CliError(
      `--max-requests must be at least ${least} for ${method}${least > 1 ? ' (one SendMessage to have a task, then GetTask)' : ''}, got ${maxRequests}`,
    );
  }
  return {
    baseUrl: url.href,
    binding: parseBinding(flags.binding, 'jsonrpc'),
    method: method as ProbeMethod,
    maxRequests,
    ...(direct === undefined ? {} : { direct }),
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
  const origins = report.origins;
  const originText = (name: string): string => {
    const origin = origins?.[name];
    if (origin === undefined) return '';
    return origin === 'path'
      ? ' [the agent sent it: lost between the agent and you]'
      : ' [the agent never sent it]';
  };
  const required = report.checks.filter((c) => (c.level ?? 'required') === 'required');
  const passedCount = required.filter((c) => c.status === 'pass').length;
  const names = (list: readonly string[], origin: 'agent' | 'path'): string[] =>
    list.filter((n) => origins?.[n] === origin);
  const unplaced = (list: readonly string[]): string[] =>
    list.filter((n) => origins?.[n] === undefined);
  const where = (list: readonly string[]): string => {
    if (origins === undefined) {
      return `${list.join(', ')} (--direct <the agent's own URL> tells what the agent never sent from what was lost on the way)`;
    }
    const parts = [
      names(list, 'path').length > 0
        ? `lost between the agent and you: ${names(list, 'path').join(', ')}`
        : '',
      names(list, 'agent').length > 0
        ? `the agent never sent: ${names(list, 'agent').join(', ')}`
        : '',
      unplaced(list).length > 0 ? `not received: ${unplaced(list).join(', ')}` : '',
    ];
    return parts.filter((p) => p !== '').join('; ');
  };
  const verdict = !report.passed
    ? `FAIL: ${report.failed.length} of ${required.length} required checks failed: ${where(report.failed)}`
    : report.warnings.length === 0
      ? `PASS: the rejection arrived intact (${passedCount} required checks passed)`
      : `PASS with ${report.warnings.length === 1 ? 'a warning' : `${report.warnings.length} warnings`}: ${passedCount} required checks passed; recommended, not received: ${where(report.warnings)}`;
  const lines = [
    `probe ${report.baseUrl}: ${report.method} over ${report.binding} at ${report.endpoint}`,
    `refused on call ${report.calls} after ${report.admittedBefore} admitted: ${report.rejection.summary}`,
    ...(report.direct === undefined
      ? []
      : [`directly at ${report.direct.endpoint}: ${report.direct.rejection.summary}`]),
    ...report.checks.map(
      (c) =>
        `  ${c.status.toUpperCase().padEnd(4)}  ${c.name.padEnd(width)}  ${c.detail}${c.status === 'fail' || c.status === 'warn' ? originText(c.name) : ''}`,
    ),
    verdict,
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * Registers `probe` on the CLI. Exit code 0 when every required check passed (warnings allowed),
 * 1 when one failed, 2 when the probe could not run (a `CliError`, e.g. no limiter found).
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
      'Send a rejection end to end through whatever gateway is in front of an agent and grade what arrived',
    )
    .option('--binding <binding>', 'jsonrpc, rest or grpc (default: jsonrpc)')
    .option(`--method <method>`, `${METHODS.join(', ')} (default: SendMessage)`)
    .option(
      '--max-requests <n>',
      'Requests sent at most to each URL, said before the first; all admitted = "no limiter found" (default: 100; --burst is its old name)',
    )
    .option('--burst <n>', 'Old name of --max-requests')
    .option(
      '--direct <url>',
      "The agent's own base URL, not through the gateway: the same calls go there too, to tell what the agent never sent from what was lost on the way",
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
      'a2a-ratelimit probe https://gateway.example.com --direct http://10.0.0.7:8080 --max-requests 20',
    )
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
      const report = await runProbe({
        ...parsed,
        ...(status === undefined ? {} : { status }),
        // Before any task is started: how many requests, and that admitted messages run tasks.
        announce: (line) => process.stderr.write(`${line}\n`),
      });
      process.stdout.write(
        flags.json === true ? `${JSON.stringify(report)}\n` : renderProbeReport(report),
      );
      return report.passed ? EXIT_CODES.ok : EXIT_CODES.failure;
    });
}
