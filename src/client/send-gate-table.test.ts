import { describe, expect, it } from 'vitest';
import { createVirtualTime } from '../testing/virtual-time.js';
import type { RetryHint } from '../wire/retry-hint.js';
import type { AttemptOutcome } from './retry-scheduler.js';
import { RetryScheduler } from './retry-scheduler.js';

/** An agent that refuses with "retry in `delayMs`", naming `policy`. */
function refused(policy: string, delayMs: number) {
  const hint: RetryHint = { kind: 'quota', delayMs, delaySource: 'ratelimit', policy };
  return async (): Promise<AttemptOutcome<string>> => ({
    ok: false,
    hint,
    failure: { value: 'refused' },
  });
}

function setup(maxGates = 1_000) {
  const vt = createVirtualTime();
  // No retries: a refused call ends at once, the wait it learned stays in its gate.
  const scheduler = new RetryScheduler({
    clock: vt,
    sleep: vt.sleep,
    maxRetries: 0,
    maxHintedRetries: 0,
    maxGates,
  });
  const call = (agent: string, attempt: () => Promise<AttemptOutcome<string>>) =>
    scheduler.run({ agent, caller: 'me', method: 'SendMessage' }, attempt).catch(() => 'failed');
  return { vt, scheduler, call };
}

describe('SendGateTable against hostile agents', () => {
  it("3,000 agents each asking for 30 s do not push a legitimate agent's own 30 s wait out", async () => {
    const { vt, scheduler, call } = setup();
    await call('legit', refused('per-caller', 30_000));
    for (let i = 0; i < 3_000; i++) await call(`hostile-${i}`, refused('per-caller', 30_000));
    // Past maxGates only by the 3,001 gates holding a live wait (and the one just used).
    expect(scheduler.gates.size).toBeLessThanOrEqual(3_002);

    let sentAtMs: number | undefined;
    const next = scheduler.run(
      { agent: 'legit', caller: 'me', method: 'SendMessage' },
      async () => {
        sentAtMs = vt.nowMs();
        return { ok: true, value: 'ok' };
      },
    );
    await vt.advance(29_999);
    expect(sentAtMs).toBeUndefined();
    await vt.advance(1);
    expect(await next).toBe('ok');
    expect(sentAtMs).toBe(30_000);

    // Holds that ended are dropped at the next new gate: the table is back within maxGates.
    await vt.advance(1_000);
    await call('newcomer', async () => ({ ok: true, value: 'ok' }));
    expect(scheduler.gates.size).toBeLessThanOrEqual(1_000);
  });

  it('idle gates go first, least recently used; a live hold is never dropped to make room', async () => {
    const { vt, scheduler, call } = setup(10);
    await call('held', refused('p', 30_000));
    for (let i = 0; i < 50; i++) await call(`idle-${i}`, async () => ({ ok: true, value: 'ok' }));
    expect(scheduler.gates.size).toBeLessThanOrEqual(10);
    let sent = false;
    void scheduler.run({ agent: 'held', caller: 'me', method: 'SendMessage' }, async () => {
      sent = true;
      return { ok: true, value: 'ok' };
    });
    await vt.advance(29_999);
    expect(sent).toBe(false);
    await vt.advance(1);
    expect(sent).toBe(true);
  });

  it('one agent naming a new policy in every refusal mints at most maxGroupsPerCaller + 1 gates, and its waits still hold', async () => {
    const { vt, scheduler, call } = setup();
    // 500 calls at once, each refused naming a policy never seen before.
    await Promise.all(
      Array.from({ length: 500 }, (_, i) => call('minting', refused(`policy-${i}`, 30_000))),
    );
    expect(scheduler.gates.size).toBeLessThanOrEqual(33 + 1); // + the SendMessage gate
    let sentAtMs: number | undefined;
    const next = scheduler.run(
      { agent: 'minting', caller: 'me', method: 'SendMessage' },
      async () => {
        sentAtMs = vt.nowMs();
        return { ok: true, value: 'ok' };
      },
    );
    await vt.advance(29_999);
    expect(sentAtMs).toBeUndefined();
    await vt.advance(1);
    expect(await next).toBe('ok');
    expect(sentAtMs).toBe(30_000);
  });
});
