/**
 * @module gateway-bench-upstream
 * The trivial A2A-shaped upstream of `bench/gateway.bench.ts`, a child process of its own (its
 * CPU is not the proxy's): a card with a JSON-RPC (`/a2a/jsonrpc`) and an HTTP+JSON
 * (`/a2a/rest`) interface; SendMessage answered with a completed task; SendStreamingMessage an
 * SSE stream of `metadata.events` WORKING updates `metadata.intervalMs` apart, each stamped with
 * its send time (`sentNs`, `process.hrtime.bigint()`), then COMPLETED — or, with `events: 0`, one
 * WORKING update and held open until the client leaves. Reports its port over IPC, and on
 * `{ op: 'connections' }` how many connections it has accepted so far.
 */

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

let base = '';
let tasks = 0;

function card(): string {
  return JSON.stringify({
    name: 'bench upstream',
    description: 'answers everything at once',
    version: '1.0.0',
    supportedInterfaces: [
      { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: `${base}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
    ],
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
  });
}

function completedTask(): Record<string, unknown> {
  return {
    id: `task-${++tasks}`,
    contextId: 'ctx',
    status: { state: 'TASK_STATE_COMPLETED' },
    artifacts: [{ artifactId: 'a', parts: [{ text: 'done' }] }],
  };
}

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

function stream(
  res: ServerResponse,
  wrap: (result: Record<string, unknown>) => Record<string, unknown>,
  metadata: Record<string, unknown> | undefined,
): void {
  const events = Number(metadata?.events ?? 3);
  const intervalMs = Number(metadata?.intervalMs ?? 10);
  const taskId = `task-${++tasks}`;
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });
  const update = (state: string): string =>
    `data: ${JSON.stringify(
      wrap({
        statusUpdate: {
          taskId,
          contextId: 'ctx',
          status: { state },
          metadata: { sentNs: String(process.hrtime.bigint()) },
        },
      }),
    )}\n\n`;
  if (events <= 0) {
    res.write(update('TASK_STATE_WORKING'));
    return;
  }
  let sent = 0;
  const timer = setInterval(() => {
    if (res.destroyed) {
      clearInterval(timer);
      return;
    }
    if (++sent < events) {
      res.write(update('TASK_STATE_WORKING'));
      return;
    }
    clearInterval(timer);
    res.end(update('TASK_STATE_COMPLETED'));
  }, intervalMs);
  res.on('close', () => clearInterval(timer));
}

function handle(req: IncomingMessage, res: ServerResponse, text: string): void {
  const path = (req.url ?? '/').split('?')[0];
  if (path === '/.well-known/agent-card.json') {
    send(res, 200, card());
    return;
  }
  let body: Record<string, unknown> = {};
  try {
    body = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  } catch {
    send(res, 400, '{"error":"bad json"}');
    return;
  }
  if (path === '/a2a/jsonrpc') {
    const id = body.id ?? null;
    const params = body.params as { message?: { metadata?: Record<string, unknown> } } | undefined;
    if (body.method === 'SendStreamingMessage') {
      stream(res, (result) => ({ jsonrpc: '2.0', id, result }), params?.message?.metadata);
    } else if (body.method === 'SendMessage') {
      send(res, 200, JSON.stringify({ jsonrpc: '2.0', id, result: { task: completedTask() } }));
    } else {
      send(
        res,
        200,
        JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32601, message: 'not here' } }),
      );
    }
    return;
  }
  const message = body.message as { metadata?: Record<string, unknown> } | undefined;
  if (path === '/a2a/rest/message:send') send(res, 200, JSON.stringify({ task: completedTask() }));
  else if (path === '/a2a/rest/message:stream') stream(res, (r) => r, message?.metadata);
  else send(res, 404, '{"error":"not found"}');
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
});
server.keepAliveTimeout = 120_000;
// Connections accepted so far: the bench reads it around each run (is the proxy reusing them?).
let connections = 0;
server.on('connection', () => {
  connections++;
});
process.on('message', (raw) => {
  if ((raw as { op?: string }).op === 'connections')
    process.send?.({ re: 'connections', connections });
});
server.listen(0, '127.0.0.1', () => {
  const port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
  process.send?.({ ready: true, port });
});
process.on('disconnect', () => process.exit(0));
