/**
 * Two planned clients sharing one identity, each its own process (test/fixtures/planned-client.ts),
 * against one research agent on loopback, real time, 600 SendMessage per minute per caller with a
 * burst of 10: both plan as if they were alone, so the agent refuses some of their first sends.
 * Every call still completes, each refused call is retried with its messageId no earlier than the
 * agent asked and admitted (the hints drive the retries), and the two together send far fewer
 * requests than the same two clients without a plan — no retry storm.
 */

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Policy } from 'a2a-ratelimit';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type AgentRequestEvent,
  type ResearchAgent,
  startResearchAgent,
} from './research-agent.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const POLICY: Policy = {
  name: 'per-caller',
  kind: 'rate',
  scope: 'caller',
  methods: ['SendMessage', 'SendStreamingMessage'],
  limit: 600,
  windowSeconds: 60,
  burst: 10,
};

interface ClientReport {
  completed: number;
  failed: string[];
  sends: number;
  retries: number;
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

interface ClientProcess {
  /** Resolves once the client has read the card and waits for the start signal. */
  readonly ready: Promise<void>;
  /** Starts its calls. */
  start(): void;
  readonly report: Promise<ClientReport>;
}

/** A planned client process that starts its calls when told (`--start-at stdin`). */
function spawnClient(agent: ResearchAgent, args: string[]): ClientProcess {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      // The fixture imports the library's public subpaths: from its sources, no build needed.
      '--conditions=a2a-ratelimit-source',
      'test/fixtures/planned-client.ts',
      '--url',
      agent.baseUrl,
      ...args,
    ],
    { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  let markReady = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.startsWith('ready\n')) markReady();
  });
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const report = new Promise<ClientReport>((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0) reject(new Error(`planned-client exited with ${code}: ${out} ${err}`));
      else resolve(JSON.parse(out.trim().split('\n').at(-1) ?? '') as ClientReport);
    });
  });
  return {
    // An early exit rejects the report; `ready` then never settles, so race the two.
    ready: Promise.race([ready, report.then(() => {})]),
    start: () => child.stdin.end('go\n'),
    report,
  };
}

/** Two clients with one identity, starting together; what they and the agent saw. */
async function twoProcesses(binding: 'jsonrpc' | 'grpc', plan: boolean) {
  const events: AgentRequestEvent[] = [];
  const agent = await startResearchAgent({
    policies: [POLICY],
    domain: 'research.example.com',
    metrics: false,
    onRequest: (e) => {
      if (e.method === 'SendMessage') events.push(e);
    },
  });
  closers.push(() => agent.close());
  const args = (prefix: string) => [
    '--binding',
    binding,
    '--grpc-target',
    agent.grpcTarget,
    '--token',
    'orchestrator-7',
    '--calls',
    '30',
    // Both processes up and the card read, then both told to start at once.
    '--start-at',
    'stdin',
    '--prefix',
    prefix,
    ...(plan ? [] : ['--no-plan']),
  ];
  const processes = [spawnClient(agent, args('a')), spawnClient(agent, args('b'))];
  await Promise.all(processes.map((p) => p.ready));
  for (const p of processes) p.start();
  const clients = await Promise.all(processes.map((p) => p.report));
  return { clients, events };
}

describe.each(['jsonrpc', 'grpc'] as const)(
  'two planned processes, one identity, on %s',
  (binding) => {
    it('every call completes; refused calls are retried as the agent said and admitted; no storm', async () => {
      const { clients, events } = await twoProcesses(binding, true);
      const rejected = events.filter((e) => e.outcome === 'rejected');
      const spanSeconds =
        (Math.max(...events.map((e) => e.atMs)) - Math.min(...events.map((e) => e.atMs))) / 1000;
      console.log(`[two planned processes, ${binding}]`, {
        calls: 60,
        requests: events.length,
        rejected: rejected.length,
        spanSeconds,
        clients,
      });
      expect(clients.map((c) => c.completed)).toEqual([30, 30]);
      expect(clients.flatMap((c) => c.failed)).toEqual([]);
      expect(events.filter((e) => e.outcome !== 'rejected')).toHaveLength(60);
      for (const r of rejected) {
        const retry = events.find(
          (e) => e.messageId === r.messageId && e.atMs > r.atMs && e.outcome !== 'rejected',
        );
        expect(retry, `retry of ${r.messageId}`).toBeDefined();
        expect(retry?.atMs).toBeGreaterThanOrEqual(r.atMs + (r.retryAfterMs ?? 0));
      }
      // No storm: at most one refusal per call, and far fewer than 60 at once would cost (110).
      expect(rejected.length).toBeLessThan(60);
      expect(new Set(rejected.map((r) => r.messageId)).size).toBe(rejected.length);
      expect(events.length).toBeLessThan(100);
    });
  },
);

describe('the same two processes without a plan', () => {
  it('send 60 at once: the burst of 10 admitted, the rest refused but for what refilled while they were sent', async () => {
    const { clients, events } = await twoProcesses('jsonrpc', false);
    const rejected = events.filter((e) => e.outcome === 'rejected');
    // First attempts only: on a loaded host the 60 sends spread out, and the bucket refills at
    // 10 a second meanwhile; each token refilled may admit one more first attempt.
    const firstAt = new Map<string, number>();
    for (const e of events) {
      const id = e.messageId ?? '';
      const seen = firstAt.get(id);
      if (seen === undefined || e.atMs < seen) firstAt.set(id, e.atMs);
    }
    const firsts = [...firstAt.values()];
    const spreadSeconds = (Math.max(...firsts) - Math.min(...firsts)) / 1000;
    const refilled = Math.ceil(spreadSeconds * (600 / 60)); // POLICY's rate: 10 a second
    console.log('[two unplanned processes, jsonrpc]', {
      requests: events.length,
      rejected: rejected.length,
      spreadSeconds,
    });
    expect(clients.map((c) => c.completed)).toEqual([30, 30]);
    expect(firstAt.size).toBe(60);
    expect(rejected.length).toBeGreaterThanOrEqual(50 - refilled);
    expect(rejected.length).toBeGreaterThan(0);
  });
});
