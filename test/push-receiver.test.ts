/**
 * `pushWebhookRateLimit` in front of a real Express webhook on 127.0.0.1: the sender is known
 * only by the credential it was given (unknown or missing → 401, a made-up header changes
 * nothing), each sending agent has its own bucket, a refusal is our 429 (Retry-After, RateLimit,
 * RateLimit-Policy, google.rpc ErrorInfo + RetryInfo + QuotaFailure) and the body reaches the
 * handler parsed. Then the scenario: a webhook taking 5 POSTs/s (burst 5) behind the
 * middleware, our `RateLimitedPushSender` in front of it, in virtual time: every final state
 * arrives, no POST arrives before the delay it was given.
 */

import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type StreamResponse, TaskState } from '@a2a-js/sdk';
import { InMemoryPushNotificationStore } from '@a2a-js/sdk/server';
import type { Clock } from 'a2a-ratelimit';
import { extractRetryHint } from 'a2a-ratelimit';
import { pushWebhookPolicy, pushWebhookRateLimit, RateLimitedPushSender } from 'a2a-ratelimit/push';
import { createLimiter } from 'a2a-ratelimit/server';
import { createVirtualTime, seededRandom } from 'a2a-ratelimit/simulation';
import { textMessage } from 'a2a-ratelimit/testing';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { callContext, countingTransport, driveUntil, pushConfig } from './push-webhook.helpers.js';

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const TOKENS = new Map([
  ['tok-research', 'research-agent'],
  ['tok-billing', 'billing-agent'],
]);

interface Arrival {
  readonly atMs: number;
  bodyText: string;
  status: number;
  retryAfterSeconds?: number;
}

/** A webhook: a recorder, the middleware, the handler. */
async function startReceiver(options: {
  clock: Clock;
  rate: { limit: number; windowSeconds: number; burst?: number };
  parseFirst?: boolean;
}) {
  const arrivals: Arrival[] = [];
  const handled: { body: unknown }[] = [];
  const guard = pushWebhookRateLimit({
    identifySender: (c) => TOKENS.get(c.kind === 'token' ? c.token : c.credentials),
    rate: options.rate,
    domain: 'client.example.com',
    clock: options.clock,
  });
  closers.push(() => guard.close());
  const app = express();
  app.post(
    '/hook',
    (req, res, next) => {
      const arrival: Arrival = { atMs: options.clock.nowMs(), bodyText: '', status: 0 };
      arrivals.push(arrival);
      res.on('finish', () => {
        arrival.bodyText = JSON.stringify((req as { body?: unknown }).body ?? null);
        arrival.status = res.statusCode;
        const retryAfter = res.getHeader('retry-after');
        if (retryAfter !== undefined) arrival.retryAfterSeconds = Number(retryAfter);
      });
      next();
    },
    ...(options.parseFirst
      ? [express.json({ type: ['application/json', 'application/a2a+json'] })]
      : []),
    guard,
    (req, res) => {
      handled.push({ body: req.body });
      res.status(200).json({});
    },
  );
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return { url, arrivals, handled };
}

const post = (url: string, headers: Record<string, string>, body: unknown = { n: Math.random() }) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/a2a+json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('pushWebhookRateLimit', () => {
  it('knows the sender only by its credential: none, unknown or a made-up header → 401, nothing counted', async () => {
    const r = await startReceiver({
      clock: { nowMs: () => Date.now() },
      rate: { limit: 1, windowSeconds: 60 },
    });
    for (const headers of [
      {},
      { authorization: 'Bearer not-ours' },
      { 'x-a2a-notification-token': 'not-ours' },
      { 'x-a2a-sender': 'research-agent', 'x-agent-id': 'research-agent' },
      { authorization: 'Bearer' },
    ]) {
      const res = await post(r.url, headers);
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect(await res.json()).toEqual({
        error: {
          code: 401,
          status: 'UNAUTHENTICATED',
          message: 'push notification from an unknown sender',
        },
      });
    }
    expect(r.handled).toEqual([]);
    // Nothing was charged: the one allowed notification still goes.
    expect((await post(r.url, { 'x-a2a-notification-token': 'tok-research' })).status).toBe(200);
  });

  it('one bucket per sending agent; over it, our 429 with Retry-After, RateLimit and a google.rpc body', async () => {
    const r = await startReceiver({
      clock: { nowMs: () => Date.now() },
      rate: { limit: 5, windowSeconds: 60, burst: 5 },
    });
    const research = { authorization: 'Bearer tok-research' };
    for (let i = 0; i < 5; i++) {
      const ok = await post(r.url, research);
      expect(ok.status).toBe(200);
      expect(ok.headers.get('ratelimit-policy')).toBe('"push-per-agent";q=5;w=60');
      expect(ok.headers.get('ratelimit')).toMatch(
        new RegExp(`^"push-per-agent";r=${4 - i};t=\\d+$`),
      );
    }
    const refused = await post(r.url, research);
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get('ratelimit')).toBe(`"push-per-agent";r=0;t=${retryAfter}`);
    expect(refused.headers.get('content-type')).toContain('application/a2a+json');
    const text = await refused.text();
    const body = JSON.parse(text) as {
      error: { code: number; status: string; details: { '@type': string }[] };
    };
    expect(body.error).toMatchObject({ code: 429, status: 'RESOURCE_EXHAUSTED' });
    expect(body.error.details.map((d) => d['@type'].split('.').at(-1))).toEqual([
      'ErrorInfo',
      'RetryInfo',
      'QuotaFailure',
    ]);
    expect(body.error.details[0]).toMatchObject({
      reason: 'RATE_LIMIT_EXCEEDED',
      domain: 'client.example.com',
      metadata: { policy: 'push-per-agent', scope: 'caller' },
    });
    // Any client of this library reads the same delay out of it.
    const hint = extractRetryHint(
      { kind: 'http', status: 429, headers: refused.headers, body: text },
      Date.now(),
    );
    expect(hint).toMatchObject({
      kind: 'quota',
      delayMs: retryAfter * 1000,
      policy: 'push-per-agent',
    });
    // The other agent has its own bucket (legacy token this time).
    expect((await post(r.url, { 'x-a2a-notification-token': 'tok-billing' })).status).toBe(200);
    expect(r.handled).toHaveLength(6);
  });

  it('leaves the body parsed for the handler, or uses the one an earlier parser left', async () => {
    for (const parseFirst of [false, true]) {
      const r = await startReceiver({
        clock: { nowMs: () => Date.now() },
        rate: { limit: 10, windowSeconds: 60 },
        parseFirst,
      });
      const res = await post(
        r.url,
        { authorization: 'Bearer tok-research' },
        { statusUpdate: { taskId: 't1' } },
      );
      expect(res.status).toBe(200);
      expect(r.handled).toEqual([{ body: { statusUpdate: { taskId: 't1' } } }]);
    }
  });

  it('refuses bodies it cannot read: too large (413), not JSON (400)', async () => {
    const r = await startReceiver({
      clock: { nowMs: () => Date.now() },
      rate: { limit: 10, windowSeconds: 60 },
    });
    const big = await post(
      r.url,
      { authorization: 'Bearer tok-research' },
      `"${'x'.repeat(1_100_000)}"`,
    );
    expect(big.status).toBe(413);
    const bad = await post(r.url, { authorization: 'Bearer tok-research' }, '{not json');
    expect(bad.status).toBe(400);
    expect(r.handled).toEqual([]);
  });

  it('takes a limiter of your own (e.g. over a shared store) with pushWebhookPolicy', async () => {
    const limiter = createLimiter({
      policies: [pushWebhookPolicy({ limit: 2, windowSeconds: 60, name: 'hooks' })],
      domain: 'client.example.com',
      dedup: false,
      eventLoopDelay: false,
    });
    closers.push(() => limiter.close());
    const guard = pushWebhookRateLimit({ identifySender: () => 'research-agent', limiter });
    expect(guard.limiter).toBe(limiter);
    const app = express();
    app.post('/hook', guard, (_req, res) => res.sendStatus(204));
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await post(url, { authorization: 'Bearer t' })).status);
    expect(statuses).toEqual([204, 204, 429]);
    await guard.close(); // not ours to close: the limiter still decides
    expect((await post(url, { authorization: 'Bearer t' })).headers.get('ratelimit-policy')).toBe(
      '"hooks";q=2;w=60',
    );
  });

  it('needs identifySender and a rate or a limiter', () => {
    expect(() => pushWebhookRateLimit({} as never)).toThrow(/identifySender/);
    expect(() => pushWebhookRateLimit({ identifySender: () => 'a' })).toThrow(/rate/);
    expect(() =>
      pushWebhookRateLimit({
        identifySender: () => 'a',
        rate: { limit: 0, windowSeconds: 1 },
        domain: 'x.example',
      }),
    ).toThrow(/limit/);
  });
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
          }),
          timestamp: new Date(n).toISOString(),
        },
        metadata: undefined,
      },
    },
  } as StreamResponse;
}

describe('our sender behind the middleware (5 POSTs/s, burst 5)', () => {
  it.each([
    ['one sender, 16 POSTs in flight at once', 1, 16],
    ['two replicas of the agent, same credential, each learning alone', 2, 4],
  ] as const)(
    '%s: every final state arrives; no POST arrives before the delay it was given',
    async (label, replicas, concurrency) => {
      const vt = createVirtualTime({ startMs: Date.UTC(2026, 0, 1) });
      const r = await startReceiver({ clock: vt, rate: { limit: 5, windowSeconds: 1, burst: 5 } });
      const io = countingTransport();
      closers.push(() => io.transport.close());
      const store = new InMemoryPushNotificationStore();
      const senders = Array.from({ length: replicas }, (_, i) => {
        const sender = new RateLimitedPushSender(store, {
          policy: { allowPrivateNetworks: true }, // the webhook is on 127.0.0.1
          transport: io.transport,
          clock: vt,
          sleep: vt.sleep,
          random: seededRandom(5 + i),
          maxConcurrentPerWebhook: concurrency,
          logger: false,
        });
        closers.push(() => sender.close());
        return sender;
      });
      const ctx = callContext();
      const TASKS = 40;
      const UPDATES = 10;
      for (let t = 0; t < TASKS; t++) {
        await store.save(
          `t${t}`,
          ctx,
          pushConfig(`t${t}`, r.url, { scheme: 'Bearer', credentials: 'tok-research' }),
        );
      }
      const random = seededRandom(9);
      const timeline: { atMs: number; event: StreamResponse; sender: RateLimitedPushSender }[] = [];
      for (let t = 0; t < TASKS; t++) {
        const sender = senders[t % replicas] as RateLimitedPushSender;
        // All tasks start at once (their first update at 0), then work for up to 2 s.
        const offsets = Array.from({ length: UPDATES }, (_, n) =>
          n === 0 ? 0 : Math.floor(random() * 2_000),
        ).sort((a, b) => a - b);
        offsets.forEach((atMs, n) => {
          const state =
            n === UPDATES - 1 ? TaskState.TASK_STATE_COMPLETED : TaskState.TASK_STATE_WORKING;
          timeline.push({ atMs, event: statusUpdate(`t${t}`, n, state), sender });
        });
      }
      timeline.sort((a, b) => a.atMs - b.atMs);
      const startMs = vt.nowMs();
      let done = false;
      void (async () => {
        for (const { atMs, event, sender } of timeline) {
          const waitMs = startMs + atMs - vt.nowMs();
          if (waitMs > 0) await vt.sleep(waitMs);
          void sender.send(event, ctx);
        }
        await Promise.all(senders.map((s) => s.drain()));
        done = true;
      })();
      await driveUntil(vt, io.inFlight, () => done, { maxVirtualMs: 300_000 });

      const refused = r.arrivals.filter((a) => a.status === 429);
      const admitted = r.arrivals.filter((a) => a.status === 200);
      expect(refused.length).toBeGreaterThan(0); // the delays below are really tested
      // No POST came back before the delay it was given.
      let maxDelaySeconds = 0;
      let firstResendAdmitted = 0;
      for (const [i, a] of r.arrivals.entries()) {
        if (a.status !== 429) continue;
        const notBeforeMs = a.atMs + (a.retryAfterSeconds ?? Number.NaN) * 1000;
        const again = r.arrivals.slice(i + 1).find((b) => b.bodyText === a.bodyText);
        expect(again, a.bodyText).toBeDefined();
        expect(again?.atMs).toBeGreaterThanOrEqual(notBeforeMs);
        if (again?.status === 200) firstResendAdmitted++;
        maxDelaySeconds = Math.max(maxDelaySeconds, a.retryAfterSeconds ?? 0);
      }
      // Every task's final state reached the handler, last.
      for (let t = 0; t < TASKS; t++) {
        const got = r.handled
          .map((h) => h.body as { statusUpdate?: { taskId?: string; status?: { state?: string } } })
          .filter((b) => b.statusUpdate?.taskId === `t${t}`);
        expect(got.at(-1)?.statusUpdate?.status?.state, `t${t}`).toBe('TASK_STATE_COMPLETED');
      }
      // Never more than the limit let through: in any 1 s, at most burst + rate admitted.
      const times = admitted.map((a) => a.atMs);
      for (const t0 of times) {
        expect(times.filter((t) => t >= t0 && t < t0 + 1_000).length).toBeLessThanOrEqual(10);
      }
      const stats = senders.map((s) => s.stats());
      const sum = (pick: (x: (typeof stats)[number]) => number) =>
        stats.reduce((n, x) => n + pick(x), 0);
      expect(sum((x) => x.delivered)).toBe(admitted.length);
      expect(sum((x) => x.delivered + x.dropped.coalesced)).toBe(TASKS * UPDATES);
      expect(sum((x) => x.posts)).toBe(r.arrivals.length);
      console.log(
        `[push] receiver 5/s burst 5, ${label}, ${TASKS}×${UPDATES} updates: ${r.arrivals.length} POSTs (${admitted.length} admitted, ` +
          `${refused.length} refused with 429, ${firstResendAdmitted} of them admitted on the first re-send, longest Retry-After ${maxDelaySeconds} s), ` +
          `${sum((x) => x.dropped.coalesced)} coalesced, last delivery at +${((Math.max(...times) - startMs) / 1000).toFixed(1)} s`,
      );
    },
  );
});
