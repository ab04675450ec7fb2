/**
 * A hostile gRPC caller against the gateway: request messages that protobuf parsers read
 * differently (a field sent twice, with another wire type, after a tag 0) are refused, and the
 * message decided is the one the agent is sent, byte for byte and uncompressed, whatever
 * compression it came in. The agent is a raw HTTP/2 recorder of what reaches it.
 */

import { connect, createServer, type Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { A2AService } from '@a2a-js/sdk/server/grpc';
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import * as grpcJs from '@grpc/grpc-js';
import type { ConcurrencyPolicy, Policy, RatePolicy } from 'a2a-ratelimit';
import { textMessage } from 'a2a-ratelimit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SdkUpstream, startSdkUpstream } from './gateway.helpers.js';
import {
  type GrpcTestGateway,
  rawClient,
  rawUnary,
  sendRequestBytes,
  startGrpcGateway,
  startSdkGrpcUpstream,
} from './gateway-grpc.helpers.js';

const SEND = '/lf.a2a.v1.A2AService/SendMessage';

const perCaller: RatePolicy = {
  name: 'per-caller',
  kind: 'rate',
  scope: 'caller',
  methods: ['SendMessage'],
  limit: 100,
  windowSeconds: 3600,
  burst: 100,
};

/** What reached the recorder: each call's headers and its request bytes. */
interface Received {
  readonly encoding: string | undefined;
  readonly body: Buffer;
}

/** A gRPC "agent" that records each call and answers UNIMPLEMENTED. */
async function startRecorder(): Promise<{
  target: string;
  calls: Received[];
  server: Http2Server;
}> {
  const calls: Received[] = [];
  const server = createServer();
  server.on('stream', (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      const encoding = headers['grpc-encoding'];
      calls.push({
        encoding: typeof encoding === 'string' ? encoding : undefined,
        body: Buffer.concat(chunks),
      });
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12' },
        { endStream: true },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { target: `127.0.0.1:${(server.address() as AddressInfo).port}`, calls, server };
}

/** A `SendMessageRequest`: field 1 tenant, field 2 message (field 1 messageId, 4 role). */
function message(messageId: string): Uint8Array {
  return new BinaryWriter().uint32(10).string(messageId).uint32(32).int32(1).finish();
}

/** A framed request with the compressed flag as given. */
function frame(bytes: Uint8Array, compressed = false): Buffer {
  const out = Buffer.alloc(5 + bytes.length);
  out[0] = compressed ? 1 : 0;
  out.writeUInt32BE(bytes.length, 1);
  out.set(bytes, 5);
  return out;
}

/**
 * One raw call to the gateway: its grpc-status. `halfClose: false` sends the message and never
 * ends the caller's side.
 */
function call(
  target: string,
  body: Buffer,
  headers: Record<string, string> = {},
  options: { readonly halfClose: boolean } = { halfClose: true },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const session = connect(`http://${target}`);
    session.on('error', reject);
    const stream = session.request({
      ':method': 'POST',
      ':path': SEND,
      'content-type': 'application/grpc',
      te: 'trailers',
      authorization: 'Bearer attacker',
      ...headers,
    });
    let status = '';
    stream.on('response', (h) => {
      if (h['grpc-status'] !== undefined) status = String(h['grpc-status']);
    });
    stream.on('trailers', (t) => {
      if (t['grpc-status'] !== undefined) status = String(t['grpc-status']);
    });
    stream.on('data', () => undefined);
    stream.on('close', () => {
      session.close();
      resolve(status);
    });
    if (options.halfClose) stream.end(body);
    else stream.write(body);
  });
}

/** Polls (no timed assertion) until `condition` holds. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('gRPC request messages read one way by the gateway and another by the agent', () => {
  let upstream: SdkUpstream;
  let recorder: Awaited<ReturnType<typeof startRecorder>>;
  let gw: GrpcTestGateway;
  beforeAll(async () => {
    upstream = await startSdkUpstream();
    recorder = await startRecorder();
    gw = await startGrpcGateway(upstream.baseUrl, {
      policies: [perCaller],
      gateway: { upstreamGrpc: recorder.target },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await new Promise<void>((resolve) => recorder?.server.close(() => resolve()));
    await upstream?.close();
  });

  it('the agent is sent the decided bytes uncompressed, whatever compression they came in', async () => {
    // Two gzip members: one parser reads both (the message the gateway decided, whose second
    // half names another messageId), another only the first.
    const first = new BinaryWriter().uint32(18).bytes(message('m-first')).finish();
    const second = new BinaryWriter().uint32(10).string('acme').finish();
    const compressed = Buffer.concat([gzipSync(first), gzipSync(second)]);
    const status = await call(gw.grpcTarget, frame(compressed, true), { 'grpc-encoding': 'gzip' });
    expect(status).toBe('12'); // the recorder's answer: admitted and forwarded
    const received = recorder.calls.at(-1);
    expect(received?.encoding).toBeUndefined();
    expect(received?.body).toEqual(frame(Buffer.concat([first, second])));
  });

  it('refuses a message field sent twice, a read field of another wire type, a tag 0', async () => {
    const before = recorder.calls.length;
    const shapes: [string, Uint8Array][] = [
      // A conformant parser merges the two messages (messageId m-1 kept); the scan saw none.
      [
        'message twice',
        new BinaryWriter()
          .uint32(18)
          .bytes(message('m-1'))
          .uint32(18)
          .bytes(new BinaryWriter().uint32(32).int32(1).finish())
          .finish(),
      ],
      // protobufjs reads field 1 as the tenant whatever its wire type: "acme-corp" here, where
      // the scan skipped a varint and a fixed64.
      ['tenant as a varint', Buffer.concat([Buffer.from([0x08, 0x09]), Buffer.from('acme-corp')])],
      // After a tag 0, ts-proto stops and protobufjs reads on into a tenant.
      [
        'tag 0',
        Buffer.concat([
          new BinaryWriter().uint32(18).bytes(message('m-2')).finish(),
          Buffer.from([0x00, 0x00]),
          new BinaryWriter().uint32(10).string('acme').finish(),
        ]),
      ],
      // A 5-byte tag that protobufjs truncates to field 1 (the tenant), the scan read as another.
      [
        'long tag',
        Buffer.concat([Buffer.from([0x8a, 0x80, 0x80, 0x80, 0x10, 0x04]), Buffer.from('acme')]),
      ],
    ];
    for (const [name, bytes] of shapes) {
      expect(await call(gw.grpcTarget, frame(bytes)), name).toBe('3');
    }
    expect(recorder.calls.length).toBe(before);
  });
});

describe('a gRPC call whose request message never comes', () => {
  it('is answered DEADLINE_EXCEEDED once the read timeout passes, and holds nothing after', async () => {
    const upstream = await startSdkUpstream();
    const recorder = await startRecorder();
    const gw = await startGrpcGateway(upstream.baseUrl, {
      policies: [perCaller],
      gateway: { upstreamGrpc: recorder.target, grpcReadTimeoutMs: 200 },
    });
    try {
      // Headers, and half a message prefix: the caller never sends the rest, nor ends its side.
      const session = connect(`http://${gw.grpcTarget}`);
      const status = await new Promise<string>((resolve) => {
        const stream = session.request({
          ':method': 'POST',
          ':path': SEND,
          'content-type': 'application/grpc',
          te: 'trailers',
        });
        stream.on('response', (h) => resolve(String(h['grpc-status'])));
        stream.write(Buffer.from([0, 0, 0]));
      });
      expect(status).toBe('4');
      await until(() => gw.gateway.inFlight() === 0);
      session.close();
      expect(recorder.calls).toEqual([]);
    } finally {
      await gw.close();
      await new Promise<void>((resolve) => recorder.server.close(() => resolve()));
      await upstream.close();
    }
  });
});

describe('a gRPC caller that never ends its side of an answered call', () => {
  it('holds no concurrency lease once its answer is written whole', async () => {
    const oneAtATime: ConcurrencyPolicy = {
      name: 'one-at-a-time',
      kind: 'concurrency',
      scope: 'caller',
      methods: ['SendMessage'],
      max: 1,
      holdUntil: 'response',
    };
    const upstream = await startSdkGrpcUpstream();
    const gw = await startGrpcGateway(upstream.baseUrl, { policies: [oneAtATime] });
    try {
      const v1 = { 'a2a-version': '1.0' };
      const open = await call(gw.grpcTarget, frame(sendRequestBytes('open-1')), v1, {
        halfClose: false,
      });
      expect(open).toBe('0');
      await until(() => gw.gateway.inFlight() === 0);
      // Its lease went with its answer: the next call is admitted.
      expect(await call(gw.grpcTarget, frame(sendRequestBytes('open-2')), v1)).toBe('0');
      expect([...upstream.executions.keys()]).toEqual(['open-1', 'open-2']);
    } finally {
      await gw.close();
      await upstream.close();
    }
  });
});

describe('a gRPC task’s usage report, when its run is polled', () => {
  it('is charged to the caller whose message started it', async () => {
    const tokens = {
      name: 'tokens',
      kind: 'rate',
      unit: 'tokens',
      scope: 'caller',
      methods: ['SendMessage'],
      limit: 10_000,
      windowSeconds: 3600,
      estimate: 2_000,
    } as Policy;
    const tasks: Policy = { name: 'tasks', kind: 'concurrency', methods: ['SendMessage'], max: 5 };
    const guard: Policy = { name: 'guard', kind: 'overload', maxInFlight: 100 };
    const upstream = await startSdkGrpcUpstream({ usageTokens: 9_000 });
    const gw = await startGrpcGateway(upstream.baseUrl, {
      policies: [tokens, tasks, guard],
      gateway: { usage: { path: 'metadata.usage.totalTokens' } },
    });
    const client = rawClient(gw.grpcTarget);
    try {
      const md = new grpcJs.Metadata();
      md.set('a2a-version', '1.0');
      md.set('authorization', 'Bearer alice');
      const send = (messageId: string, text: string) =>
        rawUnary(
          client,
          SEND,
          A2AService.sendMessage.requestSerialize({
            tenant: '',
            message: textMessage({ messageId, text }),
            configuration: {
              acceptedOutputModes: [],
              taskPushNotificationConfig: undefined,
              returnImmediately: true,
            },
          } as never),
          md,
        );
      const stateOf = async (id: string) => {
        const got = await rawUnary(
          client,
          '/lf.a2a.v1.A2AService/GetTask',
          A2AService.getTask.requestSerialize({ tenant: '', id } as never),
          md,
        );
        const task = A2AService.getTask.responseDeserialize(got.answer as Buffer) as unknown as {
          status?: { state: number };
        };
        return task.status?.state;
      };
      const started = await send('g-polled-1', 'hold');
      const answer = A2AService.sendMessage.responseDeserialize(
        started.answer as Buffer,
      ) as unknown as { payload?: { value: { id: string } } };
      const taskId = answer.payload?.value.id as string;
      expect(await stateOf(taskId)).toBe(2); // polled while WORKING
      upstream.releaseHeld();
      while ((await stateOf(taskId)) !== 3) await new Promise((r) => setTimeout(r, 20));
      let admitted = 0;
      for (const id of ['g-polled-2', 'g-polled-3', 'g-polled-4']) {
        if ((await send(id, 'hi')).error === undefined) admitted++;
      }
      expect(admitted).toBeLessThanOrEqual(1);
    } finally {
      client.close();
      await gw.close();
      await upstream.close();
    }
  });
});
