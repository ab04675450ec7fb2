/**
 * @module gateway-bench-grpc
 * The gRPC row of `bench/gateway.bench.ts`: a trivial A2A agent on gRPC, the gateway in front of
 * it as `a2a-ratelimit gateway --grpc-port` starts it (with the bench's config: the README
 * policies, callers by API key in turn, so every call is admitted after a real admission), and a
 * grpc-js load generator, each a child process (`gateway-bench-grpc-child.ts`). Rounds alternate
 * the direct call and the gateway; medians over rounds of requests/s at 64 in flight (unary
 * SendMessage), and the latency the gateway adds over the direct call in the same round, p50 /
 * p99, at 1 and at 64 in flight.
 */

import { type Child, median, startChild } from './gateway-bench-parts.js';

/** What the row is run with. */
export interface GrpcRowOptions {
  readonly rounds: number;
  readonly loadMs: number;
  readonly lat1Ms: number;
  readonly warmMs: number;
  readonly inflight: number;
  /** The gateway's config file, or `none`. */
  readonly config: string;
  /** API keys sent in turn (`authorization: Bearer`). */
  readonly keys?: readonly string[];
}

/** The row's figures (medians over rounds). */
export interface GrpcRow {
  readonly grpcRequestsPerSecond: number;
  readonly grpcDirectRequestsPerSecond: number;
  readonly grpcAddedP50MsAt1: number;
  readonly grpcAddedP99MsAt1: number;
  readonly grpcAddedP50MsAt64: number;
  readonly grpcAddedP99MsAt64: number;
  /** Status codes the gateway answered in the last round at 64 in flight (0 = OK). */
  readonly grpcCodes: Record<string, number>;
}

interface GrpcLoad {
  readonly requests: number;
  readonly ok: number;
  readonly codes: Record<string, number>;
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

const round3 = (n: number): number => Math.round(n * 1000) / 1000;

/**
 * Runs the gRPC row; prints each round's figures and returns the medians.
 *
 * @example
 * ```ts
 * const row = await grpcRow({ rounds: 3, loadMs: 2500, lat1Ms: 1500, warmMs: 400, inflight: 64, config: 'none' });
 * ```
 */
export async function grpcRow(options: GrpcRowOptions): Promise<GrpcRow> {
  const children: Child[] = [];
  try {
    const upstream = startChild('gateway-bench-grpc-child.ts', ['upstream']);
    children.push(upstream);
    const up = await upstream.ready;
    const gateway = startChild('gateway-bench-grpc-child.ts', [
      'gateway',
      String(up.url),
      options.config,
    ]);
    children.push(gateway);
    const load = startChild('gateway-bench-grpc-child.ts', ['load']);
    children.push(load);
    const [gw] = await Promise.all([gateway.ready, load.ready]);
    const targets = [
      { name: 'direct', target: String(up.grpcTarget), keys: undefined },
      { name: 'gateway', target: String(gw.grpcTarget), keys: options.keys },
    ] as const;
    console.log(`gRPC targets: direct ${targets[0].target}, gateway ${targets[1].target}`);
    const run = (t: (typeof targets)[number], inflight: number, durationMs: number) =>
      load.ask<GrpcLoad>({
        op: 'load',
        target: t.target,
        inflight,
        durationMs,
        ...(t.keys === undefined ? {} : { keys: t.keys }),
      });

    for (const t of targets) await run(t, options.inflight, 1500);
    const rps: Record<string, number[]> = { direct: [], gateway: [] };
    const added = {
      p50At1: [] as number[],
      p99At1: [] as number[],
      p50At64: [] as number[],
      p99At64: [] as number[],
    };
    let codes: Record<string, number> = {};
    for (let round = 0; round < options.rounds; round++) {
      const order = round % 2 === 0 ? targets : [targets[1], targets[0]];
      const at64: Record<string, GrpcLoad> = {};
      const at1: Record<string, GrpcLoad> = {};
      for (const t of order) {
        await run(t, options.inflight, options.warmMs);
        const r = await run(t, options.inflight, options.loadMs);
        at64[t.name] = r;
        rps[t.name]?.push(r.rps);
        if (t.name === 'gateway') codes = r.codes;
        console.log(
          `round ${round + 1} gRPC ${options.inflight} in flight ${t.name}: ${Math.round(r.rps)} req/s, p50 ${round3(r.p50Ms)} ms, p99 ${round3(r.p99Ms)} ms, codes ${JSON.stringify(r.codes)}`,
        );
      }
      for (const t of order) {
        await run(t, 1, options.warmMs / 2);
        const r = await run(t, 1, options.lat1Ms);
        at1[t.name] = r;
        console.log(
          `round ${round + 1} gRPC 1 in flight ${t.name}: p50 ${round3(r.p50Ms)} ms, p99 ${round3(r.p99Ms)} ms (${r.requests} calls, codes ${JSON.stringify(r.codes)})`,
        );
      }
      const diff = (a: Record<string, GrpcLoad>, key: 'p50Ms' | 'p99Ms'): number =>
        (a.gateway?.[key] ?? Number.NaN) - (a.direct?.[key] ?? Number.NaN);
      added.p50At64.push(diff(at64, 'p50Ms'));
      added.p99At64.push(diff(at64, 'p99Ms'));
      added.p50At1.push(diff(at1, 'p50Ms'));
      added.p99At1.push(diff(at1, 'p99Ms'));
    }
    const row: GrpcRow = {
      grpcRequestsPerSecond: Math.round(median([...(rps.gateway ?? [])])),
      grpcDirectRequestsPerSecond: Math.round(median([...(rps.direct ?? [])])),
      grpcAddedP50MsAt1: round3(median(added.p50At1)),
      grpcAddedP99MsAt1: round3(median(added.p99At1)),
      grpcAddedP50MsAt64: round3(median(added.p50At64)),
      grpcAddedP99MsAt64: round3(median(added.p99At64)),
      grpcCodes: codes,
    };
    console.log(`gRPC (unary SendMessage, gateway over direct): ${JSON.stringify(row)}`);
    return row;
  } finally {
    for (const child of children) child.kill();
  }
}
