/**
 * @module simulate-command
 * `a2a-ratelimit simulate`: flags to scenario, the run, the table or JSON, and the chart.
 */

import { writeFile } from 'node:fs/promises';
import type { CAC } from 'cac';
import { chartTimelineSvg, type EchartsModule, loadEcharts } from './chart-timeline-svg.js';
import { CliError, exitCodeOf, formatCliError, isCliError } from './cli-error.js';
import { parseOptionalString } from './cli-options.js';
import { type SimulationReport, simulate } from './simulation.js';
import { type SimulateFlags, scenarioFromFlags } from './simulation-options.js';
import { describeArrival, formatSimulationTable, simulationJson } from './simulation-report.js';
import { CLIENT_KINDS } from './simulation-summary.js';
import { createStatusLine } from './status-line.js';

/**
 * The flags of `simulate`, including output: `json` prints one JSON object instead of the table,
 * `chart` names the SVG file to draw.
 */
export interface SimulateCommandOptions extends SimulateFlags {
  readonly json?: unknown;
  readonly chart?: unknown;
}

/**
 * Where the command writes, and how it imports the optional ECharts; replaceable in tests.
 *
 * @example
 * ```ts
 * const lines: string[] = [];
 * const io: SimulateIo = { ...processSimulateIo(), stdout: (t) => lines.push(t) };
 * ```
 */
export interface SimulateIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly writeText: (path: string, text: string) => Promise<void>;
  /** Imports an optional module (ECharts). */
  readonly importModule: (specifier: string) => Promise<unknown>;
  /** stderr is a terminal: progress redraws one line; otherwise plain lines. Default false. */
  readonly stderrIsTty?: boolean;
}

/**
 * The process's own streams and file system.
 *
 * @example
 * ```ts
 * await runSimulateCommand({ json: true }, processSimulateIo());
 * ```
 */
export function processSimulateIo(): SimulateIo {
  return {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    writeText: (path, text) => writeFile(path, text, 'utf8'),
    importModule: (specifier) => import(specifier),
    stderrIsTty: process.stderr.isTTY === true,
  };
}

/**
 * What the command did: its exit code (0 ok; otherwise the `CliError`'s code, 2 for anything the
 * user can fix) and the report when the simulation ran.
 *
 * @example
 * ```ts
 * const { exitCode, report } = await runSimulateCommand({ callers: 10 });
 * ```
 */
export interface SimulateCommandResult {
  readonly exitCode: number;
  readonly report?: SimulationReport;
}

/**
 * Runs `simulate` with the flags as cac parsed them: validates them, loads ECharts first when a
 * chart is asked for, runs every client kind, prints the table or the JSON line (the last line of
 * stdout), and writes the chart. A mistake the user can fix is one line on stderr and a non-zero
 * exit code, never a throw.
 *
 * @example
 * ```ts
 * const { exitCode, report } = await runSimulateCommand({ callers: 1000, calls: 30, json: true });
 * report?.outcomes[0]?.firstRetrySuccessRate; // 1
 * ```
 */
export async function runSimulateCommand(
  options: SimulateCommandOptions,
  io: SimulateIo = processSimulateIo(),
): Promise<SimulateCommandResult> {
  let report: SimulationReport | undefined;
  try {
    const scenario = await scenarioFromFlags(options);
    const chartPath = parseOptionalString(options.chart, '--chart');
    const json = options.json === true;
    // Before simulating: a missing ECharts should not cost a long run.
    const echarts: EchartsModule | undefined =
      chartPath === undefined ? undefined : await loadEcharts(io.importModule);

    // Progress on stderr (stdout keeps the table or the JSON); none with --json.
    const status = json
      ? undefined
      : createStatusLine({ write: io.stderr, tty: io.stderrIsTty === true });
    const calls = scenario.callers * scenario.callsPerCaller;
    try {
      report = await simulate(scenario, (e) =>
        status?.step(
          e.phase === 'start'
            ? `simulating ${e.kind} (${e.index + 1} of ${e.count}): ${calls} calls…`
            : `${e.kind} done in ${(e.wallMs / 1000).toFixed(1)} s (${e.index + 1} of ${e.count})`,
        ),
      );
    } finally {
      status?.done();
    }
    if (!json) io.stdout(formatSimulationTable(report));
    if (chartPath !== undefined && echarts !== undefined) {
      const title = `${scenario.callers} caller(s) × ${scenario.callsPerCaller} calls, ${describeArrival(scenario.arrival)}, seed ${scenario.seed}`;
      const svg = chartTimelineSvg(report.outcomes, echarts, { title });
      try {
        await io.writeText(chartPath, svg);
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        throw new CliError(
          `cannot write the chart to ${chartPath}${typeof code === 'string' ? ` (${code})` : ''}`,
          { cause: error },
        );
      }
      (json ? io.stderr : io.stdout)(`chart written to ${chartPath}\n`);
    }
    if (json) io.stdout(`${JSON.stringify(simulationJson(report))}\n`);
    return { exitCode: 0, report };
  } catch (error) {
    if (!isCliError(error)) throw error;
    io.stderr(formatCliError(error, { debug: false }));
    return report === undefined
      ? { exitCode: exitCodeOf(error) }
      : { exitCode: exitCodeOf(error), report };
  }
}

/**
 * Adds `simulate` to a `cac` program; the action resolves with the exit code.
 *
 * @example
 * ```ts
 * const cli = cac('a2a-ratelimit');
 * registerSimulateCommand(cli);
 * cli.parse();
 * ```
 */
export function registerSimulateCommand(cli: CAC): void {
  cli
    .command(
      'simulate',
      'Simulate callers and client kinds against the limiter in virtual time (no sockets)',
    )
    .option('--callers <n>', 'Callers, each with its own client and identity (default: 1)')
    .option('--calls <n>', 'Calls per caller (default: 30)')
    .option('--limit <n>', 'Per-caller policy: calls per window (default: 60)')
    .option('--window-seconds <s>', 'Per-caller policy: window in seconds (default: 60)')
    .option('--burst <n>', 'Per-caller policy: burst (default: 10)')
    .option('--config <file>', 'Policy set in JSON or YAML instead of the per-caller policy')
    .option('--method <name>', 'A2A method of every call (default: SendMessage)')
    .option(
      '--arrival <pattern>',
      'burst (all at once), uniform:<seconds>, or poisson:<calls per second per caller> (default: burst)',
    )
    .option(
      '--clients <kinds>',
      `Comma-separated: ${CLIENT_KINDS.join(', ')}, or all (default: all)`,
    )
    .option('--seed <n>', 'Seed of arrivals, jitter and backoff (default: 1)')
    .option(
      '--fixed-delay-ms <ms>',
      'Own delay of the fixed and give-up-early clients (default: 1000)',
    )
    .option('--task-ms <ms>', 'How long admitted calls hold concurrency leases (default: 1000)')
    .option(
      '--answer-after-task',
      'Answers come when the task ends (a blocking SendMessage), not at admission',
    )
    .option('--json', 'Print one JSON object instead of the table')
    .option('--chart <file.svg>', 'Draw admissions and rejections over time (needs echarts)')
    .example('a2a-ratelimit simulate')
    .example(
      'a2a-ratelimit simulate --callers 1000 --calls 30 --clients ours,naive --chart sim.svg',
    )
    .example('a2a-ratelimit simulate --config policies.yaml --arrival poisson:2 --seed 7 --json')
    .action(
      async (options: SimulateCommandOptions) => (await runSimulateCommand(options)).exitCode,
    );
}
