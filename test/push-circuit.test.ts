/**
 * The circuit per webhook origin, end to end: `RateLimitedPushSender` in virtual time against
 * real webhooks on 127.0.0.1 (two origins: one failing, one healthy). A webhook failing 20 POSTs
 * in a row is left alone for `openMs`, probed once, opened again when the probe fails, closed
 * when it answers; notifications that cannot wait are dropped as `circuit-open`; 429s never open
 * it; the healthy webhook's notifications are delivered at once throughout.
 */

import { type StreamResponse, TaskState } from '@a2a-js/sdk';
import { InMemoryPushNotificationStore } from '@a2a-js/sdk/server';
import { RateLimitedPushSender, type RateLimitedPushSenderOptions } from 'a2a-ratelimit/push';
import { createVirtualTime, seededRandom } from 'a2a-ratelimit/simulation';
import { textMessage } from 'a2a-ratelimit/testing';
import { afterEach, describe, expect, it } from 'vitest';

/** What the sender's hooks report: a drop, a delivery, a circuit's change. */
type PushDrop = Parameters<NonNullable<RateLimitedPushSenderOptions['onDrop']>>[0];
type PushDelivery = Parameters<NonNullable<RateLimitedPushSenderOptions['onDelivered']>>[0];
type PushCircuitEvent = Parameters<NonNullable<RateLimitedPushSenderOptions['onCircuitChange']>>[0];

import {
  callContext,
  countingTransport,
  driveUntil,
  pushConfig,
  startWebhook,
  type WebhookResponder,
} from './push-webhook.helpers.js';

const START_MS = Date.UTC(2026, 0, 1);
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

async function setup(failing: WebhookResponder, options: RateLimitedPushSenderOptions = {}) {
  const vt = createVirtualTime({ startMs: START_MS });
  const bad = await startWebhook({ clock: vt, respond: failing });
  const good = await startWebhook({ clock: vt });
  closers.push(bad.close, good.close);
  const io = countingTransport();
  closers.push(async () => io.transport.close());
  const store = new InMemoryPushNotificationStore();
  const drops: PushDrop[] = [];
  const delivered: PushDelivery[] = [];
  const events: PushCircuitEvent[] = [];
  const logs: string[] = [];
  const sender = new RateLimitedPushSender(store, {
    policy: { allowPrivateNetworks: true },
    transport: io.transport,
    clock: vt,
    sleep: vt.sleep,
    random: seededRandom(11),
    circuit: { failureThreshold: 20, openMs: 30_000 },
    onDrop: (d) => drops.push(d),
    onDelivered: (d) => delivered.push(d),
    onCircuitChange: (e) => events.push(e),
    logger: {
      warn: (m) => logs.push(`warn ${m}`),
      info: (m) => logs.push(`info ${m}`),
    },
    ...options,
  });
  closers.push(() => sender.close());
  const ctx = callContext();
  const register = (taskId: string, url: string) =>
    store.save(taskId, ctx, pushConfig(taskId, url, { scheme: 'Bearer', credentials: 'agent-7' }));
  /** Sends `event` at virtual offset `atMs` (from the start). */
  const timeline: { atMs: number; event: StreamResponse }[] = [];
  const run = async (maxVirtualMs = 600_000) => {
    const sorted = [...timeline].sort((a, b) => a.atMs - b.atMs);
    let emitted = false;
    let done = false;
    void (async () => {
      for (const { atMs, event } of sorted) {
        const waitMs = START_MS + atMs - vt.nowMs();
        if (waitMs > 0) await vt.sleep(waitMs);
        void sender.send(event, ctx);
      }
      emitted = true;
      await sender.drain();
      done = emitted;
    })();
    await driveUntil(vt, io.inFlight, () => done, { maxVirtualMs });
  };
  return { vt, bad, good, sender, drops, delivered, events, logs, register, timeline, run };
}

const originOf = (url: string) => new URL(url).origin;

describe('a circuit per webhook origin', () => {
  it('20 failures in a row: left alone for openMs, probed, opened again, closed when it answers; the healthy webhook is never delayed', async () => {
    let healthyFromMs = Number.POSITIVE_INFINITY;
    const t = await setup((a) =>
      a.atMs >= healthyFromMs
        ? undefined
        : { status: 502, headers: { 'content-type': 'text/html' }, body: '<h1>Bad Gateway</h1>' },
    );
    // 10 tasks to the failing webhook, 10 to the healthy one, updates every 2 s for 70 s.
    for (let i = 0; i < 10; i++) {
      await t.register(`bad-${i}`, t.bad.url);
      await t.register(`good-${i}`, t.good.url);
    }
    for (let step = 0; step < 35; step++) {
      const state = step === 34 ? TaskState.TASK_STATE_COMPLETED : TaskState.TASK_STATE_WORKING;
      for (let i = 0; i < 10; i++) {
        t.timeline.push({
          atMs: step * 2_000 + i * 7,
          event: statusUpdate(`bad-${i}`, step, state),
        });
        t.timeline.push({
          atMs: step * 2_000 + i * 7,
          event: statusUpdate(`good-${i}`, step, state),
        });
      }
    }
    // The failing webhook comes back 65 s in.
    healthyFromMs = START_MS + 65_000;
    await t.run();

    const arrivals = t.bad.arrivals;
    const failures = arrivals.filter((a) => a.status === 502);
    const firstOpen = t.events.find((e) => e.to === 'open');
    expect(firstOpen).toMatchObject({ origin: originOf(t.bad.url), from: 'closed', failures: 20 });
    expect(firstOpen?.lastFailure).toBe('HTTP 502');
    const openedAtMs = (firstOpen?.reopenAtMs ?? 0) - 30_000;
    // Up to 20 + 3 POSTs (those already in flight when the 20th failed), all before it opened.
    const beforeOpen = arrivals.filter((a) => a.atMs <= openedAtMs);
    expect(beforeOpen.length).toBeGreaterThanOrEqual(20);
    expect(beforeOpen.length).toBeLessThanOrEqual(23);
    // Left alone for 30 s, then one probe (alone), 30 s after each failed one, until it answers.
    const closedAt = arrivals.find((a) => a.status === 200)?.atMs ?? 0;
    expect(closedAt).toBeGreaterThanOrEqual(healthyFromMs);
    const failedProbes = arrivals.filter((a) => a.atMs > openedAtMs && a.atMs < closedAt);
    expect(failedProbes.length).toBeGreaterThanOrEqual(1);
    failedProbes.forEach((p, i) => {
      expect(p.atMs).toBe(openedAtMs + 30_000 * (i + 1));
      expect(p.status).toBe(502);
    });
    expect(closedAt).toBe(openedAtMs + 30_000 * (failedProbes.length + 1));
    const probes = [...failedProbes, ...arrivals.filter((a) => a.atMs === closedAt).slice(0, 1)];
    expect(t.events.map((e) => e.to)).toEqual([
      'open',
      'half-open',
      ...failedProbes.flatMap(() => ['open', 'half-open']),
      'closed',
    ]);
    console.log(
      `[push] circuit: ${failures.length} failed POSTs in all (${beforeOpen.length} before it opened at +${((openedAtMs - START_MS) / 1000).toFixed(1)} s), ` +
        `probes at ${probes.map((p) => `+${((p.atMs - START_MS) / 1000).toFixed(1)} s`).join(', ')}, ` +
        `events ${t.events.map((e) => e.to).join(' → ')}, closed at +${((closedAt - START_MS) / 1000).toFixed(1)} s, ` +
        `${t.bad.arrivals.length} POSTs to it vs ${t.good.arrivals.length} to the healthy one`,
    );
    // Every task's final state arrived at both webhooks.
    for (let i = 0; i < 10; i++) {
      for (const [hook, prefix] of [
        [t.bad, 'bad'],
        [t.good, 'good'],
      ] as const) {
        const got = hook.arrivals.filter((a) => a.taskId === `${prefix}-${i}` && a.status === 200);
        expect(got.at(-1)?.state, `${prefix}-${i}`).toBe('TASK_STATE_COMPLETED');
      }
    }
    // The healthy webhook: every notification delivered on its first POST, at once.
    const healthy = t.delivered.filter((d) => d.url === t.good.url);
    expect(healthy).toHaveLength(350);
    expect(healthy.every((d) => d.attempts === 1)).toBe(true);
    expect(Math.max(...healthy.map((d) => d.ageMs))).toBeLessThanOrEqual(10);
    // Said so: one warn per opening, info on half-open and closed, counters.
    const warns = t.logs.filter((l) => l.startsWith('warn'));
    expect(warns).toHaveLength(t.events.filter((e) => e.to === 'open').length);
    expect(warns[0]).toContain(
      `push webhook ${originOf(t.bad.url)}: circuit open after 20 consecutive failed POSTs; nothing sent to it for 30000 ms`,
    );
    expect(t.logs.at(-1)).toBe(
      `info push webhook ${originOf(t.bad.url)}: circuit closed, delivering again`,
    );
    const stats = t.sender.stats();
    expect(stats.circuitOpenings).toBe(warns.length);
    expect(stats.circuitsOpen).toBe(0);
    expect(stats.dropped['circuit-open']).toBe(0); // the default deadline (300 s) outlasts it
  });

  it('notifications that cannot outlast the open circuit are dropped as circuit-open, without a POST', async () => {
    const t = await setup(() => ({ status: 500, body: 'down' }), { deliveryDeadlineMs: 20_000 });
    for (let i = 0; i < 5; i++) await t.register(`bad-${i}`, t.bad.url);
    for (let step = 0; step < 10; step++) {
      for (let i = 0; i < 5; i++) {
        t.timeline.push({
          atMs: step * 3_000 + i,
          event: statusUpdate(
            `bad-${i}`,
            step,
            step === 9 ? TaskState.TASK_STATE_COMPLETED : TaskState.TASK_STATE_WORKING,
          ),
        });
      }
    }
    await t.run();
    const open = t.events.find((e) => e.to === 'open');
    expect(open).toBeDefined();
    const openedAtMs = (open?.reopenAtMs ?? 0) - 30_000;
    const circuitDrops = t.drops.filter((d) => d.reason === 'circuit-open');
    expect(circuitDrops.length).toBeGreaterThan(0);
    // Nothing was sent while it was open, and nobody waited for the deadline to find out.
    expect(
      t.bad.arrivals.filter((a) => a.atMs > openedAtMs && a.atMs < openedAtMs + 30_000),
    ).toEqual([]);
    console.log(
      `[push] circuit with a 20 s deadline: ${t.bad.arrivals.length} POSTs, ${circuitDrops.length} dropped as circuit-open ` +
        `(${circuitDrops.filter((d) => d.attempts === 0).length} never sent), deadline drops ${t.sender.stats().dropped.deadline}`,
    );
    expect(t.sender.stats().dropped['circuit-open']).toBe(circuitDrops.length);
  });

  it('429s with a delay never open it: the webhook is answering', async () => {
    const t = await setup((a) =>
      a.atMs < START_MS + 40_000
        ? { status: 429, headers: { 'retry-after': '1' }, body: '', notBeforeMs: a.atMs + 1_000 }
        : undefined,
    );
    await t.register('t0', t.bad.url);
    t.timeline.push({ atMs: 0, event: statusUpdate('t0', 0, TaskState.TASK_STATE_COMPLETED) });
    await t.run();
    expect(t.bad.arrivals.filter((a) => a.status === 429).length).toBeGreaterThan(20);
    expect(t.events).toEqual([]);
    expect(t.sender.stats()).toMatchObject({ delivered: 1, circuitOpenings: 0 });
  });
});
