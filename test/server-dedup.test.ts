/**
 * Deduplication outcomes at the limiter, without a transport: a copy of a message whose first
 * copy is still in flight gets a retryable MESSAGE_IN_PROGRESS (never "already processed"); a
 * copy after the first one was rejected is decided afresh; a copy after it ran without a task is
 * told so; and a flood of rejected messages keeps no records.
 */

import { MemoryStore } from 'a2a-ratelimit';
import { createLimiter, type Limiter } from 'a2a-ratelimit/server';
import { WORKED_EXAMPLE_POLICY } from 'a2a-ratelimit/simulation';
import { ManualClock } from 'a2a-ratelimit/testing';
import { afterEach, describe, expect, it } from 'vitest';

const limiters: Limiter[] = [];
afterEach(async () => {
  await Promise.all(limiters.splice(0).map((l) => l.close()));
});

function setup(maxKeys?: number) {
  const clock = new ManualClock(1_760_000_000_000);
  const store = new MemoryStore({
    policies: [WORKED_EXAMPLE_POLICY],
    clock,
    ...(maxKeys === undefined ? {} : { maxKeys }),
  });
  const limiter = createLimiter({
    store,
    clock,
    domain: 'agents.example.com',
    dedup: { waitForTaskMs: 20 },
  });
  limiters.push(limiter);
  const send = (messageId: string) =>
    limiter.admit({ caller: 'orchestrator-7', method: 'SendMessage', messageId, binding: 'rest' });
  return { clock, store, limiter, send };
}

describe('deduplication at the limiter', () => {
  it('a copy while the first is in flight: 503 MESSAGE_IN_PROGRESS, retry in 1 s; after it ended: never run again', async () => {
    const { send } = setup();
    const first = await send('m-1');
    expect(first.status).toBe('admitted');
    const copy = await send('m-1');
    expect(copy).toMatchObject({
      status: 'rejected',
      rejection: {
        kind: 'overload',
        reason: 'MESSAGE_IN_PROGRESS',
        retryAfterMs: 1000,
        scope: 'caller',
      },
    });
    // Without task tracking the limiter cannot tell whether the executor ran: a copy never runs again.
    if (first.status === 'admitted') first.ticket.end();
    expect(await send('m-1')).toEqual({ status: 'duplicate', taskId: undefined });
  });

  it('a copy of a rejected message is decided afresh; a flood of rejected messages evicts no live record', async () => {
    const { clock, store, send } = setup(100);
    for (let i = 0; i < 10; i++) {
      const d = await send(`burst-${i}`);
      if (d.status === 'admitted') d.ticket.end();
    }
    const rejected = await send('late');
    expect(rejected.status).toBe('rejected');
    // A flood of new messageIds, all rejected, spread over 500 ms: their records expire at once.
    for (let i = 0; i < 1000; i++) {
      await send(`flood-${i}`);
      clock.advance(0.5);
    }
    expect(store.stats().messageRecordsEvicted).toBe(0);
    expect(store.stats().messageRecords).toBeLessThanOrEqual(100);
    // The ten admitted messages are still deduplicated after the flood.
    expect(await send('burst-3')).toEqual({ status: 'duplicate', taskId: undefined });
    clock.set(1_760_000_000_000 + 1000);
    // The retry at its slot claims the hold: admitted, not "in progress" nor "already processed".
    expect((await send('late')).status).toBe('admitted');
  });
});
