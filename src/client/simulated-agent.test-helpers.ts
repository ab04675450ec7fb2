/**
 * @module simulated-agent.test-helpers
 * An in-process agent for client tests in virtual time: the real decision (`MemoryStore`), the
 * real wire encoders, and the real `extractRetryHint` on the encoded bytes — only the socket is
 * left out. Records every request it sees. `mode` picks the answer to a rejection: our REST
 * encoding, or a spec-literal bare HTTP 500.
 */

import type { A2AMethod } from '../core/a2a-methods.js';
import type { Clock } from '../core/clock.js';
import type { MemoryStore } from '../store/memory-store.js';
import { extractRetryHint } from '../wire/extract-retry-hint.js';
import { rateLimitHeaders, readRateLimitHeaders } from '../wire/ratelimit-headers.js';
import { encodeRestRejection } from '../wire/rest-rejection.js';
import type { Attempt } from './retry-scheduler.js';

/** One request as the agent saw it. */
export interface SeenRequest {
  readonly atMs: number;
  readonly caller: string;
  readonly method: A2AMethod;
  readonly messageId: string | undefined;
  readonly attemptIndex: number;
  readonly admitted: boolean;
}

/** What a call returns to the test. */
export interface SimulatedResult {
  readonly admitted: boolean;
  readonly status: number;
}

/** An agent in front of a `MemoryStore`. */
export class SimulatedAgent {
  readonly requests: SeenRequest[] = [];
  private readonly store: MemoryStore;
  private readonly clock: Clock;
  private readonly mode: 'rest' | 'bare-500';

  constructor(options: { store: MemoryStore; clock: Clock; mode?: 'rest' | 'bare-500' }) {
    this.store = options.store;
    this.clock = options.clock;
    this.mode = options.mode ?? 'rest';
  }

  /** An attempt function for `RetryScheduler.run` that sends this request every time. */
  attempt(request: {
    caller: string;
    method: A2AMethod;
    messageId?: string;
  }): Attempt<SimulatedResult> {
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
        return {
          ok: true,
          value: { admitted: true, status: 200 },
          rateLimit: readRateLimitHeaders(rateLimitHeaders(decision.limits), nowMs),
        };
      }
      const wire =
        this.mode === 'rest'
          ? encodeRestRejection(decision.rejection, {
              domain: 'agents.example.com',
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
}

/** A seeded uniform [0, 1) generator (mulberry32), for reproducible jitter. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
