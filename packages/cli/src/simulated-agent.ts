/**
 * @module simulated-agent
 * `SimulatedAgent`: a socket-free A2A agent in virtual time on the real decision, encoders and hint
 * extraction.
 */

import type { A2AMethod, Clock, MemoryStore, Policy } from 'a2a-ratelimit';
import {
  encodeRestRejection,
  extractRetryHint,
  rateLimitHeaders,
  readRateLimitHeaders,
} from 'a2a-ratelimit';
import type { Attempt } from 'a2a-ratelimit/client';
import { createLimiter, withRateLimitExtension } from 'a2a-ratelimit/server';
import type { Sleep } from './scaled-time.js';

/**
 * How a {@link SimulatedAgent} answers: `rest` — rejections in our HTTP+JSON encoding, and
 * `RateLimit` / `RateLimit-Policy` on every response; `bare-500` — a rejection is an HTTP 500 with
 * no body and no headers, as a spec-literal agent may send, and successes carry no limit headers.
 *
 * @example
 * ```ts
 * const mode: SimulatedAgentMode = SIMULATED_AGENT_MODES.bare500;
 * ```
 */
export const SIMULATED_AGENT_MODES = { rest: 'rest', bare500: 'bare-500' } as const;

/**
 * One of {@link SIMULATED_AGENT_MODES}.
 */
export type SimulatedAgentMode = (typeof SIMULATED_AGENT_MODES)[keyof typeof SIMULATED_AGENT_MODES];

/**
 * One request as the agent saw it.
 *
 * @example
 * ```ts
 * const rejectedRetries = agent.requests.filter((r: SeenRequest) => r.attemptIndex > 0 && !r.admitted);
 * ```
 */
export interface SeenRequest {
  /** When it arrived, ms on the agent's clock. */
  readonly atMs: number;
  readonly caller: string;
  readonly method: A2AMethod;
  readonly messageId: string | undefined;
  /** 0 for the first send of a call, 1 for its first retry, … (as the client numbered it). */
  readonly attemptIndex: number;
  readonly admitted: boolean;
}

/**
 * What one request returns to the client: admitted or not, and the HTTP status it got.
 */
export interface SimulatedResult {
  readonly admitted: boolean;
  readonly status: number;
}

/**
 * The request a simulated call sends on every attempt (a retry re-sends it unchanged).
 */
export interface SimulatedRequest {
  readonly caller: string;
  readonly method: A2AMethod;
  readonly messageId?: string | undefined;
}

/**
 * Options of {@link SimulatedAgent}.
 *
 * @example
 * ```ts
 * const vt = createVirtualTime();
 * const options: SimulatedAgentOptions = { store, clock: vt, mode: 'rest', tasks: { durationMs: 2_000, sleep: vt.sleep } };
 * ```
 */
export interface SimulatedAgentOptions {
  /** The limiter state; its clock should be `clock`. */
  readonly store: MemoryStore;
  /** Time source for the request log and for `Retry-After` dates. */
  readonly clock: Clock;
  /** How rejections are answered. @defaultValue 'rest' */
  readonly mode?: SimulatedAgentMode | undefined;
  /** ErrorInfo domain of the encoded rejections. @defaultValue 'agents.example.com' */
  readonly domain?: string | undefined;
  /**
   * How long an admitted request keeps its concurrency / overload leases (the task runs), on
   * `sleep`'s time. Without it leases are released as soon as the request is admitted.
   * `answerAtEnd`: the answer comes when the task ends (a blocking SendMessage), not at admission.
   */
  readonly tasks?:
    | { readonly durationMs: number; readonly sleep: Sleep; readonly answerAtEnd?: boolean }
    | undefined;
}

/**
 * An agent in front of a `MemoryStore`, answering through the real encoders and decoding each
 * answer with the real `extractRetryHint`, as a client would on the wire; only the socket is left
 * out. It records every request it sees.
 *
 * @example
 * ```ts
 * const vt = createVirtualTime();
 * const store = new MemoryStore({ policies, clock: vt });
 * const agent = new SimulatedAgent({ store, clock: vt });
 * const scheduler = new RetryScheduler({ clock: vt, sleep: vt.sleep });
 * const done = scheduler.run(
 *   { agent: 'research-agent', caller: 'orchestrator-7', method: 'SendMessage' },
 *   agent.attempt({ caller: 'orchestrator-7', method: 'SendMessage', messageId: 'm-1' }),
 * );
 * await vt.runUntilIdle();
 * (await done).admitted; // true
 * ```
 */
export class SimulatedAgent {
  /** Every request seen, in arrival order. */
  readonly requests: SeenRequest[] = [];
  private readonly store: MemoryStore;
  private readonly clock: Clock;
  private readonly mode: SimulatedAgentMode;
  private readonly domain: string;
  private readonly tasks: SimulatedAgentOptions['tasks'];

  constructor(options: SimulatedAgentOptions) {
    this.store = options.store;
    this.clock = options.clock;
    this.mode = options.mode ?? SIMULATED_AGENT_MODES.rest;
    this.domain = options.domain ?? 'agents.example.com';
    this.tasks = options.tasks;
  }

  /**
   * An attempt function for `RetryScheduler.run` (or any retry loop) that sends `request` every
   * time it is called.
   *
   * @example
   * ```ts
   * const attempt = agent.attempt({ caller: 'a', method: 'SendMessage', messageId: 'm-1' });
   * const outcome = await attempt(0); // { ok: true, … } or { ok: false, hint, … }
   * ```
   */
  attempt(request: SimulatedRequest): Attempt<SimulatedResult> {
    return async (attemptIndex) => {
      const nowMs = this.clock.nowMs();
      const decision = this.store.decideSync({
        caller: request.caller,
        method: request.method,
        messageId: request.messageId,
      });
      this.requests.push({
        atMs: nowMs,
        caller: request.caller,
        method: request.method,
        messageId: request.messageId,
        attemptIndex,
        admitted: decision.admitted,
      });
      if (decision.admitted) {
        if (this.tasks?.answerAtEnd === true) {
          await this.tasks.sleep(this.tasks.durationMs);
          this.store.releaseSync(decision.leases);
        } else if (decision.leases.length > 0) this.endTask(decision.leases);
        // A bare-500 agent says nothing about its limits, on success either.
        return this.mode === SIMULATED_AGENT_MODES.rest
          ? {
              ok: true,
              value: { admitted: true, status: 200 },
              rateLimit: readRateLimitHeaders(rateLimitHeaders(decision.limits), nowMs),
            }
          : { ok: true, value: { admitted: true, status: 200 } };
      }
      const wire =
        this.mode === SIMULATED_AGENT_MODES.rest
          ? encodeRestRejection(decision.rejection, {
              domain: this.domain,
              limits: decision.limits,
            })
          : { status: 500, headers: {}, body: '' };
      const hint = extractRetryHint(
        { kind: 'http', status: wire.status, headers: wire.headers, body: wire.body },
        nowMs,
      );
      return { ok: false, hint, failure: { value: { admitted: false, status: wire.status } } };
    };
  }

  private endTask(leases: Parameters<MemoryStore['releaseSync']>[0]): void {
    if (this.tasks === undefined) {
      this.store.releaseSync(leases);
      return;
    }
    void this.tasks.sleep(this.tasks.durationMs).then(() => this.store.releaseSync(leases));
  }
}

/**
 * The agent card (only its capabilities) an agent with these policies publishes: the production
 * rate-limit extension (`withRateLimitExtension`), rendered by a limiter of its own that decides
 * nothing and is closed before returning.
 *
 * @example
 * ```ts
 * const card = await publishedAgentCard([WORKED_EXAMPLE_POLICY]);
 * scheduler.learnAgentCard(card, { agents: ['research-agent'] });
 * ```
 */
export async function publishedAgentCard(
  policies: readonly Policy[],
  domain = 'agents.example.com',
): Promise<{ readonly capabilities: { readonly extensions: readonly unknown[] } }> {
  const limiter = createLimiter({ policies, domain, eventLoopDelay: false });
  try {
    const card = withRateLimitExtension({ capabilities: { extensions: [] as unknown[] } }, limiter);
    return { capabilities: { extensions: card.capabilities.extensions ?? [] } };
  } finally {
    await limiter.close();
  }
}
