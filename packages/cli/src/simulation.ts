/**
 * @module simulation
 * The engine of `simulate`: callers fanning calls out to one agent in virtual time, one run per
 * client kind on identical traffic.
 */

import type { HoldOptions, Policy } from 'a2a-ratelimit';
import { type A2AMethod, MemoryStore } from 'a2a-ratelimit';
import { RetryScheduler, type RetrySchedulerOptions } from 'a2a-ratelimit/client';
import {
  createVirtualTime,
  seededRandom,
  type VirtualClock,
  WORKED_EXAMPLE_POLICY,
} from 'a2a-ratelimit/simulation';
import {
  publishedAgentCard,
  SIMULATED_AGENT_MODES,
  SimulatedAgent,
  type SimulatedResult,
} from './simulated-agent.js';
import {
  type CallTrack,
  CLIENT_KINDS,
  type ClientKind,
  type ClientKindOutcome,
  summarize,
} from './simulation-summary.js';

/**
 * When calls arrive, per caller: `burst` — all at time 0; `uniform` — each call at a time drawn
 * uniformly from [0, `overSeconds`); `poisson` — a Poisson process of `perSecond` calls per second.
 * Random draws come from the scenario's seed.
 */
export type ArrivalPattern =
  | { readonly kind: 'burst' }
  | { readonly kind: 'uniform'; readonly overSeconds: number }
  | { readonly kind: 'poisson'; readonly perSecond: number };

/**
 * What to simulate. Durations in the unit their name says.
 */
export interface SimulationScenario {
  /** Callers, each with its own client and its own identity at the agent. */
  readonly callers: number;
  /** Calls each caller makes. */
  readonly callsPerCaller: number;
  /** The agent's policies. */
  readonly policies: readonly Policy[];
  /** The agent's hold options (the `naive` kind's agent makes no holds whatever these say). */
  readonly holds?: HoldOptions | undefined;
  /** The A2A method every call uses; message methods carry a messageId. */
  readonly method: A2AMethod;
  readonly arrival: ArrivalPattern;
  /** Client kinds to run, each on its own fresh agent. */
  readonly clients: readonly ClientKind[];
  /** Seed of arrivals, jitter and backoff. */
  readonly seed: number;
  /** The `fixed` and `give-up-early` clients' own delay before a retry, ms. */
  readonly fixedDelayMs: number;
  /** How long an admitted call keeps concurrency leases (its task runs), ms. */
  readonly taskMs: number;
  /**
   * Answers come when the task ends (a blocking SendMessage), not at admission.
   * @defaultValue false
   */
  readonly answerAfterTask?: boolean | undefined;
}

/**
 * The seed's worked example as a scenario: one caller, 30 calls at once, every client kind.
 *
 * @example
 * ```ts
 * const report = await simulate(DEFAULT_SCENARIO);
 * ```
 */
export const DEFAULT_SCENARIO: SimulationScenario = {
  callers: 1,
  callsPerCaller: 30,
  policies: [WORKED_EXAMPLE_POLICY],
  method: 'SendMessage',
  arrival: { kind: 'burst' },
  clients: CLIENT_KINDS,
  seed: 1,
  fixedDelayMs: 1_000,
  taskMs: 1_000,
};

/**
 * Progress of {@link simulate}: a client kind starts or is done (its real time, ms).
 */
export interface SimulationKindEvent {
  readonly kind: ClientKind;
  /** 0-based position of the kind in the scenario. */
  readonly index: number;
  /** Kinds in the scenario. */
  readonly count: number;
  readonly phase: 'start' | 'done';
  /** Real time the kind took, ms (0 at `start`). */
  readonly wallMs: number;
}

/**
 * The result of {@link simulate}: one outcome per client kind, in the scenario's order.
 *
 * @example
 * ```ts
 * const report: SimulationReport = await simulate(DEFAULT_SCENARIO);
 * report.outcomes.map((o) => o.kind);
 * ```
 */
export interface SimulationReport {
  readonly scenario: SimulationScenario;
  readonly outcomes: readonly ClientKindOutcome[];
  /** Real time the simulation took, ms. */
  readonly wallMs: number;
}

/** A hint-blind client: its own delay before retry `retriesSoFar` (0-based), or stop. */
type OwnSchedule = (retriesSoFar: number) => number | undefined;

const NAIVE_RULES: RetrySchedulerOptions = {
  agentDeduplicates: true, // so that a 500 on SendMessage is retried at all
  maxRetries: 4,
  backoffBaseMs: 500,
  budgetMs: 30_000,
};
const HINT_IGNORING_INTERVAL_MS = 250;
const HINT_IGNORING_RETRIES = 10;
const FIXED_RETRIES = 4;
const AGENT = 'simulated-agent';

function ownSchedule(kind: ClientKind, fixedDelayMs: number): OwnSchedule | undefined {
  switch (kind) {
    case 'fixed':
      return (n) => (n < FIXED_RETRIES ? fixedDelayMs : undefined);
    case 'hint-ignoring':
      return (n) =>
        n >= HINT_IGNORING_RETRIES ? undefined : n === 0 ? 0 : HINT_IGNORING_INTERVAL_MS;
    case 'give-up-early':
      return (n) => (n < 1 ? fixedDelayMs : undefined);
    default:
      return undefined;
  }
}

/**
 * Arrival times of every caller's calls, ms, sorted per caller; the same for every client kind.
 *
 * @example
 * ```ts
 * arrivalTimesMs({ kind: 'uniform', overSeconds: 10 }, 2, 3, 1); // [[…3 times…], […3 times…]]
 * ```
 */
export function arrivalTimesMs(
  arrival: ArrivalPattern,
  callers: number,
  callsPerCaller: number,
  seed: number,
): number[][] {
  const random = seededRandom(seed ^ 0x5eed);
  const out: number[][] = [];
  for (let c = 0; c < callers; c++) {
    const times: number[] = [];
    let atMs = 0;
    for (let i = 0; i < callsPerCaller; i++) {
      if (arrival.kind === 'uniform') {
        times.push(Math.floor(random() * arrival.overSeconds * 1000));
      } else if (arrival.kind === 'poisson') {
        atMs += (-Math.log(1 - random()) / arrival.perSecond) * 1000;
        times.push(Math.round(atMs));
      } else {
        times.push(0);
      }
    }
    out.push(times.sort((a, b) => a - b));
  }
  return out;
}

function callerName(index: number, callers: number): string {
  return `caller-${String(index + 1).padStart(String(callers).length, '0')}`;
}

/** Runs a hint-blind client's call: re-sends on its own schedule, never reading the answer. */
async function runOwnSchedule(
  attempt: (attemptIndex: number) => ReturnType<ReturnType<SimulatedAgent['attempt']>>,
  schedule: OwnSchedule,
  vt: VirtualClock,
): Promise<SimulatedResult> {
  for (let attemptIndex = 0; ; attemptIndex++) {
    const outcome = await attempt(attemptIndex);
    if (outcome.ok) return outcome.value;
    const delayMs = schedule(attemptIndex);
    if (delayMs === undefined) {
      return 'value' in outcome.failure ? outcome.failure.value : { admitted: false, status: 0 };
    }
    await vt.sleep(delayMs);
  }
}

/**
 * Runs one client kind on a fresh agent and clock. `arrivals` from {@link arrivalTimesMs}.
 *
 * @example
 * ```ts
 * const arrivals = arrivalTimesMs(DEFAULT_SCENARIO.arrival, 1, 30, 1);
 * const outcome = await simulateClientKind(DEFAULT_SCENARIO, 'ours', arrivals);
 * outcome.admittedOnFirstRetry; // 20
 * ```
 */
export async function simulateClientKind(
  scenario: SimulationScenario,
  kind: ClientKind,
  arrivals: readonly (readonly number[])[],
): Promise<ClientKindOutcome> {
  const vt = createVirtualTime();
  const holds: HoldOptions =
    kind === 'naive' ? { ...scenario.holds, maxHoldsPerKey: 0 } : { ...scenario.holds };
  const totalCalls = scenario.callers * scenario.callsPerCaller;
  const store = new MemoryStore({
    policies: scenario.policies,
    holds,
    clock: vt,
    maxKeys: Math.max(100_000, 2 * scenario.callers),
  });
  const agent = new SimulatedAgent({
    store,
    clock: vt,
    mode: kind === 'naive' ? SIMULATED_AGENT_MODES.bare500 : SIMULATED_AGENT_MODES.rest,
    tasks: {
      durationMs: scenario.taskMs,
      sleep: vt.sleep,
      answerAtEnd: scenario.answerAfterTask === true,
    },
  });
  const schedule = ownSchedule(kind, scenario.fixedDelayMs);
  const card = kind === 'planned' ? await publishedAgentCard(scenario.policies) : undefined;
  const withMessageId =
    scenario.method === 'SendMessage' || scenario.method === 'SendStreamingMessage';
  const tracks: CallTrack[] = [];
  const kindSalt = CLIENT_KINDS.indexOf(kind) + 1;

  const runCaller = async (callerIndex: number, times: readonly number[]): Promise<void> => {
    const caller = callerName(callerIndex, scenario.callers);
    const scheduler =
      schedule === undefined
        ? new RetryScheduler({
            clock: vt,
            sleep: vt.sleep,
            random: seededRandom(scenario.seed * 7919 + callerIndex * 31 + kindSalt),
            ...(kind === 'naive' ? NAIVE_RULES : {}),
          })
        : undefined;
    if (card !== undefined) scheduler?.learnAgentCard(card, { agents: [AGENT] });
    const calls: Promise<void>[] = [];
    for (const [i, arrivalMs] of times.entries()) {
      if (arrivalMs > vt.nowMs()) await vt.sleep(arrivalMs - vt.nowMs());
      const messageId = withMessageId ? `${caller}/m-${i + 1}` : undefined;
      const track: CallTrack = {
        call: `${caller}\u0000${messageId ?? ''}`,
        arrivalMs: vt.nowMs(),
        firstSendMs: Number.NaN,
        admittedAttempt: -1,
        admittedAtMs: Number.NaN,
        endMs: Number.NaN,
      };
      tracks.push(track);
      const send = agent.attempt({ caller, method: scenario.method, messageId });
      const tracked = async (attemptIndex: number) => {
        if (attemptIndex === 0) track.firstSendMs = vt.nowMs();
        const outcome = await send(attemptIndex);
        if (outcome.ok) {
          track.admittedAttempt = attemptIndex;
          track.admittedAtMs = vt.nowMs();
        }
        return outcome;
      };
      const call =
        scheduler === undefined
          ? runOwnSchedule(tracked, schedule as OwnSchedule, vt)
          : scheduler.run({ agent: AGENT, caller, method: scenario.method }, tracked);
      calls.push(
        call.then(
          () => {
            track.endMs = vt.nowMs();
          },
          () => {
            track.endMs = vt.nowMs(); // a typed retry error: the client gave up
          },
        ),
      );
    }
    await Promise.all(calls);
  };

  const done = Promise.all(arrivals.map((times, c) => runCaller(c, times)));
  await vt.runUntilIdle(Math.max(1_000_000, totalCalls * 64));
  await done;
  return summarize(kind, tracks, agent.requests);
}

/**
 * Runs every client kind of `scenario`, one after another, each on its own fresh agent and clock,
 * on the same arrivals. Only sockets and the wall clock are left out, so a run of minutes of
 * traffic takes seconds and is reproducible from the scenario's seed.
 *
 * @example
 * ```ts
 * const report = await simulate({ ...DEFAULT_SCENARIO, callers: 1_000, clients: ['ours', 'naive'] });
 * for (const o of report.outcomes) console.log(o.kind, o.admittedAtOnce, o.abandoned);
 * ```
 */
export async function simulate(
  scenario: SimulationScenario,
  onKind?: (event: SimulationKindEvent) => void,
): Promise<SimulationReport> {
  const started = performance.now();
  const arrivals = arrivalTimesMs(
    scenario.arrival,
    scenario.callers,
    scenario.callsPerCaller,
    scenario.seed,
  );
  const outcomes: ClientKindOutcome[] = [];
  for (const [index, kind] of scenario.clients.entries()) {
    const count = scenario.clients.length;
    const kindStarted = performance.now();
    onKind?.({ kind, index, count, phase: 'start', wallMs: 0 });
    outcomes.push(await simulateClientKind(scenario, kind, arrivals));
    onKind?.({ kind, index, count, phase: 'done', wallMs: performance.now() - kindStarted });
  }
  return { scenario, outcomes, wallMs: performance.now() - started };
}
