/**
 * @module http.bench
 * `tsx bench/http.bench.ts`: what admission costs an Express A2A agent.
 * (a) In-process: JSON-RPC requests driven through an Express app without sockets (fake
 *     IncomingMessage / ServerResponse), for no limiter, ours (`jsonRpcAdmission`, a limit never
 *     reached), express-rate-limit and a rate-limiter-flexible middleware; extra µs per request
 *     over the baseline. Interleaved rounds, medians.
 * (b) Loopback: a real SDK JSON-RPC SendMessage server (echo executor) with and without our
 *     admission, driven by a keep-alive node:http load loop with 10 connections from a worker
 *     thread; interleaved rounds, median requests per second.
 * Prints one line per round and one JSON object as the last line.
 */

import { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Socket } from 'node:net';
import { Worker } from 'node:worker_threads';
import type { AgentCard } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultExecutionEventBusManager,
  DefaultRequestHandler,
  InMemoryTaskStore,
} from '@a2a-js/sdk/server';
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express, { type RequestHandler } from 'express';
import { rateLimit } from 'express-rate-limit';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import type { Policy } from '../src/core/policy.js';
import { jsonRpcAdmission } from '../src/server/express.js';
import { createLimiter } from '../src/server/limiter.js';
import { exampleAgentCard } from '../src/testing/example-agent-card.js';
import { textMessage } from '../src/testing/text-message.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 400);
const LOOP_ROUND_MS = Number(process.env.BENCH_LOOP_ROUND_MS ?? 1500);
const CONNECTIONS = 10;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

const policies: Policy[] = [
  {
    name: 'per-caller',
    kind: 'rate',
    scope: 'caller',
    methods: ['SendMessage', 'SendStreamingMessage'],
    limit: 1_000_000,
    windowSeconds: 3600,
    burst: 1_000_000,
  },
];

// ---------------------------------------------------------------------------------------------
// (a) In-process cost.

const BODY = (i: number) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: i,
    method: 'SendMessage',
    params: { message: { messageId: `m-${i}`, role: 'ROLE_USER', parts: [{ text: 'hello' }] } },
  });

function appWith(middleware: RequestHandler[]): express.Express {
  const app = express();
  app.set('etag', false);
  app.set('x-powered-by', false);
  app.use('/a2a/jsonrpc', ...middleware, express.json(), (_req, res) => {
    res.end('{}');
  });
  return app;
}

/** Drives one request through `app` without a socket; resolves when the response ends. */
function drive(app: express.Express, i: number): Promise<void> {
  const body = Buffer.from(BODY(i));
  // A readable socket and `complete` once the body is read, as Node's HTTP parser sets them:
  // body-parser uses them to skip a body that was already read.
  const socket = new Socket();
  Object.defineProperty(socket, 'readable', { value: true });
  const req = new IncomingMessage(socket);
  req.once('end', () => {
    req.complete = true;
  });
  req.method = 'POST';
  req.url = '/a2a/jsonrpc';
  req.headers = {
    'content-type': 'application/json',
    'content-length': String(body.length),
    'a2a-version': '1.0',
  };
  req.push(body);
  req.push(null);
  const res = new ServerResponse(req);
  return new Promise<void>((resolve, reject) => {
    res.end = ((..._args: unknown[]) => {
      res.emit('close');
      resolve();
      return res;
    }) as typeof res.end;
    (
      app as unknown as { handle: (q: unknown, s: unknown, done: (e?: unknown) => void) => void }
    ).handle(req, res, (error) => (error ? reject(error) : reject(new Error('not handled'))));
  });
}

async function microsPerRequest(app: express.Express, start: number): Promise<number> {
  let n = 0;
  const t0 = process.hrtime.bigint();
  const budget = BigInt(ROUND_MS) * 1_000_000n;
  let elapsed = 0n;
  while (elapsed < budget) {
    for (let k = 0; k < 200; k++) await drive(app, start + n++);
    elapsed = process.hrtime.bigint() - t0;
  }
  return Number(elapsed) / 1000 / n;
}

function inProcessApps(): Record<'baseline' | 'ours' | 'erl' | 'rlf', express.Express> {
  // Deduplication off here: the peers do not deduplicate (the loopback run keeps it on).
  const limiter = createLimiter({
    policies,
    domain: 'bench.example.com',
    eventLoopDelay: false,
    dedup: false,
  });
  const rlf = new RateLimiterMemory({ points: 1_000_000_000, duration: 60 });
  const rlfMiddleware: RequestHandler = (_req, res, next) => {
    rlf.consume('k').then(
      () => next(),
      () => {
        res.status(429).end();
      },
    );
  };
  return {
    baseline: appWith([]),
    ours: appWith([jsonRpcAdmission(limiter, { identify: () => 'k' })]),
    erl: appWith([
      rateLimit({
        windowMs: 60_000,
        limit: 1_000_000_000,
        keyGenerator: () => 'k',
        standardHeaders: 'draft-8',
        legacyHeaders: false,
      }),
    ]),
    rlf: appWith([rlfMiddleware]),
  };
}

// ---------------------------------------------------------------------------------------------
// (b) Loopback SDK server.

function card(url: string): AgentCard {
  return exampleAgentCard({ name: 'bench', interfaces: [{ url, protocolBinding: 'JSONRPC' }] });
}

const echo: AgentExecutor = {
  async execute(ctx, bus) {
    bus.publish(
      AgentEvent.message(
        textMessage({
          messageId: `r-${ctx.userMessage.messageId}`,
          text: 'echo',
          role: 'agent',
          contextId: ctx.contextId,
        }),
      ),
    );
    bus.finished();
  },
  async cancelTask() {},
};

async function sdkServer(
  withLimiter: boolean,
): Promise<{ port: number; close: () => Promise<void> }> {
  const app = express();
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  const agentCard = card(`http://127.0.0.1:${port}/a2a/jsonrpc`);
  // With the limiter, the setup the README gives: task tracking and deduplication on.
  const limiter = withLimiter ? createLimiter({ policies, card: agentCard }) : undefined;
  const requestHandler = new DefaultRequestHandler(
    agentCard,
    new InMemoryTaskStore(),
    echo,
    limiter?.trackTasks(new DefaultExecutionEventBusManager()),
  );
  if (limiter !== undefined) {
    app.use(
      '/a2a/jsonrpc',
      jsonRpcAdmission(limiter, { userBuilder: UserBuilder.noAuthentication, requestHandler }),
    );
  }
  app.use(
    '/a2a/jsonrpc',
    jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }),
  );
  return {
    port,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await limiter?.close();
    },
  };
}

const LOAD_WORKER = `
const { parentPort } = require('node:worker_threads');
const http = require('node:http');
const agents = new Map();
let seq = 0;
parentPort.on('message', ({ port, ms, connections }) => {
  let agent = agents.get(port);
  if (!agent) { agent = new http.Agent({ keepAlive: true, maxSockets: connections }); agents.set(port, agent); }
  let done = 0, failed = 0;
  const end = Date.now() + ms;
  const one = () => new Promise((resolve) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: ++seq, method: 'SendMessage',
      params: { message: { messageId: 'w-' + port + '-' + seq, role: 'ROLE_USER', parts: [{ text: 'hi' }] } } });
    const req = http.request({ host: '127.0.0.1', port, path: '/a2a/jsonrpc', method: 'POST', agent,
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'content-length': Buffer.byteLength(body) } },
      (res) => { res.resume(); res.on('end', () => { if (res.statusCode === 200) done++; else failed++; resolve(); }); });
    req.on('error', () => { failed++; resolve(); });
    req.end(body);
  });
  const loop = async () => { while (Date.now() < end) await one(); };
  const t0 = Date.now();
  Promise.all(Array.from({ length: connections }, loop)).then(() => {
    parentPort.postMessage({ rps: done / ((Date.now() - t0) / 1000), failed });
  });
});
`;

function runLoad(
  worker: Worker,
  port: number,
  ms: number,
): Promise<{ rps: number; failed: number }> {
  return new Promise((resolve) => {
    worker.once('message', resolve);
    worker.postMessage({ port, ms, connections: CONNECTIONS });
  });
}

async function main(): Promise<void> {
  // (a)
  const apps = inProcessApps();
  const names = ['baseline', 'ours', 'erl', 'rlf'] as const;
  const samples: Record<(typeof names)[number], number[]> = {
    baseline: [],
    ours: [],
    erl: [],
    rlf: [],
  };
  for (const name of names) await microsPerRequest(apps[name], 0); // warm up
  let counter = 1_000_000;
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    for (const name of order) {
      const us = await microsPerRequest(apps[name], counter);
      counter += 1_000_000;
      samples[name].push(us);
    }
    console.log(
      `in-process round ${round + 1}: ${names.map((n) => `${n} ${samples[n].at(-1)?.toFixed(2)} µs`).join(', ')}`,
    );
  }
  const base = median(samples.baseline);
  const extra = (name: 'ours' | 'erl' | 'rlf') =>
    median(samples[name].map((v, i) => v - (samples.baseline[i] ?? base)));

  // (b)
  const baseline = await sdkServer(false);
  const ours = await sdkServer(true);
  const worker = new Worker(LOAD_WORKER, { eval: true });
  await runLoad(worker, baseline.port, 500);
  await runLoad(worker, ours.port, 500);
  const rpsBaseline: number[] = [];
  const rpsOurs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const pair = round % 2 === 0 ? [baseline, ours] : [ours, baseline];
    for (const server of pair) {
      const { rps, failed } = await runLoad(worker, server.port, LOOP_ROUND_MS);
      if (failed > 0) throw new Error(`${failed} requests failed`);
      (server === baseline ? rpsBaseline : rpsOurs).push(rps);
    }
    console.log(
      `loopback round ${round + 1}: baseline ${rpsBaseline.at(-1)?.toFixed(0)} rps, ours ${rpsOurs.at(-1)?.toFixed(0)} rps`,
    );
  }
  await worker.terminate();
  await baseline.close();
  await ours.close();
  const ratios = rpsOurs.map((v, i) => v / (rpsBaseline[i] ?? v));
  console.log(
    JSON.stringify({
      microsPerRequestBaseline: Number(base.toFixed(3)),
      extraMicrosPerRequestOurs: Number(extra('ours').toFixed(3)),
      extraMicrosPerRequestRlf: Number(extra('rlf').toFixed(3)),
      extraMicrosPerRequestErl: Number(extra('erl').toFixed(3)),
      rpsBaseline: Math.round(median(rpsBaseline)),
      rpsOurs: Math.round(median(rpsOurs)),
      ratioOursOverBaseline: Number(median(ratios).toFixed(4)),
      rounds: ROUNDS,
      connections: CONNECTIONS,
    }),
  );
}

await main();
