/**
 * Our client (`createRetryingFetch` under the SDK's own JSON-RPC and REST clients, one shared
 * `RetryScheduler`) against an agent that follows the spec's examples literally — written here as
 * a small node:http server, not our encoders: a refusal is JSON-RPC HTTP 200 `-32603 "Rate limit
 * exceeded"` with `Retry-After`, or REST 503 with `Retry-After`, from a real token bucket of the
 * worked example (burst 10, 1 per second), and every run is counted per messageId. The worked
 * example (30 SendMessage at once) completes with none abandoned and each message run once; the
 * same agent answering a bare 500 / -32603 without any hint gets no message resent. Real time
 * for the worked example (the first 30 sends must really arrive at once; virtual time would refill
 * the bucket while they are in flight): the two bindings run side by side, about 20 s; only counts
 * are asserted. The bare case resends nothing, so its bucket stands still (a `ManualClock`).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AgentCard } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import type { Clock } from 'a2a-ratelimit';
import { createRetryingFetch, RetryScheduler, retryErrorOf } from 'a2a-ratelimit/client';
import { exampleAgentCard, ManualClock } from 'a2a-ratelimit/testing';
import { describe, expect, it } from 'vitest';
import { userMessage } from './sdk-agent.helpers.js';

/** Real time (the library keeps its own system clock internal). */
const systemClock: Clock = { nowMs: () => Date.now() };

const BINDINGS = ['JSONRPC', 'HTTP+JSON'] as const;
type Mode = 'retry-after' | 'bare';

/** What the spec-literal agent saw. */
interface AgentLog {
  /** Arrivals per messageId (first sends and re-sends). */
  readonly arrivals: Map<string, number>;
  /** Runs per messageId: admitted by the bucket and answered. */
  readonly runs: Map<string, number>;
  refusals: number;
}

/**
 * The worked example's bucket, as a spec-literal agent might keep it: 10 tokens, one more each
 * second; a refused request learns the whole seconds until a token is there (at least 1).
 */
function tokenBucket(clock: Clock, burst = 10, perSecond = 1) {
  let tokens = burst;
  let atMs = clock.nowMs();
  return (): { admitted: true } | { admitted: false; retryAfterSeconds: number } => {
    const nowMs = clock.nowMs();
    tokens = Math.min(burst, tokens + ((nowMs - atMs) / 1000) * perSecond);
    atMs = nowMs;
    if (tokens >= 1) {
      tokens -= 1;
      return { admitted: true };
    }
    return { admitted: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / perSecond)) };
  };
}

async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
}

function reply(messageId: string) {
  return {
    message: {
      messageId: `reply-${messageId}`,
      role: 'ROLE_AGENT',
      parts: [{ text: 'done' }],
    },
  };
}

async function startSpecLiteralAgent(clock: Clock, mode: Mode) {
  const take = tokenBucket(clock);
  const log: AgentLog = { arrivals: new Map(), runs: new Map(), refusals: 0 };
  const send = (
    res: ServerResponse,
    status: number,
    headers: Record<string, string>,
    body: unknown,
  ) =>
    res
      .writeHead(status, { 'content-type': 'application/json', ...headers })
      .end(JSON.stringify(body));

  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const jsonRpc = req.url === '/jsonrpc';
      const params = (jsonRpc ? body.params : body) as { message?: { messageId?: string } };
      const messageId = params.message?.messageId ?? '';
      log.arrivals.set(messageId, (log.arrivals.get(messageId) ?? 0) + 1);
      const decision = take();
      if (decision.admitted) {
        log.runs.set(messageId, (log.runs.get(messageId) ?? 0) + 1);
        if (jsonRpc) send(res, 200, {}, { jsonrpc: '2.0', id: body.id, result: reply(messageId) });
        else send(res, 200, {}, reply(messageId));
        return;
      }
      log.refusals++;
      const hint: Record<string, string> =
        mode === 'retry-after' ? { 'retry-after': String(decision.retryAfterSeconds) } : {};
      if (jsonRpc) {
        // The spec's JSON-RPC example: -32603, inside HTTP 200.
        const error = { code: -32603, message: 'Rate limit exceeded' };
        send(res, 200, hint, { jsonrpc: '2.0', id: body.id, error });
      } else if (mode === 'retry-after') {
        send(res, 503, hint, {
          error: { code: 503, status: 'UNAVAILABLE', message: 'Rate limit exceeded' },
        });
      } else {
        send(res, 500, {}, { error: { code: 500, status: 'INTERNAL', message: 'Internal error' } });
      }
    })().catch(() => res.destroy());
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  const card = exampleAgentCard({
    name: 'spec-literal',
    interfaces: [
      { url: `${base}/jsonrpc`, protocolBinding: 'JSONRPC' },
      { url: `${base}/rest`, protocolBinding: 'HTTP+JSON' },
    ],
  }) as AgentCard;
  return { log, card, close };
}

async function run(binding: (typeof BINDINGS)[number], mode: Mode, agentClock: Clock) {
  const { log, card, close } = await startSpecLiteralAgent(agentClock, mode);
  try {
    const scheduler = new RetryScheduler({ budgetMs: 60_000 });
    const fetchImpl = createRetryingFetch({ scheduler });
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [
          new JsonRpcTransportFactory({ fetchImpl }),
          new RestTransportFactory({ fetchImpl }),
        ],
        preferredTransports: [binding],
      }),
    );
    const client = await factory.createFromAgentCard(card);
    const startMs = Date.now();
    const ids = Array.from({ length: 30 }, (_, i) => `wx-${binding}-${i}`);
    const results = await Promise.allSettled(
      ids.map((id) => client.sendMessage({ message: userMessage(id) } as never)),
    );
    return { log, ids, results, scheduler, elapsedMs: Date.now() - startMs };
  } finally {
    await close();
  }
}

describe.concurrent.each(BINDINGS)(
  'the worked example against a spec-literal %s agent',
  (binding) => {
    it('with Retry-After: all 30 complete, none abandoned, each message run once', async () => {
      const { log, ids, results, scheduler, elapsedMs } = await run(
        binding,
        'retry-after',
        systemClock,
      );
      const completed = results.filter((r) => r.status === 'fulfilled').length;
      const maxSends = Math.max(...log.arrivals.values());
      console.log(
        `[interop-spec-literal] ${binding} Retry-After`,
        JSON.stringify({
          calls: ids.length,
          completed,
          abandoned: ids.length - completed,
          sends: scheduler.stats.sends,
          refusals: log.refusals,
          maxSendsOfOneMessage: maxSends,
          seconds: elapsedMs / 1000,
        }),
      );
      expect(completed).toBe(30);
      for (const id of ids) expect(log.runs.get(id)).toBe(1);
      // The agent's own refusals were re-sent, with the same messageId, well past a retry count.
      expect(log.refusals).toBeGreaterThanOrEqual(20);
      expect(scheduler.stats.sends).toBe(30 + log.refusals);
    }, 90_000);

    it('with a bare 500 / -32603 and no hint: messages are not resent', async () => {
      // Nothing is resent, so the agent's bucket needs no time: stopped, it holds exactly 10 for
      // the 30 (on the real clock, a slow run refilled one more while the sends were arriving).
      const { log, ids, results, scheduler } = await run(binding, 'bare', new ManualClock(0));
      const failed = results.filter((r) => r.status === 'rejected');
      console.log(
        `[interop-spec-literal] ${binding} bare`,
        JSON.stringify({
          calls: ids.length,
          completed: ids.length - failed.length,
          failed: failed.length,
          sends: scheduler.stats.sends,
        }),
      );
      expect(failed).toHaveLength(20);
      for (const id of ids) expect(log.arrivals.get(id)).toBe(1);
      expect(scheduler.stats.retries).toBe(0);
      // The SDK's own error reaches the caller: it is not a limit this client could act on.
      for (const r of failed)
        expect(retryErrorOf((r as PromiseRejectedResult).reason) !== undefined).toBe(false);
    });
  },
);
