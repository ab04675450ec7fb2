/**
 * One HTTP/2 connection with a flow-control window of 0 cannot take the agent down (issue 24).
 * Found by attacking the server: an attacker opening one connection with
 * `SETTINGS_INITIAL_WINDOW_SIZE` 0 and sending many unary calls got every admitted call's response
 * stuck (no DATA frame can be written), so every call kept its in-flight slot, `maxInFlight`
 * filled, and every other caller on every binding got 503 for as long as the connection stayed
 * open. Now the attacker holds at most its share of `maxInFlight` (`maxInFlightPerCaller`) and is
 * refused alone (429-like, signal `callerShare`), and its stuck responses are cancelled at the
 * write deadline, releasing their slots. The README's policies, with `maxInFlight` scaled down
 * from 500 to 20 (so the default share is 10) and a write deadline of 300 ms.
 */

import * as http2 from 'node:http2';
import { A2AService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import type { Policy } from 'a2a-ratelimit';
import { textMessage } from 'a2a-ratelimit/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { as, startAgent, type TestAgent, userMessage } from './server-agent.helpers.js';

let agent: TestAgent | undefined;
let session: http2.ClientHttp2Session | undefined;
afterEach(async () => {
  session?.destroy();
  session = undefined;
  await agent?.close();
  agent = undefined;
});

const MAX_IN_FLIGHT = 20;
/** The README quick start's policies, `maxInFlight` scaled down. */
const README_POLICIES: readonly Policy[] = [
  {
    name: 'per-caller',
    kind: 'rate',
    scope: 'caller',
    methods: ['SendMessage', 'SendStreamingMessage'],
    limit: 60,
    windowSeconds: 60,
    burst: 10,
  },
  {
    name: 'tasks-per-caller',
    kind: 'concurrency',
    scope: 'caller',
    methods: ['SendMessage', 'SendStreamingMessage'],
    max: 5,
  },
  {
    name: 'streams-per-caller',
    kind: 'concurrency',
    scope: 'caller',
    methods: ['SendStreamingMessage', 'SubscribeToTask'],
    max: 10,
    holdUntil: 'response',
  },
  {
    name: 'agent-overload',
    kind: 'overload',
    maxInFlight: MAX_IN_FLIGHT,
    maxEventLoopDelayMs: 250,
  },
];

/** A gRPC length-prefixed message. */
function frame(bytes: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + bytes.length);
  out.writeUInt32BE(bytes.length, 1);
  Buffer.from(bytes).copy(out, 5);
  return out;
}

/** What became of one of the attacker's calls. */
interface AttackCall {
  /** Resolves once response headers arrived: the status of a Trailers-Only answer, else 'open'. */
  readonly answered: Promise<{ status: number | 'open'; headers: http2.IncomingHttpHeaders }>;
  /** Resolves when the stream closed: its RST_STREAM code (0 = ended normally). */
  readonly closed: Promise<number>;
}

function attackCall(s: http2.ClientHttp2Session, path: string, body: Uint8Array): AttackCall {
  const req = s.request({
    ':method': 'POST',
    ':path': path,
    'content-type': 'application/grpc',
    te: 'trailers',
    authorization: 'Bearer mallory',
    'a2a-version': '1.0',
  });
  req.on('error', () => undefined);
  req.end(frame(body));
  const answered = new Promise<{ status: number | 'open'; headers: http2.IncomingHttpHeaders }>(
    (resolve) =>
      req.once('response', (headers) => {
        const status = headers['grpc-status'];
        resolve({ status: status === undefined ? 'open' : Number(status), headers });
      }),
  );
  const closed = new Promise<number>((resolve) => req.once('close', () => resolve(req.rstCode)));
  return { answered, closed };
}

/** The status message of a Trailers-Only answer (the rejection's message). */
function messageOf(headers: http2.IncomingHttpHeaders): string {
  return decodeURIComponent(String(headers['grpc-message'] ?? ''));
}

describe('attack: one HTTP/2 connection with a zero flow-control window (gRPC)', () => {
  it('others are refused 0 times while it stays open; the attacker is refused or cancelled', async () => {
    agent = await startAgent({ policies: README_POLICIES, writeDeadlineMs: 300 });
    const a = agent;
    session = http2.connect(`http://${a.grpcUrl}`, { settings: { initialWindowSize: 0 } });
    const s = session;
    await new Promise<void>((resolve) => s.once('remoteSettings', () => resolve()));

    // The attacker: unary SendMessage calls (rate-limited, burst 10) and ListTasks calls (only
    // the overload policy applies), all on the one connection that never opens its window.
    const calls: AttackCall[] = [];
    for (let i = 0; i < 30; i++) {
      const send = A2AService.sendMessage.requestSerialize({
        tenant: '',
        message: textMessage({ messageId: `attack-${i}`, text: 'task' }),
      } as never);
      calls.push(attackCall(s, A2AService.sendMessage.path, send));
      calls.push(attackCall(s, A2AService.listTasks.path, new Uint8Array(0)));
    }
    const answers = await Promise.all(calls.map((c) => c.answered));
    const open = answers.filter((x) => x.status === 'open').length;
    const refused = answers.filter((x) => x.status !== 'open');
    // The attacker holds at most its share of the in-flight cap; the rest of its calls are refused.
    expect(open).toBeLessThanOrEqual(MAX_IN_FLIGHT / 2);
    expect(open).toBeGreaterThan(0);
    expect(refused.length).toBe(calls.length - open);
    expect(refused.every((x) => x.status === grpc.status.RESOURCE_EXHAUSTED)).toBe(true);
    // Refused as the caller over its share, never as the whole agent overloaded.
    expect(refused.some((x) => messageOf(x.headers).includes('caller share: 10 of 20'))).toBe(true);
    expect(refused.some((x) => messageOf(x.headers).includes('Agent overloaded'))).toBe(false);

    // Everyone else, on every binding, while the attacker's connection is open and stuck.
    let othersRefused = 0;
    const grpcClient = await a.client('GRPC');
    const rpcClient = await a.client('JSONRPC');
    for (let i = 0; i < 8; i++) {
      const outcomes = await Promise.allSettled([
        grpcClient.sendMessage({ message: userMessage(`alice-g${i}`) } as never, as('alice')),
        rpcClient.sendMessage({ message: userMessage(`bob-j${i}`) } as never, as('bob')),
        fetch(`${a.restUrl}/tasks`, {
          headers: { 'a2a-version': '1.0', authorization: 'Bearer carol' },
        }).then(async (res) => {
          await res.text();
          if (res.status !== 200) throw new Error(`REST ${res.status}`);
        }),
      ]);
      othersRefused += outcomes.filter((o) => o.status === 'rejected').length;
    }
    expect(othersRefused).toBe(0);

    // The attacker's stuck calls: cancelled at the write deadline (RST_STREAM CANCEL), their
    // slots released, while its connection is still open.
    const codes = await Promise.all(
      calls.filter((_c, i) => answers[i]?.status === 'open').map((c) => c.closed),
    );
    expect(codes.every((code) => code === http2.constants.NGHTTP2_CANCEL)).toBe(true);
    expect(s.closed || s.destroyed).toBe(false);
    expect(a.limiter.leasesHeld()).toBe(0);
  });
});
