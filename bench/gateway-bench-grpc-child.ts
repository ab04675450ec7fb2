/**
 * @module gateway-bench-grpc-child
 * The child processes of the gRPC row of `bench/gateway.bench.ts` (`gateway-bench-grpc.ts`), one
 * per role: `upstream` — a trivial A2A agent on gRPC (h2c, `node:http2`: SendMessage answered with
 * a completed Task, encoded with the SDK's own service definition) and its card on HTTP (a GRPC
 * and a JSONRPC interface); `gateway <upstream> <config.yaml | none>` — the gateway as
 * `a2a-ratelimit gateway --grpc-port 0` starts it; `load` — on `{ op: 'load' }` keeps a fixed
 * number of unary SendMessage calls in flight (`@grpc/grpc-js`, one channel, a new messageId
 * each, API keys in turn when given) against one target for a duration, and answers with the
 * calls completed, their status codes and latencies (p50 / p99). Each reports readiness over IPC.
 */

import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttp2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { A2AService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import { textMessage } from 'a2a-ratelimit/testing';
import { parseGatewayOptions, startGateway } from '../packages/cli/src/gateway-command.js';
import { loadGatewayConfig } from '../packages/cli/src/gateway-config.js';

const SEND = '/lf.a2a.v1.A2AService/SendMessage';
const [role = '', ...args] = process.argv.slice(2);

/** One gRPC message frame around `message`. */
function frame(message: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

async function upstream(): Promise<void> {
  let tasks = 0;
  const h2 = createHttp2Server();
  h2.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    if (headers[':path'] !== SEND) {
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12' },
        {
          endStream: true,
        },
      );
      return;
    }
    stream.resume();
    stream.on('end', () => {
      const answer = A2AService.sendMessage.responseSerialize({
        payload: {
          $case: 'task',
          value: {
            id: `task-${++tasks}`,
            contextId: 'ctx',
            status: { state: 3, message: undefined, timestamp: undefined },
            artifacts: [],
            history: [],
            metadata: undefined,
          },
        },
      } as never);
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc' },
        { waitForTrailers: true },
      );
      stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(frame(answer));
    });
  });
  await new Promise<void>((resolve) => h2.listen(0, '127.0.0.1', () => resolve()));
  const grpcTarget = `127.0.0.1:${(h2.address() as AddressInfo).port}`;
  const http = createHttpServer((req, res) => {
    const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    const body = JSON.stringify({
      name: 'bench gRPC upstream',
      description: 'answers everything at once',
      version: '1.0.0',
      supportedInterfaces: [
        { url: grpcTarget, protocolBinding: 'GRPC', protocolVersion: '1.0' },
        { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      ],
      capabilities: { streaming: true },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [],
    });
    res.writeHead(req.url === '/.well-known/agent-card.json' ? 200 : 404, {
      'content-type': 'application/json',
    });
    res.end(body);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
  process.send?.({
    ready: true,
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    grpcTarget,
  });
}

async function gateway(): Promise<void> {
  const [upstreamUrl = '', configFile = 'none'] = args;
  const options = parseGatewayOptions({
    upstream: upstreamUrl,
    port: '0',
    grpcPort: '0',
    ...(configFile === 'none' ? {} : { config: configFile }),
  });
  const config = configFile === 'none' ? { policies: [] } : await loadGatewayConfig(configFile);
  const running = await startGateway(options, config);
  if (!running.gateway.isReady()) throw new Error(`no card: ${running.gateway.cardError()}`);
  process.send?.({ ready: true, url: running.url, grpcTarget: running.grpcTarget });
}

interface LoadJob {
  readonly target: string;
  readonly inflight: number;
  readonly durationMs: number;
  readonly keys?: readonly string[];
}

const prefix = `g${process.pid}-${Date.now().toString(36)}`;
let sequence = 0;

function quantileMs(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return (sorted[rank] ?? Number.NaN) / 1e6;
}

const clients = new Map<string, grpc.Client>();

async function load(job: LoadJob): Promise<Record<string, unknown>> {
  let client = clients.get(job.target);
  if (client === undefined) {
    client = new grpc.Client(job.target, grpc.credentials.createInsecure());
    clients.set(job.target, client);
  }
  const keys = job.keys ?? [];
  const latencies: number[] = [];
  const codes: Record<string, number> = {};
  let nextKey = 0;
  const started = process.hrtime.bigint();
  const deadline = started + BigInt(job.durationMs) * 1_000_000n;
  const one = (c: grpc.Client): Promise<number> => {
    const n = ++sequence;
    const body = A2AService.sendMessage.requestSerialize({
      tenant: '',
      message: textMessage({ messageId: `${prefix}-${n}`, text: 'hello' }),
    } as never);
    const metadata = new grpc.Metadata();
    metadata.set('a2a-version', '1.0');
    if (keys.length > 0) metadata.set('authorization', `Bearer ${keys[nextKey++ % keys.length]}`);
    return new Promise((resolve) => {
      c.makeUnaryRequest(
        SEND,
        (b: Buffer) => b,
        (b: Buffer) => b,
        body,
        metadata,
        {},
        (error) => resolve(error === null ? 0 : (error.code ?? -1)),
      );
    });
  };
  const worker = async (): Promise<void> => {
    while (process.hrtime.bigint() < deadline) {
      const t0 = process.hrtime.bigint();
      const code = await one(client as grpc.Client);
      latencies.push(Number(process.hrtime.bigint() - t0));
      codes[code] = (codes[code] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: job.inflight }, worker));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const sorted = Float64Array.from(latencies).sort();
  const ok = codes[0] ?? 0;
  return {
    requests: latencies.length,
    ok,
    codes,
    seconds,
    rps: ok / seconds,
    p50Ms: quantileMs(sorted, 0.5),
    p99Ms: quantileMs(sorted, 0.99),
  };
}

process.on('disconnect', () => process.exit(0));
if (role === 'upstream') await upstream();
else if (role === 'gateway') await gateway();
else if (role === 'load') {
  process.on('message', (raw) => {
    const message = raw as { op: string } & LoadJob;
    if (message.op !== 'load') return;
    void load(message).then((result) => process.send?.({ re: 'load', ...result }));
  });
  process.send?.({ ready: true });
} else throw new Error(`unknown role ${role}`);
