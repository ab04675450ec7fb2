/**
 * @module demo-command
 * `a2a-ratelimit demo`: the worked example's three fan-outs on real sockets, printed side by side
 * (or as JSON).
 */

import type { CAC } from 'cac';
import { parseBinding, parsePositiveNumber } from './cli-options.js';
import type { DemoRunKind, FanOutOptions, FanOutResult } from './fan-out-demo.js';
import { createProgressDisplay } from './progress-display.js';
import { renderTable, type TableCell } from './text-table.js';

/**
 * Parsed options of `demo`.
 */
export interface DemoOptions {
  readonly binding: 'jsonrpc' | 'rest' | 'grpc';
  /** How many times faster than real time the agent and the client run. */
  readonly timeScale: number;
  /** Print one JSON object instead of progress and a table. */
  readonly json: boolean;
}

/**
 * The `--json` output of `demo`: the three runs.
 */
export interface DemoReport {
  readonly binding: DemoOptions['binding'];
  readonly timeScale: number;
  readonly ours: FanOutResult;
  readonly naive: FanOutResult;
  /** Our client planning from the agent card's policies. */
  readonly planned: FanOutResult;
}

const LABELS: Readonly<Record<DemoRunKind, string>> = {
  ours: 'ours (RetryInfo)',
  naive: 'naive (bare 500)',
  planned: 'planned (card)',
};

/**
 * Runs the three fan-outs one after the other and returns them. `onProgress` sees every run.
 *
 * @example
 * ```ts
 * const report = await runDemo({ binding: 'rest', timeScale: 10, json: true });
 * report.ours.admittedOnFirstRetry; // 20
 * ```
 */
export async function runDemo(
  options: DemoOptions,
  onProgress?: FanOutOptions['onProgress'],
): Promise<DemoReport> {
  const common = {
    binding: options.binding,
    timeScale: options.timeScale,
    ...(onProgress === undefined ? {} : { onProgress }),
  };
  // Loaded here, so `--help` and other commands need none of the demo's peers.
  const { runFanOut } = await import('./fan-out-demo.js');
  const ours = await runFanOut({ ...common, kind: 'ours' });
  const naive = await runFanOut({ ...common, kind: 'naive' });
  const planned = await runFanOut({ ...common, kind: 'planned' });
  return { binding: options.binding, timeScale: options.timeScale, ours, naive, planned };
}

/**
 * The side-by-side table of a demo report.
 *
 * @example
 * ```ts
 * process.stdout.write(renderDemoTable(report));
 * ```
 */
export function renderDemoTable(report: DemoReport): string {
  const { ours, naive, planned } = report;
  const scaled = report.timeScale !== 1;
  const row = (label: string, pick: (r: FanOutResult) => TableCell): TableCell[] => [
    label,
    pick(ours),
    pick(naive),
    pick(planned),
  ];
  return renderTable(
    ['', LABELS.ours, LABELS.naive, LABELS.planned],
    [
      row('admitted at once', (r) => r.admittedAtOnce),
      row('admitted when paced', (r) => r.admittedPaced),
      row('rejected', (r) => r.rejected),
      row('admitted on first retry', (r) => r.admittedOnFirstRetry),
      row('admitted on a later retry', (r) => r.admittedOnLaterRetry),
      row('later retries (2nd and on)', (r) => r.laterRetries),
      row('retries rejected again', (r) => r.rejectedRetries),
      row('abandoned', (r) => r.abandoned),
      row(scaled ? `total seconds (clock × ${report.timeScale})` : 'total seconds', (r) =>
        r.totalSeconds.toFixed(1),
      ),
      ...(scaled ? [row('real seconds', (r) => r.realSeconds.toFixed(1))] : []),
      row('requests the agent saw', (r) => r.requestsSeenByAgent),
    ],
  ).concat(
    scaled
      ? `Seconds are on the demo's scaled clock: agent and client share one clock running ${report.timeScale}× real time (the wire still says whole seconds).\n`
      : '',
  );
}

function jsonOf(r: FanOutResult): Record<string, number> {
  return {
    admittedAtOnce: r.admittedAtOnce,
    admittedPaced: r.admittedPaced,
    rejected: r.rejected,
    admittedOnFirstRetry: r.admittedOnFirstRetry,
    admittedOnLaterRetry: r.admittedOnLaterRetry,
    laterRetries: r.laterRetries,
    rejectedRetries: r.rejectedRetries,
    abandoned: r.abandoned,
    totalSeconds: r.totalSeconds,
    realSeconds: r.realSeconds,
    requestsSeenByAgent: r.requestsSeenByAgent,
  };
}

/**
 * Registers `demo` on the CLI.
 *
 * @example
 * ```ts
 * const cli = cac('a2a-ratelimit');
 * registerDemoCommand(cli);
 * ```
 */
export function registerDemoCommand(cli: CAC): void {
  cli
    .command(
      'demo',
      'The worked example on loopback: 30 calls at once to a 60/min burst-10 agent, our format vs a bare 500 vs planning from the card',
    )
    .option('--binding <binding>', 'jsonrpc, rest or grpc (default: jsonrpc)')
    .option(
      '--time-scale <n>',
      'Agent and client share one clock running n times faster than real time; the wire still says 1…20 s (default: 1)',
    )
    .option(
      '--json',
      'Print one JSON object {"ours": {...}, "naive": {...}, "planned": {...}} on the last line',
    )
    .example('a2a-ratelimit demo --binding grpc --time-scale 10')
    .action(async (flags: Record<string, unknown>) => {
      const options: DemoOptions = {
        binding: parseBinding(flags.binding, 'jsonrpc'),
        timeScale: parsePositiveNumber(flags.timeScale, '--time-scale', 1),
        json: flags.json === true,
      };
      const out = process.stdout;
      if (options.json) {
        const report = await runDemo(options);
        out.write(
          `${JSON.stringify({
            binding: report.binding,
            timeScale: report.timeScale,
            ours: jsonOf(report.ours),
            naive: jsonOf(report.naive),
            planned: jsonOf(report.planned),
          })}\n`,
        );
        return;
      }
      out.write(
        `Research agent: 60 SendMessage per minute per caller, burst 10, on ${options.binding}` +
          `${options.timeScale === 1 ? '' : ` (clock × ${options.timeScale})`}.\n` +
          'Orchestrator: 30 SendMessage at once, first with our format and client, then against a bare 500 with a naive backoff client,\n' +
          'then with our client planning from the policies on the agent card.\n\n',
      );
      const display = createProgressDisplay({ stream: out, labels: LABELS });
      let report: DemoReport;
      try {
        report = await runDemo(options, (p) => display.update(p));
      } finally {
        display.stop();
      }
      out.write(`\n${renderDemoTable(report)}\n`);
      out.write(
        `With RetryInfo every rejected call waited exactly as told and was admitted on its first retry (${report.ours.requestsSeenByAgent} requests in all).\n` +
          `With a bare 500 the client could not tell a quota from a crash: ${report.naive.rejectedRetries} retries were rejected again and ${report.naive.abandoned} calls were abandoned.\n` +
          'Same limiter, worse outcome: the difference is the response format.\n' +
          `Planning from the card, nothing was rejected: ${report.planned.admittedAtOnce} at once, ${report.planned.admittedPaced} at the policy's pace, ${report.planned.requestsSeenByAgent} requests in ${report.planned.totalSeconds.toFixed(1)} s.\n`,
      );
    });
}
