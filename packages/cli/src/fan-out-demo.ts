/**
 * @module fan-out-demo
 * `runFanOut`: one run of the demo's fan-out — a research agent on loopback, an orchestrator's 30
 * calls at once — counted.
 */

import { SendMessageRequest } from '@a2a-js/sdk';
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import type { Policy } from 'a2a-ratelimit';
import {
  createRetryingFetch,
  RetryScheduler,
  type RetrySchedulerOptions,
} from 'a2a-ratelimit/client';
import { createRetryInterceptor } from 'a2a-ratelimit/client/grpc';
import { RATE_LIMIT_EXTENSION_URI } from 'a2a-ratelimit/server';
import { WORKED_EXAMPLE_POLICY } from 'a2a-ratelimit/simulation';
import { type CallOutcomeCounts, countAttempts, type SeenAttempt } from './call-outcomes.js';
import { CARD_BINDING_NAMES, type CliBinding } from './cli-options.js';
import {
  type AgentRequestEvent,
  type ResearchAgent,
  startResearchAgent,
} from './research-agent.js';
import { createScaledTime, type ScaledTime } from './scaled-time.js';

/**
 * The runs of the demo: our encoding with our client, a bare 500 over plain GCRA with a naive
 * backoff client, and our encoding with our client planning from the agent's card.
 *
 * @example
 * ```ts
 * const kind: DemoRunKind = DEMO_RUN_KINDS.naive;
 * ```
 */
export const DEMO_RUN_KINDS = { ours: 'ours', naive: 'naive', planned: 'planned' } as const;

/**
 * One of {@link DEMO_RUN_KINDS}.
 */
export type DemoRunKind = (typeof DEMO_RUN_KINDS)[keyof typeof DEMO_RUN_KINDS];

/**
 * The naive client of the worked example: our scheduler with full-jitter backoff (base 0.5 s),
 * 4 retries, a 30 s budget, and SendMessage retried after a 500 (the agent deduplicates).
 *
 * @example
 * ```ts
 * createRetryingFetch({ ...NAIVE_CLIENT_RULES, clock, sleep });
 * ```
 */
export const NAIVE_CLIENT_RULES = {
  agentDeduplicates: true,
  maxRetries: 4,
  backoffBaseMs: 500,
  budgetMs: 30_000,
} as const satisfies RetrySchedulerOptions;

/**
 * The caller the orchestrator authenticates as (`Authorization: Bearer orchestrator-7`).
 *
 * @example
 * ```ts
 * ORCHESTRATOR_CALLER; // 'orchestrator-7'
 * ```
 */
export const ORCHESTRATOR_CALLER = 'orchestrator-7';

/**
 * What one run produced. Counts are per call (messageId) unless named otherwise; times are on the
 * demo's clock (scaled), seconds.
 */
export interface FanOutResult extends CallOutcomeCounts {
  /** `totalSeconds` in real seconds. */
  readonly realSeconds: number;
  /** Most of the agent's tasks that worked at once. */
  readonly peakTasksRunning: number;
}

/**
 * Live counters of a run, for a progress display.
 */
export interface FanOutProgress {
  readonly kind: DemoRunKind;
  readonly calls: number;
  /** Calls that ended (admitted or abandoned). */
  readonly settled: number;
  /** Requests the agent admitted. */
  readonly admitted: number;
  /** Requests the agent rejected. */
  readonly rejected: number;
  /** Requests the agent saw. */
  readonly requests: number;
  /** Seconds on the demo's clock since the fan-out. */
  readonly elapsedSeconds: number;
}

/**
 * Options of {@link runFanOut}.
 */
export interface FanOutOptions {
  readonly kind: DemoRunKind;
  readonly binding: CliBinding;
  /** How many times faster than real time both sides run; default 1. */
  readonly timeScale?: number;
  /** Calls sent at once; default 30. */
  readonly calls?: number;
  /** The agent's policies; default the worked example's (`WORKED_EXAMPLE_POLICY`). */
  readonly policies?: readonly Policy[];
  /** How long each task works, ms on the demo's clock; default 0 (it completes at once). */
  readonly taskMs?: number;
  /** Called whenever a counter changes. */
  readonly onProgress?: (progress: FanOutProgress) => void;
}

/** The orchestrator's SDK client, and the scheduler it runs on (one for all its transports). */
interface Orchestrator {
  readonly client: Client;
  readonly scheduler: RetryScheduler;
}

async function createOrchestrator(
  agent: ResearchAgent,
  binding: CliBinding,
  kind: DemoRunKind,
  time: ScaledTime,
): Promise<Orchestrator> {
  const extension = agent.card.capabilities?.extensions.find(
    (e) => e.uri === RATE_LIMIT_EXTENSION_URI,
  );
  const deduplicates =
    (extension?.params as { deduplicatesMessageIds?: unknown } | undefined)
      ?.deduplicatesMessageIds === true;
  const rules: RetrySchedulerOptions =
    kind === 'naive' ? NAIVE_CLIENT_RULES : { agentDeduplicates: deduplicates };
  const scheduler = new RetryScheduler({ ...rules, clock: time.clock, sleep: time.sleep });
  const fetchImpl = createRetryingFetch({ scheduler });
  const transports =
    binding === 'grpc'
      ? [
          new GrpcTransportFactory({
            grpcCallOptions: {
              interceptors: [createRetryInterceptor({ scheduler, agent: agent.grpcTarget })],
            },
          }),
        ]
      : [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })];
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports,
      preferredTransports: [CARD_BINDING_NAMES[binding]],
      // The planned client's card comes through its own fetch, which learns the policies.
      ...(kind === 'planned' ? { cardResolver: new DefaultAgentCardResolver({ fetchImpl }) } : {}),
    }),
  );
  return { client: await factory.createFromUrl(agent.baseUrl), scheduler };
}

/**
 * The agent-side counts, each call's requests numbered in the order the agent saw them; a first
 * send after the fan-out instant `startMs` was held back by the client (paced).
 */
function summarize(
  events: readonly AgentRequestEvent[],
  messageIds: readonly string[],
  startMs: number,
): ReturnType<typeof countAttempts> {
  const calls = new Set(messageIds);
  const seen = new Map<string, number>();
  const attempts: SeenAttempt[] = [];
  for (const event of events) {
    const call = event.messageId;
    if (call === undefined || !calls.has(call)) continue;
    const attemptIndex = seen.get(call) ?? 0;
    seen.set(call, attemptIndex + 1);
    attempts.push({
      call,
      attemptIndex,
      admitted: event.outcome !== 'rejected',
      paced: attemptIndex === 0 && event.atMs > startMs,
    });
  }
  return countAttempts(attempts);
}

/**
 * Runs one fan-out: starts its agent on loopback (any free ports), sends the calls at once,
 * waits for every call to end, stops the agent and returns the counts. What the agent saw is
 * counted on the server side, per messageId.
 *
 * @example
 * ```ts
 * const ours = await runFanOut({ kind: 'ours', binding: 'jsonrpc', timeScale: 10 });
 * ours.admittedOnFirstRetry; // 20
 * ```
 */
export async function runFanOut(options: FanOutOptions): Promise<FanOutResult> {
  const calls = options.calls ?? 30;
  const time = createScaledTime(options.timeScale ?? 1);
  const events: AgentRequestEvent[] = [];
  const runId = `${options.kind}-${Date.now().toString(36)}`;
  const messageIds = Array.from({ length: calls }, (_, i) => `${runId}-${i + 1}`);
  let settled = 0;
  const firstSends = new Set<string>();
  let startMs = time.clock.nowMs();
  /** Calls the client holds back before their first send (a planned client's queue). */
  let heldByClient = (): number => 0;
  let watch: ReturnType<typeof setInterval> | undefined;
  // Every call's first send has been decided, or is held by the client: let time run.
  const resumeWhenFannedOut = (): void => {
    if (firstSends.size + heldByClient() < calls) return;
    time.resume();
    clearInterval(watch);
  };
  const report = (): void => {
    if (options.onProgress === undefined) return;
    let admitted = 0;
    for (const e of events) if (e.outcome !== 'rejected') admitted++;
    options.onProgress({
      kind: options.kind,
      calls,
      settled,
      admitted,
      rejected: events.length - admitted,
      requests: events.length,
      elapsedSeconds: (time.clock.nowMs() - startMs) / 1000,
    });
  };
  const agent = await startResearchAgent({
    policies: options.policies ?? [WORKED_EXAMPLE_POLICY],
    task: { durationMs: options.taskMs ?? 0, sleep: time.sleep },
    clock: time.clock,
    domain: 'research.example.com',
    metrics: false,
    ...(options.kind === 'naive'
      ? { encoding: 'bare-500' as const, holds: { maxHoldsPerKey: 0 } }
      : { encoding: 'ours' as const }),
    onRequest: (event) => {
      if (event.method !== 'SendMessage') return;
      events.push(event);
      if (event.messageId !== undefined) firstSends.add(event.messageId);
      resumeWhenFannedOut();
      report();
    },
  });
  try {
    const { client, scheduler } = await createOrchestrator(
      agent,
      options.binding,
      options.kind,
      time,
    );
    heldByClient = () => scheduler.waiting;
    const auth = { serviceParameters: { authorization: `Bearer ${ORCHESTRATOR_CALLER}` } };
    // "30 calls at once": the clock stands still until the agent has seen every call's first send
    // or the client holds it back (a planned client's queue), so a busy machine cannot spread the
    // fan-out over a scaled second and change the outcome.
    time.freeze();
    const thaw = setTimeout(() => time.resume(), 5_000);
    // Calls reach the client's queue without the agent seeing anything: look every millisecond.
    watch = setInterval(resumeWhenFannedOut, 1);
    startMs = time.clock.nowMs();
    const realStartMs = performance.now();
    report();
    const outcomes = await Promise.allSettled(
      messageIds.map((messageId, i) =>
        client
          .sendMessage(
            SendMessageRequest.fromJSON({
              message: {
                messageId,
                role: 'ROLE_USER',
                parts: [{ text: `topic ${i + 1} of the fan-out` }],
              },
            }),
            auth,
          )
          .finally(() => {
            settled++;
            report();
          }),
      ),
    );
    clearTimeout(thaw);
    clearInterval(watch);
    time.resume();
    const totalSeconds = (time.clock.nowMs() - startMs) / 1000;
    const realSeconds = (performance.now() - realStartMs) / 1000;
    return {
      calls,
      ...summarize(events, messageIds, startMs),
      abandoned: outcomes.filter((o) => o.status === 'rejected').length,
      totalSeconds: Math.round(totalSeconds * 10) / 10,
      realSeconds: Math.round(realSeconds * 100) / 100,
      peakTasksRunning: agent.tasks.peak,
    };
  } finally {
    await agent.close();
  }
}
