/**
 * @module gateway-bench-parts
 * Parts of `bench/gateway.bench.ts`: child processes (started from sources through tsx, talking
 * over IPC), free loopback ports, nginx's throwaway config, a process's CPU time from
 * `/proc/<pid>/stat` (the same reading for nginx and the gateway), percentiles, and the SSE
 * client that times each event from the upstream's send to its arrival (both stamp with
 * `process.hrtime.bigint()`: CLOCK_MONOTONIC, one clock for every process on the machine).
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The repository root (children run from it). */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** A child process with an IPC channel. */
export interface Child {
  readonly process: ChildProcess;
  /** Sends `message` and resolves with the next message whose `re` matches its `op`. */
  ask<T>(message: { readonly op: string } & Record<string, unknown>): Promise<T>;
  /** Resolves with the first message carrying `ready`. */
  readonly ready: Promise<Record<string, unknown>>;
  kill(): void;
}

/**
 * Starts `bench/<file>` from sources (`--import tsx`, the library through its source condition)
 * with an IPC channel; `nodeFlags` go before the script (e.g. `--expose-gc`).
 */
export function startChild(
  file: string,
  args: readonly string[],
  nodeFlags: readonly string[] = [],
): Child {
  const child = spawn(
    process.execPath,
    [
      ...nodeFlags,
      '--import',
      'tsx',
      '--conditions=a2a-ratelimit-source',
      `bench/${file}`,
      ...args,
    ],
    { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: { ...process.env } },
  );
  const waiting = new Map<string, (value: unknown) => void>();
  let readyResolve: (value: Record<string, unknown>) => void = () => undefined;
  const ready = new Promise<Record<string, unknown>>((resolve, reject) => {
    readyResolve = resolve;
    child.once('exit', (code) => reject(new Error(`bench/${file} exited ${code} before ready`)));
  });
  child.on('message', (raw) => {
    const message = raw as Record<string, unknown>;
    if (message.ready === true) readyResolve(message);
    const re = typeof message.re === 'string' ? message.re : undefined;
    const waiter = re === undefined ? undefined : waiting.get(re);
    if (re !== undefined && waiter !== undefined) {
      waiting.delete(re);
      waiter(message);
    }
  });
  return {
    process: child,
    ready,
    ask<T>(message: { readonly op: string } & Record<string, unknown>): Promise<T> {
      return new Promise<T>((resolve) => {
        waiting.set(message.op, resolve as (value: unknown) => void);
        child.send(message);
      });
    },
    kill() {
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

/** A free loopback port (bound and released: nginx cannot be given port 0). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

/**
 * nginx in the foreground, one process (no master), reverse proxy with upstream keepalive; every
 * path it writes is in `dir`.
 */
export function nginxConfig(dir: string, port: number, upstreamPort: number): string {
  return `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream agent {
    server 127.0.0.1:${upstreamPort};
    keepalive 256;
  }
  server {
    listen 127.0.0.1:${port};
    keepalive_requests 1000000;
    location / {
      proxy_pass http://agent;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`;
}

/** User + system CPU time of a process so far, µs (`/proc/<pid>/stat`, all its threads). */
export function cpuMicrosOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start at state (field 3).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1_000_000) / CLOCK_TICKS_PER_SECOND;
}

/** `getconf CLK_TCK` on Linux. */
const CLOCK_TICKS_PER_SECOND = 100;

/** The `q` quantile (0..1) of `values`, by nearest rank. */
export function quantile(values: ArrayLike<number>, q: number): number {
  const sorted = Float64Array.from(values).sort();
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

/** The median of `values`. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[mid] ?? Number.NaN)
    : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** A JSON-RPC SendStreamingMessage asking the bench upstream for `events` events, `intervalMs` apart. */
export function streamBody(id: string, events: number, intervalMs: number): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'SendStreamingMessage',
    params: {
      message: {
        messageId: id,
        role: 'ROLE_USER',
        parts: [{ text: 'stream' }],
        metadata: { events, intervalMs },
      },
    },
  });
}

/** An open SSE exchange. */
export interface OpenStream {
  readonly response: IncomingMessage;
  /** Resolves when the first event has arrived. */
  readonly firstEvent: Promise<void>;
  /** Resolves when the stream has ended. */
  readonly ended: Promise<void>;
  close(): void;
}

/**
 * Opens a JSON-RPC SSE stream on its own connection; each event's `sentNs` stamp is turned into
 * its delay (arrival − send, ns) and handed to `onDelayNs`.
 */
export function openStream(
  origin: string,
  path: string,
  body: string,
  onDelayNs: (delayNs: number) => void,
): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, origin);
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'a2a-version': '1.0',
        },
      },
      (response) => {
        if (response.statusCode !== 200) {
          reject(new Error(`stream answered ${response.statusCode}`));
          response.resume();
          return;
        }
        let first: () => void = () => undefined;
        const firstEvent = new Promise<void>((r) => {
          first = r;
        });
        const ended = new Promise<void>((r) => {
          response.once('close', r);
        });
        let buffer = '';
        response.setEncoding('utf8');
        response.on('data', (text: string) => {
          const arrived = process.hrtime.bigint();
          buffer += text;
          let end = buffer.indexOf('\n\n');
          while (end >= 0) {
            const event = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const sent = /"sentNs":"(\d+)"/.exec(event)?.[1];
            if (sent !== undefined) onDelayNs(Number(arrived - BigInt(sent)));
            first();
            end = buffer.indexOf('\n\n');
          }
        });
        response.on('error', () => undefined);
        resolve({ response, firstEvent, ended, close: () => req.destroy() });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
