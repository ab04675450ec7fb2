/**
 * @module http.bench
 * `npm run bench:http`: what admission costs an Express A2A agent, in process and on loopback,
 * against peer limiters. Prints JSON.
 */

import { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
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
import { jsonRpcAdmission, rateLimitedJsonRpcHandler } from '../src/server/express/index.js';
import { createLimiter } from '../src/server/limiter.js';
import { exampleAgentCard } from '../src/testing/example-agent-card.js';
import { fakeIncomingRequest } from '../src/testing/fake-incoming-request.js';
import { textMessage } from '../src/testing/text-message.js';
import { CONNECTIONS, runLoad, startLoadProcess } from './http-bench-load.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 11);
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 300);
const LOOP_ROUNDS = Number(process.env.BENCH_LOOP_ROUNDS ?? 11);
const LOOP_ROUND_SECONDS = Number(process.env.BENCH_LOOP_ROUND_SECONDS ?? 2);

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

/** rate-limiter-flexible's limit for the bench: never reached. */
const RLF_POINTS = 1_000_000_000;

/**
 * rate-limiter-flexible's README middleware keyed by `key`; `withHeaders` adds what its README
 * offers for telling clients their quota ("You may want to set HTTP headers for the response"):
 * `X-RateLimit-Limit`, `-Remaining` and `-Reset` (epoch seconds) on the admitted response.
 */
function rlfMiddleware(
  key: (req: express.Request) => string,
  withHeaders: boolean,
): RequestHandler {
  const rlf = new RateLimiterMemory({ points: RLF_POINTS, duration: 60 });
  return (req, res, next) => {
    rlf.consume(key(req)).then(
      (r) => {
        if (withHeaders) {
          res.setHeader('X-RateLimit-Limit', RLF_POINTS);
          res.setHeader('X-RateLimit-Remaining', r.remainingPoints);
          res.setHeader('X-RateLimit-Reset', Math.ceil((Date.now() + r.msBeforeNext) / 1000));
        }
        next();
      },
      () => {
        res.status(429).send('Too Many Requests');
      },
    );
  };
}

// ---------------------------------------------------------------------------------------------
// (a) In-process cost.

const BODY = (i: number) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: i,
    method: 'SendMessage',
    params: { message: { messageId: `m-${i}`, role: 'ROLE_USER', parts: [{ text: 'hello' }] } },
  });

/**
 * Stands in for the SDK's `jsonRpcHandler`: like it, a router that parses the body and answers
 * `POST /` with `res.json`.
 */
function sdkLikeRouter(): express.Router {
  const router = express.Router();
  router.use(express.json());
  router.post('/', (req, res) => {
    res.json({ jsonrpc: '2.0', id: (req.body as { id?: unknown }).id ?? null, result: {} });
  });
  return router;
}

/** The app: `handlers` mounted on the JSON-RPC path (a limiter, then the SDK-like router). */
function appWith(handlers: RequestHandler[]): express.Express {
  const app = express();
  app.set('etag', false);
  app.set('x-powered-by', false);
  app.use('/a2a/jsonrpc', ...handlers);
  return app;
}

/** Drives one request through `app` without a socket; resolves when the response ends. */
function drive(app: express.Express, i: number): Promise<void> {
  const req = fakeIncomingRequest({
    body: Buffer.from(BODY(i)),
    url: '/a2a/jsonrpc',
    headers: { 'a2a-version': '1.0' },
    remoteAddress: '127.0.0.1',
  });
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

const IN_PROCESS = [
  'baseline',
  'ours',
  'oursSeparate',
  'erl',
  'rlf',
  'rlfWithHeaders',
  'oursConstantKey',
  'erlConstantKey',
  'rlfConstantKey',
] as const;
type InProcessName = (typeof IN_PROCESS)[number];

function inProcessApps(): Record<InProcessName, express.Express> {
  // Deduplication off here: the peers do not deduplicate (the loopback run measures it).
  const limiter = createLimiter({
    policies,
    domain: 'bench.example.com',
    eventLoopDelay: false,
    dedup: false,
  });
  const erl = (keyGenerator?: () => string) =>
    rateLimit({
      windowMs: 60_000,
      limit: 1_000_000_000,
      standardHeaders: 'draft-8',
      legacyHeaders: false,
      ...(keyGenerator === undefined ? {} : { keyGenerator }),
    });
  // Ours as the README mounts it: one middleware in front of the SDK's router (`sdkHandler`, what
  // `rateLimitedJsonRpcHandler` sets up); `oursSeparate`: the admission middleware mounted as a
  // layer of its own before the router, as the peers are.
  const ours = (options: { identify?: () => string }) =>
    jsonRpcAdmission(limiter, { ...options, sdkHandler: sdkLikeRouter() });
  return {
    baseline: appWith([sdkLikeRouter()]),
    ours: appWith([ours({})]),
    oursSeparate: appWith([jsonRpcAdmission(limiter), sdkLikeRouter()]),
    erl: appWith([erl(), sdkLikeRouter()]),
    rlf: appWith([rlfMiddleware((req) => req.ip ?? '', false), sdkLikeRouter()]),
    rlfWithHeaders: appWith([rlfMiddleware((req) => req.ip ?? '', true), sdkLikeRouter()]),
    oursConstantKey: appWith([ours({ identify: () => 'k' })]),
    erlConstantKey: appWith([erl(() => 'k'), sdkLikeRouter()]),
    rlfConstantKey: appWith([rlfMiddleware(() => 'k', false), sdkLikeRouter()]),
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

const LOOPBACK = ['baseline', 'ours', 'oursSeparate', 'oursFull', 'rlf', 'rlfWithHeaders'] as const;
type LoopbackName = (typeof LOOPBACK)[number];

async function sdkServer(
  name: LoopbackName,
): Promise<{ port: number; close: () => Promise<void> }> {
  const app = express();
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  const agentCard = card(`http://127.0.0.1:${port}/a2a/jsonrpc`);
  // `ours`: the policies alone (`dedup: false`, no task tracking), mounted as the README does;
  // `oursSeparate`: the same, with the admission middleware and the SDK's router as two layers;
  // `oursFull`: the README's setup, deduplication and task tracking on.
  const limiter =
    name === 'baseline' || name === 'rlf' || name === 'rlfWithHeaders'
      ? undefined
      : createLimiter({
          policies,
          card: agentCard,
          ...(name === 'oursFull' ? {} : { dedup: false }),
        });
  const manager = new DefaultExecutionEventBusManager();
  const requestHandler = new DefaultRequestHandler(
    agentCard,
    new InMemoryTaskStore(),
    echo,
    name === 'oursFull' && limiter !== undefined ? limiter.trackTasks(manager) : manager,
  );
  const userBuilder = UserBuilder.noAuthentication;
  if (limiter === undefined) {
    if (name !== 'baseline') {
      // For scale: rate-limiter-flexible's README middleware (it reads no body), without and with
      // its README's headers.
      app.use(
        '/a2a/jsonrpc',
        rlfMiddleware((req) => req.ip ?? '', name === 'rlfWithHeaders'),
      );
    }
    app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder }));
  } else if (name === 'oursSeparate') {
    app.use(
      '/a2a/jsonrpc',
      jsonRpcAdmission(limiter, { userBuilder, requestHandler }),
      jsonRpcHandler({ requestHandler, userBuilder }),
    );
  } else {
    app.use('/a2a/jsonrpc', rateLimitedJsonRpcHandler(limiter, { requestHandler, userBuilder }));
  }
  return {
    port,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await limiter?.close();
    },
  };
}

/**
 * (a) In process: JSON-RPC requests driven through an Express app without sockets (fake
 *     IncomingMessage / ServerResponse) for no limiter, ours (a limit never reached),
 *     express-rate-limit and a rate-limiter-flexible middleware, each in front of a router that
 *     stands in for the SDK's (it parses the body and answers with `res.json`); extra µs per
 *     request over the baseline. Ours is mounted as the README does (one middleware that hands
 *     admitted requests to the router: `sdkHandler`) and, as `oursSeparate`, as a layer of its
 *     own before the router, as the peers are. Each limiter keys callers by client address as
 *     its documentation shows (ours: the default identity; express-rate-limit: its default key;
 *     rate-limiter-flexible: `req.ip`, its README's middleware), and once more all with one
 *     constant key. rate-limiter-flexible's README middleware sets no headers; `rlfWithHeaders`
 *     adds the three its README offers, so that it tells clients their quota as ours (two IETF
 *     `RateLimit` fields) and express-rate-limit (draft-8 fields) do. Interleaved rounds, medians.
 * (b) Loopback: a real SDK JSON-RPC SendMessage server (echo executor) without a limiter, with
 *     ours as policies alone (`dedup: false`, no task tracking) mounted as the README does
 *     (`rateLimitedJsonRpcHandler`) and as two layers (`oursSeparate`), with ours as the README
 *     sets it up (deduplication and task tracking on: `oursFull`), and, for scale, with
 *     rate-limiter-flexible's README middleware without and with its headers, driven by
 *     autocannon (10 connections, a new messageId per request) from a child process; interleaved
 *     rounds, median requests/second.
 * Prints one line per round and one JSON object as the last line.
 */
async function main(): Promise<void> {
  // (a)
  const apps = inProcessApps();
  const samples = Object.fromEntries(IN_PROCESS.map((n) => [n, [] as number[]])) as Record<
    InProcessName,
    number[]
  >;
  for (const name of IN_PROCESS) await microsPerRequest(apps[name], 0); // warm up
  let counter = 1_000_000;
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? IN_PROCESS : [...IN_PROCESS].reverse();
    for (const name of order) {
      samples[name].push(await microsPerRequest(apps[name], counter));
      counter += 1_000_000;
    }
    console.log(
      `in-process round ${round + 1}: ${IN_PROCESS.map((n) => `${n} ${samples[n].at(-1)?.toFixed(2)} µs`).join(', ')}`,
    );
  }
  const base = median(samples.baseline);
  const extra = (name: InProcessName) =>
    Number(median(samples[name].map((v, i) => v - (samples.baseline[i] ?? base))).toFixed(3));

  // (b)
  const names = LOOPBACK;
  const servers = Object.fromEntries(
    await Promise.all(names.map(async (n) => [n, await sdkServer(n)] as const)),
  ) as Record<LoopbackName, Awaited<ReturnType<typeof sdkServer>>>;
  const load = startLoadProcess();
  for (const n of names) await runLoad(load, servers[n].port, 1); // warm up
  const rps = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<
    LoopbackName,
    number[]
  >;
  for (let round = 0; round < LOOP_ROUNDS; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    for (const n of order) {
      const result = await runLoad(load, servers[n].port, LOOP_ROUND_SECONDS);
      if (result.failed > 0) throw new Error(`${n}: ${result.failed} requests failed`);
      rps[n].push(result.rps);
    }
    console.log(
      `loopback round ${round + 1}: ${names.map((n) => `${n} ${rps[n].at(-1)?.toFixed(0)} rps`).join(', ')}`,
    );
  }
  load.kill();
  for (const n of names) await servers[n].close();
  const ratio = (n: LoopbackName) =>
    Number(median(rps[n].map((v, i) => v / (rps.baseline[i] ?? v))).toFixed(4));
  console.log(
    JSON.stringify({
      microsPerRequestBaseline: Number(base.toFixed(3)),
      extraMicrosPerRequestOurs: extra('ours'),
      extraMicrosPerRequestOursSeparate: extra('oursSeparate'),
      extraMicrosPerRequestRlf: extra('rlf'),
      extraMicrosPerRequestRlfWithHeaders: extra('rlfWithHeaders'),
      extraMicrosPerRequestErl: extra('erl'),
      extraMicrosPerRequestOursConstantKey: extra('oursConstantKey'),
      extraMicrosPerRequestRlfConstantKey: extra('rlfConstantKey'),
      extraMicrosPerRequestErlConstantKey: extra('erlConstantKey'),
      rpsBaseline: Math.round(median(rps.baseline)),
      rpsOurs: Math.round(median(rps.ours)),
      rpsOursSeparate: Math.round(median(rps.oursSeparate)),
      rpsOursFull: Math.round(median(rps.oursFull)),
      rpsRlf: Math.round(median(rps.rlf)),
      rpsRlfWithHeaders: Math.round(median(rps.rlfWithHeaders)),
      ratioOursOverBaseline: ratio('ours'),
      ratioOursSeparateOverBaseline: ratio('oursSeparate'),
      ratioOursFullOverBaseline: ratio('oursFull'),
      ratioRlfOverBaseline: ratio('rlf'),
      ratioRlfWithHeadersOverBaseline: ratio('rlfWithHeaders'),
      rounds: ROUNDS,
      loopbackRounds: LOOP_ROUNDS,
      connections: CONNECTIONS,
    }),
  );
}

await main();
