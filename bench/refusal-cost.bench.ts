/**
 * @module refusal-cost.bench
 * `npm run bench:refusal`: what a refused request costs the agent whatever its body, and other
 * callers' latency under such an attack. Prints JSON.
 */

import { type ChildProcess, fork } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultExecutionEventBusManager,
  DefaultRequestHandler,
  InMemoryTaskStore,
} from '@a2a-js/sdk/server';
import { UserBuilder } from '@a2a-js/sdk/server/express';
import { A2AService, UserBuilder as GrpcUserBuilder } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import express from 'express';
import type { Policy } from '../src/core/policy.js';
import { rateLimitedJsonRpcHandler, rateLimitedRestHandler } from '../src/server/express/index.js';
import * as grpcAdapter from '../src/server/grpc/index.js';
import { createLimiter } from '../src/server/limiter.js';
import { exampleAgentCard } from '../src/testing/example-agent-card.js';
import { textMessage } from '../src/testing/text-message.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const JSON_PER_ROUND = Number(process.env.BENCH_JSON_PER_ROUND ?? 20);
const GRPC_PER_ROUND = Number(process.env.BENCH_GRPC_PER_ROUND ?? 4);
const LOAD_MS = Number(process.env.BENCH_LOAD_MS ?? 4000);
const ATTACKERS = 4;

// ---------------------------------------------------------------------------------------------
// The agent (child process).

const policies: Policy[] = [
  {
    name: 'per-caller',
    kind: 'rate',
    scope: 'caller',
    methods: ['SendMessage', 'SendStreamingMessage'],
    limit: 1,
    windowSeconds: 3600,
    burst: 1,
    exempt: (request) => request.caller.startsWith('victim'),
  },
  { name: 'agent-overload', kind: 'overload', maxEventLoopDelayMs: 200 },
];

const echo: AgentExecutor = {
  async execute(ctx, bus) {
    bus.publish(
      AgentEvent.message(
        textMessage({ messageId: `r-${ctx.userMessage.messageId}`, text: 'echo', role: 'agent' }),
      ),
    );
    bus.finished();
  },
  async cancelTask() {},
};

async function runAgent(): Promise<void> {
  const card = exampleAgentCard({
    name: 'bench',
    interfaces: [{ url: 'http://127.0.0.1/a2a/jsonrpc', protocolBinding: 'JSONRPC' }],
  });
  const limiter = createLimiter({ policies, card, dedup: false });
  const requestHandler = new DefaultRequestHandler(
    card,
    new InMemoryTaskStore(),
    echo,
    new DefaultExecutionEventBusManager(),
  );
  const callerOf = (value: unknown): string => (typeof value === 'string' ? value : 'anonymous');
  const admission = {
    identify: (req: express.Request) => callerOf(req.headers['x-caller']),
  };
  const userBuilder = UserBuilder.noAuthentication;
  const app = express();
  app.use(
    '/a2a/jsonrpc',
    rateLimitedJsonRpcHandler(limiter, { requestHandler, userBuilder, admission }),
  );
  app.use('/a2a/rest', rateLimitedRestHandler(limiter, { requestHandler, userBuilder, admission }));
  const http = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => http.once('listening', () => resolve()));

  const grpcUsers = GrpcUserBuilder.noAuthentication;
  const server = new grpc.Server({
    interceptors: [
      grpcAdapter.grpcAdmissionInterceptor(limiter, {
        identify: (md) => callerOf(md.get('x-caller')[0]),
        requestHandler,
      }),
    ],
  });
  // Older versions have no `rateLimitedServiceDefinition`: the SDK's definition as it is.
  const define = (grpcAdapter as { rateLimitedServiceDefinition?: <D>(d: D) => D })
    .rateLimitedServiceDefinition;
  server.addService(
    define === undefined ? A2AService : define(A2AService),
    grpcAdapter.rateLimitedGrpcService({ requestHandler, userBuilder: grpcUsers }),
  );
  const grpcPort = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) =>
      error ? reject(error) : resolve(port),
    ),
  );
  process.on('message', (message: { kind: string }) => {
    if (message.kind === 'cpu' || message.kind === 'cpu-after-gc') {
      // Before a scenario: the garbage of the one before is collected first, off the count.
      if (message.kind === 'cpu-after-gc') (globalThis as { gc?: () => void }).gc?.();
      const usage = process.cpuUsage();
      process.send?.({ kind: 'cpu', us: usage.user + usage.system });
    } else if (message.kind === 'stop') process.exit(0);
  });
  process.send?.({
    kind: 'ready',
    httpPort: (http.address() as AddressInfo).port,
    grpcPort,
    deferred: define !== undefined,
  });
}

// ---------------------------------------------------------------------------------------------
// The callers (this process).

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
}

/** Lets the agent's event-loop delay signal (sampled every 500 ms) forget the last scenario. */
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 1200));

let sequence = 0;
const messageJson = (metadata: string): string =>
  `{"messageId":"m-${++sequence}","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":${metadata}}`;

/** 98 kB of metadata: flat (small fields) or one array nested 49,000 deep. */
const FLAT = `{${Array.from({ length: 3000 }, (_, i) => `"k${i}":"value-${i}-xxxxxxxxxxx"`).join(',')}}`;
const DEEP = `{"d":${'['.repeat(49_000)}${']'.repeat(49_000)}}`;

function jsonRpcBody(metadata: string): string {
  return `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":${messageJson(metadata)}}}`;
}

function restBody(metadata: string): string {
  return `{"message":${messageJson(metadata)}}`;
}

type Answer = 'admitted' | 'rate-limited' | 'overloaded' | 'malformed' | 'other';

/** What an HTTP answer was, from its status and body. */
function answerOf(status: number, body: string): Answer {
  if (body.includes('RATE_LIMIT_EXCEEDED')) return 'rate-limited';
  if (body.includes('AGENT_OVERLOADED')) return 'overloaded';
  if (status === 200 && body.includes('"result"')) return 'admitted';
  if (status === 400 || body.includes('-32700') || body.includes('-32600')) return 'malformed';
  return 'other';
}

async function post(url: string, body: string, caller: string): Promise<Answer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-caller': caller },
    body,
  });
  return answerOf(response.status, await response.text());
}

/**
 * A SendMessageRequest with a `metadata` Struct of `fields` small fields, encoded once: 135,000
 * make 3.7 MiB (under grpc-js's 4 MiB default), 33,000 make 0.9 MiB (under our 1 MiB).
 */
function grpcRequest(fields: number): Buffer {
  const metadata: Record<string, string> = {};
  for (let i = 0; i < fields; i++) metadata[`k${i}`] = `v${i}-xxxxxxx`;
  const request = {
    tenant: '',
    message: { ...textMessage({ messageId: 'm-large', text: 'hi', role: 'user' }) },
    metadata,
  };
  return A2AService.sendMessage.requestSerialize(request as never);
}

function grpcCall(client: grpc.Client, bytes: Buffer, caller: string): Promise<Answer> {
  const metadata = new grpc.Metadata();
  metadata.set('x-caller', caller);
  metadata.set('a2a-version', '1.0');
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      '/lf.a2a.v1.A2AService/SendMessage',
      (b: Buffer) => b,
      (b: Buffer) => b,
      bytes,
      metadata,
      (error) => {
        if (error === null) resolve('admitted');
        else if (error.code === grpc.status.RESOURCE_EXHAUSTED) {
          resolve(error.details.includes('too large') ? 'malformed' : 'rate-limited');
        } else if (error.code === grpc.status.UNAVAILABLE) resolve('overloaded');
        else resolve('other');
      },
    );
  });
}

/**
 * A real SDK agent (JSON-RPC, REST and gRPC, echo executor) runs in a child process that reports
 * its own CPU time over IPC; this process is the callers. A caller ("attacker") is spent first
 * (one message an hour), then sends, one at a time: a 98 kB JSON-RPC SendMessage body flat (3,000
 * metadata fields) and nested 49,000 deep, the same two as REST bodies, and a 3.7 MiB gRPC
 * SendMessage (a `metadata` Struct of ~135,000 fields, under grpc-js's 4 MiB default) and a
 * 0.9 MiB one (33,000 fields, under this package's 1 MiB default). The agent's CPU µs per request
 * of each is set against an admitted small SendMessage of another caller (and an admitted one
 * with the same flat 98 kB body). Then other callers' latency (p50/p95 of a small JSON-RPC
 * SendMessage, one at a time) with no attack and under each attack (4 attackers sending back to
 * back), and how many of them an overload policy (event-loop delay over 200 ms) refused. Each
 * scenario starts after a 1.2 s pause and a garbage collection in the agent (not counted), in an
 * order rotated every round. Medians of rounds; one JSON object as the last line. Runs on older
 * versions of this package too (for before/after figures): what a version lacks
 * (`rateLimitedServiceDefinition`) is left out.
 */
async function main(): Promise<void> {
  const agent: ChildProcess = fork(process.argv[1] as string, ['agent'], {
    execArgv: [...process.execArgv, '--expose-gc'],
  });
  const ready = await new Promise<{ httpPort: number; grpcPort: number; deferred: boolean }>(
    (resolve) =>
      agent.once('message', (m) =>
        resolve(m as { httpPort: number; grpcPort: number; deferred: boolean }),
      ),
  );
  const cpu = (kind: 'cpu' | 'cpu-after-gc' = 'cpu'): Promise<number> =>
    new Promise((resolve) => {
      agent.once('message', (m) => resolve((m as { us: number }).us));
      agent.send({ kind });
    });
  const jsonRpc = `http://127.0.0.1:${ready.httpPort}/a2a/jsonrpc`;
  const rest = `http://127.0.0.1:${ready.httpPort}/a2a/rest/message:send`;
  const client = new grpc.Client(`127.0.0.1:${ready.grpcPort}`, grpc.credentials.createInsecure(), {
    'grpc.max_send_message_length': -1,
  });
  const large = grpcRequest(135_000);
  const underLimit = grpcRequest(33_000);

  // Spend the attacker's hour.
  await post(jsonRpc, jsonRpcBody('{}'), 'attacker');

  const scenarios: Record<string, { perRound: number; send: () => Promise<Answer> }> = {
    admitted: {
      perRound: JSON_PER_ROUND,
      send: () => post(jsonRpc, jsonRpcBody('{}'), 'victim-0'),
    },
    admittedJsonRpcFlat: {
      perRound: JSON_PER_ROUND,
      send: () => post(jsonRpc, jsonRpcBody(FLAT), 'victim-0'),
    },
    refusedJsonRpcFlat: {
      perRound: JSON_PER_ROUND,
      send: () => post(jsonRpc, jsonRpcBody(FLAT), 'attacker'),
    },
    refusedJsonRpcDeep: {
      perRound: JSON_PER_ROUND,
      send: () => post(jsonRpc, jsonRpcBody(DEEP), 'attacker'),
    },
    refusedRestFlat: {
      perRound: JSON_PER_ROUND,
      send: () => post(rest, restBody(FLAT), 'attacker'),
    },
    refusedRestDeep: {
      perRound: JSON_PER_ROUND,
      send: () => post(rest, restBody(DEEP), 'attacker'),
    },
    refusedGrpcLarge: { perRound: GRPC_PER_ROUND, send: () => grpcCall(client, large, 'attacker') },
    refusedGrpcUnderLimit: {
      perRound: GRPC_PER_ROUND,
      send: () => grpcCall(client, underLimit, 'attacker'),
    },
  };
  const samples: Record<string, number[]> = {};
  const answers: Record<string, Partial<Record<Answer, number>>> = {};
  for (let round = 0; round < ROUNDS; round++) {
    // Each round starts one scenario later: no scenario always follows the same one.
    const entries = Object.entries(scenarios);
    const order = [
      ...entries.slice(round % entries.length),
      ...entries.slice(0, round % entries.length),
    ];
    for (const [name, scenario] of order) {
      await settle();
      const before = await cpu('cpu-after-gc');
      for (let i = 0; i < scenario.perRound; i++) {
        const answer = await scenario.send();
        const seen = answers[name] ?? {};
        seen[answer] = (seen[answer] ?? 0) + 1;
        answers[name] = seen;
      }
      const used = (await cpu()) - before;
      samples[name] = [...(samples[name] ?? []), used / scenario.perRound];
      console.log(`round ${round} ${name}: ${(used / scenario.perRound).toFixed(0)} µs/request`);
    }
  }
  const cpuUsPerRequest: Record<string, number> = {};
  for (const [name, values] of Object.entries(samples)) {
    cpuUsPerRequest[name] = Math.round(median(values));
  }
  const admitted = cpuUsPerRequest.admitted ?? 1;
  const ratioToAdmitted: Record<string, number> = {};
  for (const [name, value] of Object.entries(cpuUsPerRequest)) {
    if (name !== 'admitted') ratioToAdmitted[name] = Math.round((value / admitted) * 100) / 100;
  }

  // Other callers' latency, without and under each attack.
  const underLoad = async (attack: (() => Promise<Answer>) | undefined) => {
    await settle();
    let running = true;
    const attackers = Array.from({ length: attack === undefined ? 0 : ATTACKERS }, async () => {
      while (running) await (attack as () => Promise<Answer>)();
    });
    const latenciesMs: number[] = [];
    let refused = 0;
    const end = performance.now() + LOAD_MS;
    let victim = 0;
    while (performance.now() < end) {
      const start = performance.now();
      const answer = await post(jsonRpc, jsonRpcBody('{}'), `victim-${++victim % 8}`);
      latenciesMs.push(performance.now() - start);
      if (answer !== 'admitted') refused++;
    }
    running = false;
    await Promise.all(attackers);
    return {
      requests: latenciesMs.length,
      refused,
      p50Ms: Math.round(percentile(latenciesMs, 0.5) * 10) / 10,
      p95Ms: Math.round(percentile(latenciesMs, 0.95) * 10) / 10,
    };
  };
  const victims = {
    noAttack: await underLoad(undefined),
    underJsonRpcDeep: await underLoad(() => post(jsonRpc, jsonRpcBody(DEEP), 'attacker')),
    underRestFlat: await underLoad(() => post(rest, restBody(FLAT), 'attacker')),
    underGrpcLarge: await underLoad(() => grpcCall(client, large, 'attacker')),
    underGrpcUnderLimit: await underLoad(() => grpcCall(client, underLimit, 'attacker')),
  };
  client.close();
  agent.send({ kind: 'stop' });
  console.log(
    JSON.stringify({
      bench: 'refusal-cost',
      deferredGrpcDecoding: ready.deferred,
      rounds: ROUNDS,
      cpuUsPerRequest,
      ratioToAdmitted,
      answers,
      victims,
    }),
  );
}

if (process.argv[2] === 'agent') await runAgent();
else await main();
