/**
 * @module gateway.bench
 * `tsx bench/gateway.bench.ts` (`npm run bench:gateway`): what the gateway costs in front of an
 * agent, against nginx. A trivial A2A upstream on loopback (`gateway-bench-upstream.ts`), each
 * of these in a child process of its own: the upstream called directly; nginx `proxy_pass` with
 * upstream keepalive (one process, no master); the gateway as `a2a-ratelimit gateway` starts it
 * without any policy; the gateway with the README's gateway.yaml (its two policies, callers by
 * API key: one key per request in turn from 8,192, so every request is admitted and a real
 * admission runs); the Node floor (`gateway-bench-floor.ts`: a bare `node:http` server piping each
 * request through an undici `Agent`, nothing else — what any Node proxy costs, so what the gateway
 * adds beyond Node shows). The load generator is a child too (`gateway-bench-load.ts`: JSON-RPC
 * SendMessage, a fixed number in flight, a new messageId each). Rounds interleave the targets;
 * medians over rounds:
 * - requests/s at 64 in flight, and the CPU µs per request of the proxy process (user + system
 *   time from `/proc/<pid>/stat`, the same reading for nginx and the gateway); the connections the
 *   upstream accepted meanwhile (a proxy reusing its upstream connections opens none);
 * - latency added over the direct call, p50 / p99, at 1 and at 64 in flight;
 * - SSE relay delay: the upstream stamps each event with `process.hrtime.bigint()` (one monotonic
 *   clock for every process), the client takes arrival − stamp; through the gateway without
 *   policies, with nginx and direct alongside;
 * - heap per open stream: 500 SSE streams held open through the gateway (each has had its first
 *   event, so each has its own upstream connection), `heapUsed` after GC before and while open.
 * - the gRPC row (`gateway-bench-grpc.ts`): unary SendMessage through `--grpc-port` against a
 *   direct gRPC call to the same upstream, same run: requests/s, added p50 / p99.
 * Prints every figure, then one JSON object as the last line (the goals of issue 27 and whether
 * each is met; `cpuMicrosPerRequestNodeFloor`, `ratioNodeFloorOverNginx`, `cpuGatewayOverNodeFloor`
 * for the floor). Env: BENCH_ROUNDS (3), BENCH_LOAD_MS (2500), BENCH_LAT1_MS (1500), BENCH_STREAMS
 * (500); BENCH_CPU_PROF_DIR: the policed gateway runs with `--cpu-prof` and writes its profile there.
 */

import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { grpcRow } from './gateway-bench-grpc.js';
import {
  type Child,
  cpuMicrosOf,
  freePort,
  median,
  nginxConfig,
  quantile,
  startChild,
} from './gateway-bench-parts.js';
import { heapPerStream, STREAMS, sseDelays, waitForPort } from './gateway-bench-streams.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const LOAD_MS = Number(process.env.BENCH_LOAD_MS ?? 2500);
const LAT1_MS = Number(process.env.BENCH_LAT1_MS ?? 1500);
const WARM_MS = 400;
const INFLIGHT = 64;
const KEYS = 8192;

/** The README's gateway.yaml ("Protect any A2A agent"), its keys in a file with the bench's. */
const README_POLICIES = `policies:
  - name: per-caller
    kind: rate
    scope: caller
    methods: [SendMessage, SendStreamingMessage]
    limit: 60
    windowSeconds: 60
    burst: 10
  - name: tasks-per-caller
    kind: concurrency
    scope: caller
    methods: [SendMessage, SendStreamingMessage]
    max: 5
identity:
  apiKeysFile: keys.json
  anonymous: allow
`;

interface Target {
  readonly name: 'direct' | 'nginx' | 'gateway' | 'gatewayPolicies' | 'nodeFloor';
  readonly origin: string;
  /** The process whose CPU is counted (the upstream's own for `direct`). */
  readonly pid: number;
  readonly keys?: readonly string[];
}

interface LoadResult {
  readonly requests: number;
  readonly errors: number;
  readonly statuses: Record<string, number>;
  readonly seconds: number;
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

const round3 = (n: number): number => Math.round(n * 1000) / 1000;
const round1 = (n: number): number => Math.round(n * 10) / 10;

async function loadOnce(
  load: Child,
  target: Target,
  inflight: number,
  durationMs: number,
): Promise<LoadResult> {
  return load.ask<LoadResult>({
    op: 'load',
    origin: target.origin,
    binding: 'jsonrpc',
    inflight,
    durationMs,
    ...(target.keys === undefined ? {} : { keys: target.keys }),
  });
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'gateway-bench-'));
  const children: Child[] = [];
  let nginx: ReturnType<typeof spawn> | undefined;
  try {
    const upstream = startChild('gateway-bench-upstream.ts', []);
    children.push(upstream);
    const upstreamPort = Number((await upstream.ready).port);
    const upstreamUrl = `http://127.0.0.1:${upstreamPort}`;

    const nginxPort = await freePort();
    await writeFile(join(dir, 'nginx.conf'), nginxConfig(dir, nginxPort, upstreamPort));
    nginx = spawn(
      'nginx',
      ['-e', join(dir, 'error.log'), '-p', dir, '-c', join(dir, 'nginx.conf')],
      {
        stdio: ['ignore', 'inherit', 'inherit'],
      },
    );
    await waitForPort(nginxPort, 10_000);

    const keys = Array.from({ length: KEYS }, (_, i) => `bench-key-${i}-0123456789abcdef`);
    await writeFile(
      join(dir, 'keys.json'),
      JSON.stringify([
        { key: 'orchestrator-7-key-0123456789', caller: 'orchestrator-7' },
        ...keys.map((key, i) => ({ key, caller: `caller-${i}` })),
      ]),
    );
    await writeFile(join(dir, 'gateway.yaml'), README_POLICIES);
    const bare = startChild('gateway-bench-proxy.ts', [upstreamUrl, 'none'], ['--expose-gc']);
    children.push(bare);
    // BENCH_CPU_PROF_DIR: the policed gateway writes a V8 CPU profile there when the bench ends.
    const profileDir = process.env.BENCH_CPU_PROF_DIR;
    const policed = startChild(
      'gateway-bench-proxy.ts',
      [upstreamUrl, join(dir, 'gateway.yaml')],
      [
        '--expose-gc',
        ...(profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]),
      ],
    );
    children.push(policed);
    const floor = startChild('gateway-bench-floor.ts', [upstreamUrl]);
    children.push(floor);
    const load = startChild('gateway-bench-load.ts', []);
    children.push(load);
    const [bareReady, policedReady, floorReady] = await Promise.all([
      bare.ready,
      policed.ready,
      floor.ready,
      load.ready,
    ]);

    const targets: Target[] = [
      { name: 'direct', origin: upstreamUrl, pid: upstream.process.pid ?? 0 },
      { name: 'nginx', origin: `http://127.0.0.1:${nginxPort}`, pid: nginx.pid ?? 0 },
      { name: 'gateway', origin: String(bareReady.url), pid: bare.process.pid ?? 0 },
      {
        name: 'gatewayPolicies',
        origin: String(policedReady.url),
        pid: policed.process.pid ?? 0,
        keys,
      },
      // The Node floor: a bare node:http + undici proxy (what any Node proxy costs).
      { name: 'nodeFloor', origin: String(floorReady.url), pid: floor.process.pid ?? 0 },
    ];
    console.log(
      `targets: ${targets.map((t) => `${t.name} ${t.origin} (pid ${t.pid})`).join(', ')}`,
    );

    const at64: Record<
      string,
      { rps: number[]; cpu: number[]; p50: number[]; p99: number[]; connections: number[] }
    > = {};
    // Connections the upstream accepted (does each proxy reuse its upstream connections?).
    const upstreamConnections = async (): Promise<number> =>
      (await upstream.ask<{ connections: number }>({ op: 'connections' })).connections;
    const at1: Record<string, { p50: number[]; p99: number[] }> = {};
    for (const t of targets) {
      at64[t.name] = { rps: [], cpu: [], p50: [], p99: [], connections: [] };
      at1[t.name] = { p50: [], p99: [] };
    }
    const added = {
      p50At64: {} as Record<string, number[]>,
      p99At64: {} as Record<string, number[]>,
      p50At1: {} as Record<string, number[]>,
      p99At1: {} as Record<string, number[]>,
    };
    const push = (into: Record<string, number[]>, name: string, value: number): void => {
      into[name] ??= [];
      into[name].push(value);
    };

    // Warm every target once (JIT, pools, caches) before any round counts.
    for (const t of targets) await loadOnce(load, t, INFLIGHT, 1500);
    for (let round = 0; round < ROUNDS; round++) {
      // Rotated order, so no target always runs first or last.
      const order = targets.map((_, i) => targets[(i + round) % targets.length] as Target);
      const p64: Record<string, LoadResult> = {};
      for (const t of order) {
        await loadOnce(load, t, INFLIGHT, WARM_MS);
        const connections0 = await upstreamConnections();
        const cpu0 = cpuMicrosOf(t.pid);
        const r = await loadOnce(load, t, INFLIGHT, LOAD_MS);
        const cpuPerRequest = (cpuMicrosOf(t.pid) - cpu0) / r.requests;
        const opened = (await upstreamConnections()) - connections0;
        p64[t.name] = r;
        const m = at64[t.name];
        m?.rps.push(r.rps);
        m?.cpu.push(cpuPerRequest);
        m?.p50.push(r.p50Ms);
        m?.p99.push(r.p99Ms);
        m?.connections.push(opened);
        console.log(
          `round ${round + 1} 64 in flight ${t.name}: ${Math.round(r.rps)} req/s, ${round1(cpuPerRequest)} µs CPU/request, p50 ${round3(r.p50Ms)} ms, p99 ${round3(r.p99Ms)} ms, statuses ${JSON.stringify(r.statuses)}, errors ${r.errors}, upstream connections opened ${opened}`,
        );
      }
      const p1: Record<string, LoadResult> = {};
      for (const t of order) {
        await loadOnce(load, t, 1, WARM_MS / 2);
        const r = await loadOnce(load, t, 1, LAT1_MS);
        p1[t.name] = r;
        at1[t.name]?.p50.push(r.p50Ms);
        at1[t.name]?.p99.push(r.p99Ms);
        console.log(
          `round ${round + 1} 1 in flight ${t.name}: p50 ${round3(r.p50Ms)} ms, p99 ${round3(r.p99Ms)} ms (${r.requests} requests, statuses ${JSON.stringify(r.statuses)})`,
        );
      }
      for (const t of targets) {
        if (t.name === 'direct') continue;
        push(added.p50At64, t.name, (p64[t.name]?.p50Ms ?? 0) - (p64.direct?.p50Ms ?? 0));
        push(added.p99At64, t.name, (p64[t.name]?.p99Ms ?? 0) - (p64.direct?.p99Ms ?? 0));
        push(added.p50At1, t.name, (p1[t.name]?.p50Ms ?? 0) - (p1.direct?.p50Ms ?? 0));
        push(added.p99At1, t.name, (p1[t.name]?.p99Ms ?? 0) - (p1.direct?.p99Ms ?? 0));
      }
    }

    const sse: Record<string, { p50: number[]; p99: number[] }> = {};
    const sseTargets = targets.filter(
      (t) => t.name !== 'gatewayPolicies' && t.name !== 'nodeFloor',
    );
    for (let round = 0; round < ROUNDS; round++) {
      for (const t of sseTargets) {
        const delays = await sseDelays(t);
        const s = sse[t.name] ?? { p50: [], p99: [] };
        sse[t.name] = s;
        s.p50.push(quantile(delays, 0.5));
        s.p99.push(quantile(delays, 0.99));
        console.log(
          `round ${round + 1} SSE ${t.name}: ${delays.length} events, relay delay p50 ${round3(quantile(delays, 0.5))} ms, p99 ${round3(quantile(delays, 0.99))} ms, max ${round3(quantile(delays, 1))} ms`,
        );
      }
    }

    const heap: Record<string, number>[] = [];
    const gatewayTarget = targets[2] as Target;
    for (let round = 0; round < 2; round++) {
      const h = await heapPerStream(bare, gatewayTarget.origin);
      heap.push(h);
      console.log(
        `heap round ${round + 1}: ${h.open} streams open through the gateway, ${Math.round(h.bytesPerStream ?? 0)} B per open stream (heap ${round1(h.heapBeforeMb ?? 0)} → ${round1(h.heapOpenMb ?? 0)} MB open → ${round1(h.heapAfterCloseMb ?? 0)} MB closed)`,
      );
    }

    const grpc = await grpcRow({
      rounds: ROUNDS,
      loadMs: LOAD_MS,
      lat1Ms: LAT1_MS,
      warmMs: WARM_MS,
      inflight: INFLIGHT,
      config: join(dir, 'gateway.yaml'),
      keys,
    });
    const med = (values: readonly number[] | undefined): number => median([...(values ?? [])]);
    const rps = Object.fromEntries(
      targets.map((t) => [t.name, Math.round(med(at64[t.name]?.rps))]),
    );
    const cpu = Object.fromEntries(targets.map((t) => [t.name, round1(med(at64[t.name]?.cpu))]));
    const connectionsOpened = Object.fromEntries(
      targets.map((t) => [t.name, med(at64[t.name]?.connections)]),
    );
    const summary = (name: string) => ({
      ratioOverNginx: round3(med(at64[name]?.rps) / med(at64.nginx?.rps)),
      cpuMicrosPerRequest: round1(med(at64[name]?.cpu)),
      cpuOverNginx: round3(med(at64[name]?.cpu) / med(at64.nginx?.cpu)),
      addedP50MsAt1: round3(med(added.p50At1[name])),
      addedP99MsAt1: round3(med(added.p99At1[name])),
      addedP50MsAt64: round3(med(added.p50At64[name])),
      addedP99MsAt64: round3(med(added.p99At64[name])),
    });
    const byTarget = {
      nginx: summary('nginx'),
      gateway: summary('gateway'),
      gatewayPolicies: summary('gatewayPolicies'),
      nodeFloor: summary('nodeFloor'),
    };
    const cpuGatewayOverNodeFloor = round3(
      med(at64.gatewayPolicies?.cpu) / med(at64.nodeFloor?.cpu),
    );
    console.log(
      `Node floor (node:http + undici, nothing else): ${Math.round(med(at64.nodeFloor?.rps))} req/s, ${byTarget.nodeFloor.cpuMicrosPerRequest} µs CPU/request (${byTarget.nodeFloor.cpuOverNginx}× nginx; gateway with policies ${cpuGatewayOverNodeFloor}× the floor), added p50/p99 at 1 in flight ${byTarget.nodeFloor.addedP50MsAt1}/${byTarget.nodeFloor.addedP99MsAt1} ms, at ${INFLIGHT} ${byTarget.nodeFloor.addedP50MsAt64}/${byTarget.nodeFloor.addedP99MsAt64} ms`,
    );
    const latency = Object.fromEntries(
      targets.map((t) => [
        t.name,
        {
          p50MsAt1: round3(med(at1[t.name]?.p50)),
          p99MsAt1: round3(med(at1[t.name]?.p99)),
          p50MsAt64: round3(med(at64[t.name]?.p50)),
          p99MsAt64: round3(med(at64[t.name]?.p99)),
        },
      ]),
    );
    const sseSummary = Object.fromEntries(
      Object.entries(sse).map(([name, s]) => [
        name,
        { p50Ms: round3(med(s.p50)), p99Ms: round3(med(s.p99)) },
      ]),
    );
    const heapBytesPerOpenStream = Math.round(med(heap.map((h) => h.bytesPerStream ?? 0)));
    const headline = byTarget.gatewayPolicies;
    const sseRelayP99Ms = sseSummary.gateway?.p99Ms ?? Number.NaN;
    console.log(`requests/s at ${INFLIGHT} in flight: ${JSON.stringify(rps)}`);
    console.log(`proxy CPU µs per request (direct: the upstream's own): ${JSON.stringify(cpu)}`);
    console.log(
      `upstream connections opened per ${LOAD_MS} ms run at ${INFLIGHT} in flight (direct: the load generator's own): ${JSON.stringify(connectionsOpened)}`,
    );
    console.log(`latency: ${JSON.stringify(latency)}`);
    console.log(`over direct / nginx: ${JSON.stringify(byTarget)}`);
    console.log(`SSE relay delay (upstream send → client arrival): ${JSON.stringify(sseSummary)}`);
    console.log(`heap per open stream (gateway, ${STREAMS} streams): ${heapBytesPerOpenStream} B`);
    const goal = (value: number, limit: number, atLeast = false) => ({
      value,
      goal: atLeast ? `>= ${limit}` : `<= ${limit}`,
      met: atLeast ? value >= limit : value <= limit,
    });
    const goals = {
      ratioGatewayOverNginx: goal(headline.ratioOverNginx, 0.5, true),
      cpuGatewayOverNginx: goal(headline.cpuOverNginx, 3),
      addedP50MsAt1: goal(headline.addedP50MsAt1, 0.3),
      sseRelayP99Ms: goal(sseRelayP99Ms, 1),
      heapBytesPerOpenStream: goal(heapBytesPerOpenStream, 16_384),
    };
    console.log(
      JSON.stringify({
        bench: 'gateway',
        note: 'headline figures: the gateway with the README policies (8,192 API-key callers, every request admitted); "bare": no policy; shared noisy 2-core machine, all processes on it',
        rounds: ROUNDS,
        inflight: INFLIGHT,
        ratioGatewayOverNginx: headline.ratioOverNginx,
        cpuMicrosPerRequestGateway: headline.cpuMicrosPerRequest,
        cpuMicrosPerRequestNginx: byTarget.nginx.cpuMicrosPerRequest,
        cpuMicrosPerRequestNodeFloor: byTarget.nodeFloor.cpuMicrosPerRequest,
        ratioNodeFloorOverNginx: byTarget.nodeFloor.ratioOverNginx,
        cpuGatewayOverNodeFloor,
        addedP50MsAt1: headline.addedP50MsAt1,
        addedP99MsAt1: headline.addedP99MsAt1,
        addedP50MsAt64: headline.addedP50MsAt64,
        addedP99MsAt64: headline.addedP99MsAt64,
        sseRelayP50Ms: sseSummary.gateway?.p50Ms,
        sseRelayP99Ms,
        heapBytesPerOpenStream,
        ...grpc,
        bare: byTarget.gateway,
        nginx: byTarget.nginx,
        nodeFloor: byTarget.nodeFloor,
        rps,
        cpuMicrosPerRequest: cpu,
        upstreamConnectionsOpenedPerRun: connectionsOpened,
        latency,
        sse: sseSummary,
        heap: heap.map((h) => ({
          open: h.open,
          bytesPerStream: Math.round(h.bytesPerStream ?? 0),
        })),
        goals,
        allGoalsMet: Object.values(goals).every((g) => g.met),
      }),
    );
  } finally {
    const policed = children[2];
    if (process.env.BENCH_CPU_PROF_DIR !== undefined && policed?.process.connected === true) {
      // A clean exit, so V8 writes the profile (SIGKILL would lose it).
      const exited = new Promise((resolve) => policed.process.once('exit', resolve));
      policed.process.disconnect();
      await exited;
    }
    for (const child of children) child.kill();
    if (nginx?.exitCode === null) nginx.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
