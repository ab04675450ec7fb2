/**
 * @module simulation-report
 * How `simulate` shows a `SimulationReport`: a text table with one column per client kind, and a
 * JSON summary.
 */

import type { Policy } from 'a2a-ratelimit';
import type { ArrivalPattern, SimulationReport } from './simulation.js';
import type { ClientKind, ClientKindOutcome } from './simulation-summary.js';
import { renderTable, type TableCell } from './text-table.js';

/**
 * The JSON form of one client kind's outcome (no per-request log).
 *
 * @example
 * ```ts
 * const s: OutcomeSummary = summaryOf(report.outcomes[0]);
 * s.admittedOnFirstRetry; // 20
 * ```
 */
export type OutcomeSummary = Omit<ClientKindOutcome, 'requests' | 'abandonedAtMs' | 'kind'>;

/**
 * The JSON form of a report: `scenario`, `wallMs` and one key per client kind.
 *
 * @example
 * ```ts
 * const json: SimulationJson = simulationJson(report);
 * json.ours?.abandoned; // 0
 * ```
 */
export type SimulationJson = { readonly scenario: ScenarioSummary; readonly wallMs: number } & {
  readonly [K in ClientKind]?: OutcomeSummary;
};

/**
 * The scenario as printed and serialised.
 */
export interface ScenarioSummary {
  readonly callers: number;
  readonly callsPerCaller: number;
  readonly method: string;
  readonly arrival: ArrivalPattern;
  readonly seed: number;
  readonly policies: readonly Policy[];
}

/**
 * One outcome without its request log.
 *
 * @example
 * ```ts
 * JSON.stringify(summaryOf(outcome));
 * ```
 */
export function summaryOf(outcome: ClientKindOutcome): OutcomeSummary {
  const { requests: _requests, abandonedAtMs: _abandonedAtMs, kind: _kind, ...summary } = outcome;
  return summary;
}

/**
 * The JSON summary of a report.
 *
 * @example
 * ```ts
 * console.log(JSON.stringify(simulationJson(report)));
 * ```
 */
export function simulationJson(report: SimulationReport): SimulationJson {
  const { scenario } = report;
  const out: Record<string, unknown> = {
    scenario: {
      callers: scenario.callers,
      callsPerCaller: scenario.callsPerCaller,
      method: scenario.method,
      arrival: scenario.arrival,
      seed: scenario.seed,
      policies: scenario.policies,
    } satisfies ScenarioSummary,
    wallMs: Math.round(report.wallMs),
  };
  for (const outcome of report.outcomes) out[outcome.kind] = summaryOf(outcome);
  return out as SimulationJson;
}

/**
 * The arrival pattern in words.
 *
 * @example
 * ```ts
 * describeArrival({ kind: 'uniform', overSeconds: 10 }); // 'uniform over 10 s'
 * ```
 */
export function describeArrival(arrival: ArrivalPattern): string {
  switch (arrival.kind) {
    case 'burst':
      return 'all at once';
    case 'uniform':
      return `uniform over ${arrival.overSeconds} s`;
    case 'poisson':
      return `Poisson, ${arrival.perSecond}/s per caller`;
  }
}

function policySummary(p: Policy): string {
  switch (p.kind) {
    case 'rate':
      return `${p.name}: ${p.limit}/${p.windowSeconds}s burst ${p.burst ?? p.limit} per ${typeof p.scope === 'object' ? p.scope.name : (p.scope ?? 'caller')}`;
    case 'concurrency':
      return `${p.name}: ${p.max} in flight per ${typeof p.scope === 'object' ? p.scope.name : (p.scope ?? 'caller')}`;
    case 'overload':
      return `${p.name}: overload guard`;
  }
}

const ROWS: readonly (readonly [string, (o: ClientKindOutcome) => TableCell])[] = [
  ['admitted at once', (o) => o.admittedAtOnce],
  ['admitted when paced', (o) => o.admittedPaced],
  ['rejected', (o) => o.rejected],
  ['admitted on first retry', (o) => o.admittedOnFirstRetry],
  ['admitted on a later retry', (o) => o.admittedOnLaterRetry],
  ['later retries (2nd and on)', (o) => o.laterRetries],
  ['retries rejected again', (o) => o.rejectedRetries],
  ['abandoned', (o) => o.abandoned],
  [
    'first-retry success',
    (o) => (o.rejected === 0 ? 'n/a' : `${(o.firstRetrySuccessRate * 100).toFixed(1)}%`),
  ],
  ['held back by the client', (o) => o.heldByClient],
  ['total seconds', (o) => o.totalSeconds.toFixed(1)],
  ['requests the agent saw', (o) => o.requestsSeenByAgent],
  ['wait p50 (s)', (o) => o.waitP50Seconds.toFixed(2)],
  ['wait p99 (s)', (o) => o.waitP99Seconds.toFixed(2)],
];

/**
 * The report as text: two lines naming the scenario, then a table with one row per figure and one
 * column per client kind (the same rows as `demo`, plus the simulation's own).
 *
 * @example
 * ```ts
 * process.stdout.write(formatSimulationTable(report));
 * ```
 */
export function formatSimulationTable(report: SimulationReport): string {
  const { scenario, outcomes } = report;
  const calls = scenario.callers * scenario.callsPerCaller;
  const table = renderTable(
    ['', ...outcomes.map((o) => o.kind)],
    ROWS.map(([label, cell]) => [label, ...outcomes.map(cell)]),
  );
  return [
    `${scenario.callers} caller(s) × ${scenario.callsPerCaller} ${scenario.method} call(s) = ${calls}, ${describeArrival(scenario.arrival)}, seed ${scenario.seed}`,
    `policies: ${scenario.policies.map(policySummary).join('; ')}`,
    '',
    table,
    `simulated in ${(report.wallMs / 1000).toFixed(2)} s of real time`,
    '',
  ].join('\n');
}
