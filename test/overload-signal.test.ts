/**
 * The event-loop signal means overload (issue 24): with the README quick start's policies, 30
 * concurrent requests right after start were refused 29/30 as "agent-overload: 500 requests in
 * flight" with at most 30 in flight — the trigger was `maxEventLoopDelayMs` seeing a busy start-up
 * (a single stall), and the message named the wrong limit. Now the limiter's real monitor
 * (`perf_hooks`) is smoothed — nothing during a warm-up, then the median of a window of samples —
 * so neither start-up nor a single stall trips it, a sustained delay does, and every refusal names
 * the signal that fired. Windows scaled down (20 ms samples, 200 ms window and warm-up); the event
 * loop is blocked for real. Assertions are on outcomes, never on times.
 */

import type { AdmissionOutcome } from 'a2a-ratelimit/server';
import { createLimiter, type Limiter } from 'a2a-ratelimit/server';
import { describe, expect, it } from 'vitest';

/**
 * Blocks the event loop for `ms` (a real stall), from the check phase as an I/O callback would
 * (the monitor's histogram does not see a stall inside the timers phase it samples from).
 */
function block(ms: number): Promise<void> {
  return new Promise((resolve) =>
    setImmediate(() => {
      const end = performance.now() + ms;
      while (performance.now() < end) {
        // busy
      }
      resolve();
    }),
  );
}

/** One turn of the timers phase, where the monitor samples. */
const turn = () => new Promise<void>((resolve) => setTimeout(resolve, 1));
const idle = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function ask(limiter: Limiter, caller: string): Promise<AdmissionOutcome> {
  const outcome = await limiter.admit({ caller, method: 'GetTask', binding: 'rest' });
  if (outcome.status === 'admitted') outcome.ticket.end();
  return outcome;
}

describe('the event-loop overload signal', () => {
  it('does not trip at start-up nor on a single stall; trips on sustained delay, naming it', async () => {
    const limiter = createLimiter({
      policies: [
        { name: 'agent-overload', kind: 'overload', maxInFlight: 500, maxEventLoopDelayMs: 100 },
      ],
      domain: 'agents.example.com',
      dedup: false,
      eventLoopDelay: { sampleEveryMs: 20, windowMs: 200, warmUpMs: 200 },
    });
    try {
      // Start-up: a busy loop right away, then 30 requests at once.
      await block(400);
      const first = await Promise.all(Array.from({ length: 30 }, (_, i) => ask(limiter, `c${i}`)));
      expect(first.filter((o) => o.status === 'rejected')).toEqual([]);

      // Past the warm-up, quiet, then one long stall: the next requests are still admitted.
      await idle(600);
      await block(500);
      const afterStall = await Promise.all(
        Array.from({ length: 30 }, (_, i) => ask(limiter, `d${i}`)),
      );
      expect(afterStall.filter((o) => o.status === 'rejected')).toEqual([]);
      await turn();
      expect((await ask(limiter, 'e')).status).toBe('admitted');

      // Sustained delay: the loop blocked 150 ms in every turn until the signal trips.
      let refused: AdmissionOutcome | undefined;
      for (let i = 0; i < 80 && refused === undefined; i++) {
        await block(150);
        await turn();
        const outcome = await ask(limiter, 'f');
        if (outcome.status === 'rejected') refused = outcome;
      }
      expect(refused?.status).toBe('rejected');
      if (refused?.status !== 'rejected') return;
      expect(refused.rejection).toMatchObject({
        kind: 'overload',
        policy: 'agent-overload',
        signal: 'eventLoopDelay',
      });
      expect(refused.rejection.message).toMatch(
        /^Agent overloaded \(agent-overload: event-loop delay \d+ ms over 100 ms\); retry in \d+ s$/,
      );
      expect(refused.rejection.message).not.toContain('in flight');
      // The signal rides in ErrorInfo metadata on the wire too.
      const rest = limiter.encodeRest(refused.rejection, refused.limits);
      expect(rest.status).toBe(503);
      expect(rest.body).toContain('"signal":"eventLoopDelay"');
    } finally {
      await limiter.close();
    }
  });
});
