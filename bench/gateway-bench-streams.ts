/**
 * @module gateway-bench-streams
 * `bench:gateway`'s stream measurements: SSE relay delays, heap per open stream; and waiting for
 * a port to listen.
 */

import { connect } from 'node:net';
import { type Child, type OpenStream, openStream, streamBody } from './gateway-bench-parts.js';

/** Streams held open for the heap figure (env BENCH_STREAMS, default 500). */
export const STREAMS = Number(process.env.BENCH_STREAMS ?? 500);
const SSE_STREAMS = 16;
const SSE_EVENTS = 60;
const SSE_INTERVAL_MS = 10;

/** Resolves once something accepts connections on loopback `port`. */
export function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = (): void => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > until) reject(new Error(`nothing listens on ${port}`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

/** SSE relay delays (ms) of `SSE_STREAMS` streams of `SSE_EVENTS` events each. */
export async function sseDelays(target: {
  readonly name: string;
  readonly origin: string;
}): Promise<number[]> {
  const delays: number[] = [];
  const streams = await Promise.all(
    Array.from({ length: SSE_STREAMS }, (_, i) =>
      openStream(
        target.origin,
        '/a2a/jsonrpc',
        streamBody(`sse-${target.name}-${Date.now()}-${i}`, SSE_EVENTS, SSE_INTERVAL_MS),
        (ns) => delays.push(ns / 1e6),
      ),
    ),
  );
  await Promise.all(streams.map((s) => s.ended));
  return delays;
}

/** Heap bytes per open stream through a gateway child (`heapUsed` after GC, open − before). */
export async function heapPerStream(
  gateway: Child,
  origin: string,
): Promise<Record<string, number>> {
  const open = async (n: number, tag: string): Promise<OpenStream[]> => {
    const streams: OpenStream[] = [];
    // Opened in batches so the client does not flood the listen backlog.
    for (let i = 0; i < n; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(50, n - i) }, (_, j) =>
          openStream(origin, '/a2a/jsonrpc', streamBody(`${tag}-${i + j}`, 0, 0), () => undefined),
        ),
      );
      await Promise.all(batch.map((s) => s.firstEvent));
      streams.push(...batch);
    }
    return streams;
  };
  const closeAll = async (streams: OpenStream[]): Promise<void> => {
    for (const s of streams) s.close();
    await Promise.all(streams.map((s) => s.ended));
    await new Promise((resolve) => setTimeout(resolve, 300));
  };
  const tag = `heap-${Date.now()}`;
  // Warm: every code path a stream takes has run before the baseline.
  await closeAll(await open(50, `${tag}-warm`));
  const before = await gateway.ask<{ heapUsed: number; inFlight: number }>({ op: 'heap' });
  const streams = await open(STREAMS, tag);
  const during = await gateway.ask<{ heapUsed: number; inFlight: number }>({ op: 'heap' });
  await closeAll(streams);
  const after = await gateway.ask<{ heapUsed: number; inFlight: number }>({ op: 'heap' });
  return {
    open: during.inFlight,
    bytesPerStream: (during.heapUsed - before.heapUsed) / STREAMS,
    heapBeforeMb: before.heapUsed / 2 ** 20,
    heapOpenMb: during.heapUsed / 2 ** 20,
    heapAfterCloseMb: after.heapUsed / 2 ** 20,
  };
}
