/**
 * `RateLimitedPushSender` against real webhooks on 127.0.0.1 in virtual time: a webhook limited
 * by our own limiter (MemoryStore + encodeRestRejection, same virtual clock), a webhook that goes
 * down and comes back, a gateway's HTML 502, every delay header shape, timeouts, the queue bound,
 * the deadline, shutdown, and byte-for-byte parity with the SDK's own sender.
 */

import { type StreamResponse, TaskState } from '@a2a-js/sdk';
import {
  DefaultPushNotificationSender,
  InMemoryPushNotificationStore,
  type PushNotificationStore,
} from '@a2a-js/sdk/server';
import { encodeRestRejection } from 'a2a-ratelimit';
import { RateLimitedPushSender, type RateLimitedPushSenderOptions } from 'a2a-ratelimit/push';
import { createVirtualTime, seededRandom, type VirtualClock } from 'a2a-ratelimit/simulation';
import { textMessage } from 'a2a-ratelimit/testing';
import { afterEach, describe, expect, it } from 'vitest';
import {
  callContext,
  countingTransport,
  driveUntil,
  limitedResponder,
  pushConfig,
  startWebhook,
  type WebhookAnswer,
  type WebhookArrival,
  type WebhookResponder,
} from './push-webhook.helpers.js';

/** A dropped notification, as the sender's `onDrop` reports it. */
type PushDrop = Parameters<NonNullable<RateLimitedPushSenderOptions['onDrop']>>[0];

const START_MS = Date.UTC(2026, 0, 1); // whole second: HTTP-dates are exact
const AUTH = { scheme: 'Bearer', credentials: 'agent-7' };
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

function statusUpdate(taskId: string, n: number, state: TaskState): StreamResponse {
  return {
    payload: {
      $case: 'statusUpdate',
      value: {
        taskId,
        contextId: `ctx-${taskId}`,
        status: {
          state,
          message: textMessage({
            messageId: `${taskId}-u${n}`,
            text: `step ${n}`,
            role: 'agent',
            taskId,
            contextId: `ctx-${taskId}`,
          }),
          timestamp: new Date(START_MS + n).toISOString(),
        },
        metadata: undefined,
      },
    },
  } as StreamResponse;
}

function artifactUpdate(taskId: string, n: number): StreamResponse {
  return {
    payload: {
      $case: 'artifactUpdate',
      value: {
        taskId,
        contextId: `ctx-${taskId}`,
        artifact: {
          artifactId: `${taskId}-a${n}`,
          name: 'out',
          description: '',
          parts: [
            {
              content: { $case: 'text', value: `chunk ${n}` },
              metadata: undefined,
              filename: '',
              mediaType: 'text/plain',
            },
          ],
          metadata: undefined,
          extensions: [],
        },
        append: n > 0,
        lastChunk: false,
        metadata: undefined,
      },
    },
  } as StreamResponse;
}

/** A sender, its store and a webhook, all on one virtual clock. */
async function setup(
  respond: (vt: VirtualClock) => WebhookResponder | undefined,
  options: RateLimitedPushSenderOptions = {},
  seed = 7,
) {
  const vt = createVirtualTime({ startMs: START_MS });
  const responder = respond(vt);
  const webhook = await startWebhook({
    clock: vt,
    ...(responder === undefined ? {} : { respond: responder }),
  });
  closers.push(webhook.close);
  const io = countingTransport();
  closers.push(async () => io.transport.close());
  const store = new InMemoryPushNotificationStore();
  const drops: PushDrop[] = [];
  const sender = new RateLimitedPushSender(store, {
    policy: { allowPrivateNetworks: true },
    transport: io.transport,
    logger: false,
    clock: vt,
    sleep: vt.sleep,
    random: seededRandom(seed),
    onDrop: (d) => drops.push(d),
    ...options,
  });
  closers.push(() => sender.close());
  const ctx = callContext();
  const register = (taskId: string, url = webhook.url) =>
    store.save(taskId, ctx, pushConfig(taskId, url, AUTH));
  return { vt, webhook, io, store, sender, drops, ctx, register };
}

/** Sends `events[i]` at virtual offset `atMs[i]`; resolves when all were handed to the sender. */
function emit(
  vt: VirtualClock,
  sender: RateLimitedPushSender,
  ctx: ReturnType<typeof callContext>,
  timeline: { atMs: number; event: StreamResponse }[],
): Promise<void> {
  const sorted = [...timeline].sort((a, b) => a.atMs - b.atMs);
  const startMs = vt.nowMs();
  return (async () => {
    for (const { atMs, event } of sorted) {
      const waitMs = startMs + atMs - vt.nowMs();
      if (waitMs > 0) await vt.sleep(waitMs);
      void sender.send(event, ctx);
    }
  })();
}

/** Runs until the emitter is done and the sender has nothing left. */
async function runToIdle(
  vt: VirtualClock,
  io: { inFlight: () => number },
  sender: RateLimitedPushSender,
  emitted: Promise<void>,
  maxVirtualMs = 600_000,
) {
  let done = false;
  void emitted
    .then(() => sender.drain())
    .then(() => {
      done = true;
    });
  await driveUntil(vt, io.inFlight, () => done, { maxVirtualMs });
}

/** Every refused POST was repeated no earlier than the time the webhook gave. */
function expectNoEarlyRetry(arrivals: readonly WebhookArrival[]) {
  let checked = 0;
  arrivals.forEach((a, i) => {
    if (a.notBeforeMs === undefined) return;
    const next = arrivals.slice(i + 1).find((b) => b.bodyText === a.bodyText);
    if (next === undefined) return;
    expect(next.atMs, `${a.taskId}/${a.messageId}`).toBeGreaterThanOrEqual(a.notBeforeMs);
    checked++;
  });
  return checked;
}

describe('RateLimitedPushSender against a rate-limited webhook', () => {
  it.each([
    ['silent until it refuses', false],
    ['announcing RateLimit on every 200', true],
  ] as const)(
    '100 tasks × 20 status updates into 5 POSTs/s (%s): all final states, in order, never early, ≤ 700 POSTs',
    async (label, announceOnSuccess) => {
      const { vt, webhook, io, sender, drops, ctx, register } = await setup((vt) =>
        limitedResponder(vt, { limit: 5, windowSeconds: 1, burst: 5 }, { announceOnSuccess }),
      );
      const random = seededRandom(42);
      const timeline: { atMs: number; event: StreamResponse }[] = [];
      for (let t = 0; t < 100; t++) {
        const taskId = `task-${String(t).padStart(3, '0')}`;
        await register(taskId);
        // 20 updates within 2 s, in order, at random instants.
        const offsets = Array.from({ length: 20 }, () => Math.floor(random() * 2_000)).sort(
          (a, b) => a - b,
        );
        offsets.forEach((atMs, n) => {
          const state = n === 19 ? TaskState.TASK_STATE_COMPLETED : TaskState.TASK_STATE_WORKING;
          timeline.push({ atMs, event: statusUpdate(taskId, n, state) });
        });
      }
      const realStart = performance.now();
      await runToIdle(vt, io, sender, emit(vt, sender, ctx, timeline));
      const realMs = performance.now() - realStart;

      const arrivals = webhook.arrivals;
      const stats = sender.stats();
      const delivered = arrivals.filter((a) => a.status === 200);
      const refused = arrivals.filter((a) => a.status === 429);
      console.log(
        `[push] 100×20 updates, webhook ${label} → ${arrivals.length} POSTs (${delivered.length} delivered, ${refused.length} refused with 429), ` +
          `${stats.dropped.coalesced} coalesced, virtual ${((vt.nowMs() - START_MS) / 1000).toFixed(1)} s, real ${(realMs / 1000).toFixed(1)} s`,
      );

      expect(arrivals.length).toBeLessThanOrEqual(700);
      expect(stats.posts).toBe(arrivals.length);
      // Every task's final state arrived, and arrived last; delivered updates kept their order.
      for (let t = 0; t < 100; t++) {
        const taskId = `task-${String(t).padStart(3, '0')}`;
        const got = delivered.filter((a) => a.taskId === taskId);
        const steps = got.map((a) => Number(a.messageId.split('-u')[1]));
        expect(steps, taskId).toEqual([...steps].sort((a, b) => a - b));
        expect(new Set(steps).size, taskId).toBe(steps.length);
        expect(got.at(-1)?.state, taskId).toBe('TASK_STATE_COMPLETED');
        expect(steps.at(-1), taskId).toBe(19);
      }
      // No POST came back before the delay the webhook gave it.
      expect(expectNoEarlyRetry(arrivals)).toBe(refused.length);
      // Nothing lost but intermediate status updates, each accounted for.
      expect(stats.accepted).toBe(2_000);
      expect(stats.delivered).toBe(delivered.length);
      expect(stats.delivered + stats.dropped.coalesced + stats.dropped['queue-full']).toBe(2_000);
      expect(stats.dropped.deadline + stats.dropped['retries-exhausted']).toBe(0);
      expect(drops.every((d) => d.state !== TaskState.TASK_STATE_COMPLETED)).toBe(true);
      // Same content type and credentials as the SDK's sender on every POST.
      expect(new Set(arrivals.map((a) => a.headers['content-type']))).toEqual(
        new Set(['application/a2a+json']),
      );
      expect(new Set(arrivals.map((a) => a.headers.authorization))).toEqual(
        new Set(['Bearer agent-7']),
      );
    },
  );

  it('closes the gate for every task: no new POST while the webhook’s delay runs', async () => {
    const { vt, webhook, io, sender, ctx, register } = await setup((vt) =>
      limitedResponder(vt, { limit: 1, windowSeconds: 2, burst: 1 }),
    );
    const timeline: { atMs: number; event: StreamResponse }[] = [];
    for (let t = 0; t < 6; t++) {
      await register(`t${t}`);
      timeline.push({ atMs: 0, event: statusUpdate(`t${t}`, 0, TaskState.TASK_STATE_COMPLETED) });
    }
    await runToIdle(vt, io, sender, emit(vt, sender, ctx, timeline));
    const arrivals = webhook.arrivals;
    expect(arrivals.filter((a) => a.status === 200)).toHaveLength(6);
    expectNoEarlyRetry(arrivals);
    // After the first refusal, a notification that was never refused arrives only at or after the
    // refusal's time (it waited in the gate instead of finding out for itself).
    const firstRefusal = arrivals.find((a) => a.notBeforeMs !== undefined);
    expect(firstRefusal).toBeDefined();
    const refusedBodies = new Set(
      arrivals.filter((a) => a.notBeforeMs !== undefined).map((a) => a.bodyText),
    );
    for (const a of arrivals) {
      if (refusedBodies.has(a.bodyText) || a.atMs <= (firstRefusal?.atMs ?? 0)) continue;
      expect(a.atMs).toBeGreaterThanOrEqual(firstRefusal?.notBeforeMs ?? 0);
    }
    // 1 per 2 s: six deliveries take at least 10 s.
    const okTimes = arrivals.filter((a) => a.status === 200).map((a) => a.atMs);
    expect(Math.max(...okTimes) - Math.min(...okTimes)).toBeGreaterThanOrEqual(10_000);
  });
});

/** Refuses the first POST of every notification with `answer`, then accepts. */
function refuseFirst(answer: (arrival: WebhookArrival) => WebhookAnswer): WebhookResponder {
  const seen = new Set<string>();
  return (arrival) => {
    if (seen.has(arrival.bodyText)) return undefined;
    seen.add(arrival.bodyText);
    return answer(arrival);
  };
}

describe('every delay shape a webhook may use', () => {
  const shapes: [string, (vt: VirtualClock) => WebhookResponder][] = [
    [
      '429 Retry-After: seconds',
      () =>
        refuseFirst((a) => ({
          status: 429,
          headers: { 'retry-after': '3' },
          body: '',
          notBeforeMs: a.atMs + 3_000,
        })),
    ],
    [
      '429 Retry-After: HTTP-date',
      (vt) =>
        refuseFirst(() => {
          const atMs = Math.ceil((vt.nowMs() + 4_000) / 1000) * 1000;
          return {
            status: 429,
            headers: { 'retry-after': new Date(atMs).toUTCString() },
            body: 'slow down',
            notBeforeMs: atMs,
          };
        }),
    ],
    [
      '429 RateLimit only',
      () =>
        refuseFirst((a) => ({
          status: 429,
          headers: { ratelimit: '"hook";r=0;t=2', 'ratelimit-policy': '"hook";q=10;w=60' },
          body: '',
          notBeforeMs: a.atMs + 2_000,
        })),
    ],
    [
      '503 RetryInfo only',
      () =>
        refuseFirst((a) => {
          const wire = encodeRestRejection(
            {
              kind: 'overload',
              retryAfterMs: 5_000,
              policy: 'hook-capacity',
              scope: 'agent',
              subject: 'agent',
              method: 'SendMessage',
              message: 'webhook busy',
            },
            { domain: 'hooks.example.com' },
          );
          const { 'retry-after': _dropped, ...headers } = wire.headers;
          return { status: wire.status, headers, body: wire.body, notBeforeMs: a.atMs + 5_000 };
        }),
    ],
  ];

  it.each(shapes)(
    '%s: re-sent unchanged, not before the webhook’s time',
    async (_name, respond) => {
      const { vt, webhook, io, sender, ctx, register } = await setup(respond);
      const timeline: { atMs: number; event: StreamResponse }[] = [];
      for (let t = 0; t < 5; t++) {
        await register(`t${t}`);
        timeline.push({
          atMs: t * 100,
          event: statusUpdate(`t${t}`, 0, TaskState.TASK_STATE_WORKING),
        });
        timeline.push({ atMs: 1_000, event: artifactUpdate(`t${t}`, 0) });
        timeline.push({
          atMs: 1_500,
          event: statusUpdate(`t${t}`, 1, TaskState.TASK_STATE_COMPLETED),
        });
      }
      await runToIdle(vt, io, sender, emit(vt, sender, ctx, timeline));
      const arrivals = webhook.arrivals;
      const refusals = arrivals.filter((a) => a.notBeforeMs !== undefined);
      expect(refusals.length).toBeGreaterThan(0);
      expect(expectNoEarlyRetry(arrivals)).toBe(refusals.length);
      for (let t = 0; t < 5; t++) {
        const got = arrivals.filter((a) => a.taskId === `t${t}` && a.status === 200);
        expect(got.map((a) => a.kind)).toEqual(['statusUpdate', 'artifactUpdate', 'statusUpdate']);
        expect(got.at(-1)?.state).toBe('TASK_STATE_COMPLETED');
      }
      expect(sender.stats().delivered).toBe(15);
    },
  );
});

describe('a webhook that fails', () => {
  it('down for 10 s, then back: everything is delivered after recovery, within the deadline', async () => {
    const { vt, webhook, io, sender, ctx, register } = await setup(() => undefined, {
      deliveryDeadlineMs: 60_000,
    });
    await webhook.down();
    const timeline: { atMs: number; event: StreamResponse }[] = [];
    for (let t = 0; t < 10; t++) {
      await register(`t${t}`);
      for (let n = 0; n < 5; n++) {
        const state = n === 4 ? TaskState.TASK_STATE_COMPLETED : TaskState.TASK_STATE_WORKING;
        timeline.push({ atMs: n * 400 + t * 10, event: statusUpdate(`t${t}`, n, state) });
      }
      timeline.push({ atMs: 900, event: artifactUpdate(`t${t}`, 0) });
    }
    let upAt: number | undefined;
    let done = false;
    void emit(vt, sender, ctx, timeline)
      .then(() => sender.drain())
      .then(() => {
        done = true;
      });
    await driveUntil(vt, io.inFlight, () => done, {
      onTick: async () => {
        if (upAt === undefined && vt.nowMs() >= START_MS + 10_000) {
          upAt = vt.nowMs();
          await webhook.up();
        }
      },
    });
    const stats = sender.stats();
    console.log(
      `[push] webhook down 10 s: ${stats.posts} POSTs (${stats.posts - webhook.arrivals.length} refused connections), delivered ${stats.delivered}, ` +
        `last delivery at +${((Math.max(...webhook.arrivals.map((a) => a.atMs)) - START_MS) / 1000).toFixed(1)} s`,
    );
    expect(upAt).toBeDefined();
    expect(webhook.arrivals.every((a) => a.atMs >= (upAt ?? 0))).toBe(true);
    for (let t = 0; t < 10; t++) {
      const got = webhook.arrivals.filter((a) => a.taskId === `t${t}`);
      expect(got.map((a) => a.kind)).toContain('artifactUpdate');
      expect(got.at(-1)?.state).toBe('TASK_STATE_COMPLETED');
    }
    expect(stats.dropped.deadline + stats.dropped['retries-exhausted']).toBe(0);
    expect(Math.max(...webhook.arrivals.map((a) => a.atMs)) - START_MS).toBeLessThan(60_000);
    // While down, at most `maxConcurrentPerWebhook` (4) notifications were tried, with backoff.
    expect(stats.posts - webhook.arrivals.length).toBeLessThanOrEqual(4 * 12);
  });

  it('HTML 502 from a gateway: backs off, no crash, delivers once it passes', async () => {
    const { vt, webhook, io, sender, ctx, register } = await setup(
      () => (a) =>
        a.atMs < START_MS + 5_000
          ? {
              status: 502,
              headers: { 'content-type': 'text/html' },
              body: '<html><body><h1>502 Bad Gateway</h1></body></html>',
            }
          : undefined,
    );
    await register('t0');
    const timeline = [0, 1, 2].map((n) => ({
      atMs: n * 10,
      event: statusUpdate(
        't0',
        n,
        n === 2 ? TaskState.TASK_STATE_COMPLETED : TaskState.TASK_STATE_WORKING,
      ),
    }));
    await runToIdle(vt, io, sender, emit(vt, sender, ctx, timeline));
    const arrivals = webhook.arrivals;
    const bad = arrivals.filter((a) => a.status === 502);
    expect(bad.length).toBeGreaterThanOrEqual(3);
    // The same notification, re-sent with growing (jittered) gaps, never hammered.
    const gaps = bad.slice(1).map((a, i) => a.atMs - (bad[i]?.atMs ?? 0));
    expect(gaps.every((g) => g > 0)).toBe(true);
    expect(new Set(bad.map((a) => a.bodyText)).size).toBe(1);
    expect(bad.length).toBeLessThanOrEqual(12);
    const ok = arrivals.filter((a) => a.status === 200);
    expect(ok.map((a) => a.messageId)).toEqual(['t0-u0', 't0-u2']); // u1 coalesced into u2
    expect(sender.stats().dropped.coalesced).toBe(1);
  });

  it('a POST that gets no answer times out and is re-sent', async () => {
    let hung = false;
    const { vt, webhook, io, sender, ctx, register } = await setup(
      () => () => {
        if (hung) return undefined;
        hung = true;
        return { status: 0, hang: true };
      },
      { postTimeoutMs: 300 },
    );
    await register('t0');
    await runToIdle(
      vt,
      io,
      sender,
      emit(vt, sender, ctx, [
        { atMs: 0, event: statusUpdate('t0', 0, TaskState.TASK_STATE_COMPLETED) },
      ]),
    );
    expect(webhook.arrivals).toHaveLength(2);
    expect(webhook.arrivals[1]?.status).toBe(200);
    expect(sender.stats()).toMatchObject({ posts: 2, retries: 1, delivered: 1 });
  });

  it('a final answer (404) drops the notification, the next one still goes', async () => {
    const { vt, webhook, io, sender, drops, ctx, register } = await setup(
      () => (a) => (a.messageId === 't0-u0' ? { status: 404, body: 'no such hook' } : undefined),
    );
    await register('t0');
    const timeline = [
      { atMs: 0, event: statusUpdate('t0', 0, TaskState.TASK_STATE_WORKING) },
      { atMs: 0, event: artifactUpdate('t0', 0) },
      { atMs: 0, event: statusUpdate('t0', 1, TaskState.TASK_STATE_COMPLETED) },
    ];
    await runToIdle(vt, io, sender, emit(vt, sender, ctx, timeline));
    expect(webhook.arrivals.map((a) => [a.messageId, a.status])).toEqual([
      ['t0-u0', 404],
      ['t0-a0', 200],
      ['t0-u1', 200],
    ]);
    expect(drops.map((d) => [d.reason, d.status, d.attempts])).toEqual([['rejected', 404, 1]]);
  });
});

describe('bounds', () => {
  it('a full queue drops the oldest non-terminal status updates first, counted and reported', async () => {
    const { vt, webhook, io, sender, drops, ctx, register } = await setup(
      // Closed for the first 30 s: every POST is told to come back at +30 s.
      () => (a) =>
        a.atMs < START_MS + 30_000
          ? {
              status: 429,
              headers: { 'retry-after': String(Math.ceil((START_MS + 30_000 - a.atMs) / 1000)) },
              body: '',
              notBeforeMs: START_MS + 30_000,
            }
          : undefined,
      { maxQueuedPerWebhook: 10, maxConcurrentPerWebhook: 2 },
    );
    const timeline: { atMs: number; event: StreamResponse }[] = [];
    for (let t = 0; t < 20; t++) {
      await register(`t${t}`);
      timeline.push({ atMs: 100, event: statusUpdate(`t${t}`, 0, TaskState.TASK_STATE_WORKING) });
      timeline.push({ atMs: 200, event: artifactUpdate(`t${t}`, 0) });
      timeline.push({ atMs: 300, event: statusUpdate(`t${t}`, 1, TaskState.TASK_STATE_COMPLETED) });
    }
    await runToIdle(vt, io, sender, emit(vt, sender, ctx, timeline));
    const stats = sender.stats();
    expect(stats.dropped['queue-full']).toBeGreaterThan(0);
    const full = drops.filter((d) => d.reason === 'queue-full');
    expect(full).toHaveLength(stats.dropped['queue-full']);
    expect(
      full.every((d) => d.kind === 'statusUpdate' && d.state === TaskState.TASK_STATE_WORKING),
    ).toBe(true);
    // Terminal states and artifacts all arrived, in order per task.
    for (let t = 0; t < 20; t++) {
      const got = webhook.arrivals.filter((a) => a.taskId === `t${t}` && a.status === 200);
      expect(got.slice(-2).map((a) => a.kind)).toEqual(['artifactUpdate', 'statusUpdate']);
      expect(got.at(-1)?.state).toBe('TASK_STATE_COMPLETED');
    }
    expect(stats.accepted).toBe(
      stats.delivered + stats.dropped['queue-full'] + stats.dropped.coalesced,
    );
  });

  it('the delivery deadline drops what cannot be delivered in time, and stops POSTing', async () => {
    const { vt, webhook, io, sender, drops, ctx, register } = await setup(
      () => (a) => ({
        status: 503,
        headers: { 'retry-after': '2' },
        body: '',
        notBeforeMs: a.atMs + 2_000,
      }),
      { deliveryDeadlineMs: 9_000 },
    );
    await register('t0');
    await runToIdle(
      vt,
      io,
      sender,
      emit(vt, sender, ctx, [
        { atMs: 0, event: statusUpdate('t0', 0, TaskState.TASK_STATE_COMPLETED) },
      ]),
    );
    expect(drops.map((d) => d.reason)).toEqual(['deadline']);
    expect(webhook.arrivals.length).toBeGreaterThanOrEqual(3);
    expect(Math.max(...webhook.arrivals.map((a) => a.atMs)) - START_MS).toBeLessThan(9_000);
    expect(expectNoEarlyRetry(webhook.arrivals)).toBe(webhook.arrivals.length - 1);
  });
});

describe('isolation and shutdown', () => {
  it('never throws into the SDK: failing store, bad URL, throwing hooks', async () => {
    const errors: unknown[] = [];
    const failing: PushNotificationStore = {
      save: async () => {},
      load: async () => {
        throw new Error('store down');
      },
      delete: async () => {},
    };
    const sender = new RateLimitedPushSender(failing, { onError: (e) => errors.push(e) });
    await expect(
      sender.send(statusUpdate('t0', 0, TaskState.TASK_STATE_WORKING), callContext()),
    ).resolves.toBeUndefined();
    expect(errors).toHaveLength(1);
    expect(sender.stats().errors).toBe(1);

    const store = new InMemoryPushNotificationStore();
    const ctx = callContext();
    await store.save('t1', ctx, pushConfig('t1', 'not a url', AUTH));
    const loud = new RateLimitedPushSender(store, {
      onDrop: () => {
        throw new Error('metrics broke');
      },
    });
    await loud.send(statusUpdate('t1', 0, TaskState.TASK_STATE_COMPLETED), ctx);
    await loud.drain();
    expect(loud.stats().dropped.refused).toBe(1);
    expect(loud.stats().posts).toBe(0);
    await loud.send({ payload: undefined } as StreamResponse, ctx); // malformed: ignored
    await loud.close();
  });

  it('close() aborts waits and POSTs, drops the queue as closed, ignores later sends', async () => {
    const { vt, webhook, io, sender, drops, ctx, register } = await setup(
      () => () => ({ status: 0, hang: true }),
      { maxConcurrentPerWebhook: 1 },
    );
    await register('t0');
    void sender.send(statusUpdate('t0', 0, TaskState.TASK_STATE_WORKING), ctx);
    void sender.send(artifactUpdate('t0', 0), ctx);
    await driveUntil(
      vt,
      () => 0,
      () => webhook.arrivals.length === 1,
      { maxVirtualMs: 1_000 },
    );
    expect(io.inFlight()).toBe(1);
    await sender.close();
    expect(io.inFlight()).toBe(0);
    expect(drops.map((d) => [d.kind, d.reason]).sort()).toEqual([
      ['artifactUpdate', 'closed'],
      ['statusUpdate', 'closed'],
    ]);
    await sender.send(statusUpdate('t0', 1, TaskState.TASK_STATE_COMPLETED), ctx);
    expect(sender.stats().accepted).toBe(2);
  });
});

describe('parity with the SDK sender', () => {
  it.each([
    ['authentication', AUTH],
    ['legacy token', { token: 'tok-123' }],
  ] as const)(
    'same body, media type and %s header as DefaultPushNotificationSender',
    async (_n, auth) => {
      const webhook = await startWebhook({ clock: { nowMs: () => Date.now() } });
      closers.push(webhook.close);
      const store = new InMemoryPushNotificationStore();
      const ctx = callContext();
      await store.save('t0', ctx, pushConfig('t0', webhook.url, auth));
      const events = [
        statusUpdate('t0', 0, TaskState.TASK_STATE_WORKING),
        artifactUpdate('t0', 0),
        statusUpdate('t0', 1, TaskState.TASK_STATE_COMPLETED),
      ];
      const sdk = new DefaultPushNotificationSender(store);
      const info = console.info;
      console.info = () => {};
      try {
        for (const e of events) await sdk.send(e, ctx);
      } finally {
        console.info = info;
      }
      const ours = new RateLimitedPushSender(store, { policy: { allowPrivateNetworks: true } });
      closers.push(() => ours.close());
      for (const e of events) await ours.send(e, ctx);
      await ours.drain();
      const pick = (a: WebhookArrival) => ({
        body: a.bodyText,
        contentType: a.headers['content-type'],
        authorization: a.headers.authorization,
        token: a.headers['x-a2a-notification-token'],
        method: a.body === undefined ? undefined : 'POST',
      });
      const [sdkSide, ourSide] = [webhook.arrivals.slice(0, 3), webhook.arrivals.slice(3)];
      expect(ourSide.map(pick)).toEqual(sdkSide.map(pick));
      expect(ourSide[0]?.headers['content-type']).toBe('application/a2a+json');
    },
  );
});
