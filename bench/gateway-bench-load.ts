/**
 * @module gateway-bench-load
 * The load generator of `bench/gateway.bench.ts`, a child process of its own: on `{ op: 'load' }`
 * it keeps a fixed number of SendMessage requests in flight (undici `Pool`, one connection per
 * request in flight, a new messageId each, API keys taken in turn when given) against one origin
 * for a duration, and answers with the requests completed, their statuses and the latency of
 * each (p50 / p99, µs resolution).
 */

import { Pool } from 'undici';

interface LoadJob {
  readonly origin: string;
  readonly binding: 'jsonrpc' | 'rest';
  readonly inflight: number;
  readonly durationMs: number;
  /** API keys sent as `Authorization: Bearer <key>`, in turn; none: anonymous. */
  readonly keys?: readonly string[];
}

const prefix = `m${process.pid}-${Date.now().toString(36)}`;
let sequence = 0;

function bodyOf(binding: 'jsonrpc' | 'rest', n: number): string {
  const message = `{"messageId":"${prefix}-${n}","role":"ROLE_USER","parts":[{"text":"hello"}]}`;
  return binding === 'jsonrpc'
    ? `{"jsonrpc":"2.0","id":${n},"method":"SendMessage","params":{"message":${message}}}`
    : `{"message":${message}}`;
}

function quantileMs(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return (sorted[rank] ?? Number.NaN) / 1e6;
}

async function load(job: LoadJob): Promise<Record<string, unknown>> {
  const pool = new Pool(job.origin, { connections: job.inflight, pipelining: 1 });
  const path = job.binding === 'jsonrpc' ? '/a2a/jsonrpc' : '/a2a/rest/message:send';
  const keys = job.keys ?? [];
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  let nextKey = 0;
  const started = process.hrtime.bigint();
  const deadline = started + BigInt(job.durationMs) * 1_000_000n;
  const worker = async (): Promise<void> => {
    while (process.hrtime.bigint() < deadline) {
      const n = ++sequence;
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'a2a-version': '1.0',
      };
      if (keys.length > 0) headers.authorization = `Bearer ${keys[nextKey++ % keys.length]}`;
      const t0 = process.hrtime.bigint();
      try {
        const response = await pool.request({
          path,
          method: 'POST',
          headers,
          body: bodyOf(job.binding, n),
        });
        await response.body.text();
        latencies.push(Number(process.hrtime.bigint() - t0));
        const key = String(response.statusCode);
        statuses[key] = (statuses[key] ?? 0) + 1;
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: job.inflight }, worker));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await pool.close();
  const sorted = Float64Array.from(latencies).sort();
  return {
    requests: latencies.length,
    errors,
    statuses,
    seconds,
    rps: latencies.length / seconds,
    p50Ms: quantileMs(sorted, 0.5),
    p99Ms: quantileMs(sorted, 0.99),
  };
}

process.on('message', (raw) => {
  const message = raw as { op: string } & LoadJob;
  if (message.op !== 'load') return;
  void load(message).then((result) => process.send?.({ re: 'load', ...result }));
});
process.on('disconnect', () => process.exit(0));
process.send?.({ ready: true });
