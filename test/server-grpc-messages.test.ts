/**
 * A gRPC call that sends two request messages on a unary method is decided once: the second
 * message fails the call (UNIMPLEMENTED, as grpc-js would answer), is neither decided nor run,
 * and the first admission's leases end with the call. (Found by attacking the server: each
 * message used to be decided, and the first ticket's leases were held for good.)
 */

import { A2AService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { startAgent, type TestAgent } from './server-agent.helpers.js';

let agent: TestAgent | undefined;
let client: grpc.Client | undefined;
afterEach(async () => {
  client?.close();
  client = undefined;
  await agent?.close();
  agent = undefined;
});

interface MethodDefinition {
  readonly path: string;
  readonly requestSerialize: (value: unknown) => Buffer;
  readonly responseDeserialize: (bytes: Buffer) => unknown;
}

const definitions = A2AService as unknown as Record<string, MethodDefinition>;

function metadataFor(caller: string | undefined): grpc.Metadata {
  const md = new grpc.Metadata();
  md.set('a2a-version', '1.0');
  if (caller !== undefined) md.set('authorization', `Bearer ${caller}`);
  return md;
}

/** One call on a unary method that writes `messages` request messages; resolves with its status code. */
function callWithMessages(
  c: grpc.Client,
  method: MethodDefinition,
  caller: string | undefined,
  messages: readonly unknown[],
): Promise<number> {
  return new Promise((resolve) => {
    const call = c.makeClientStreamRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      metadataFor(caller),
      {},
      (error) => resolve(error === null ? 0 : (error as grpc.ServiceError).code),
    );
    for (const m of messages) call.write(m);
    call.end();
  });
}

describe('two request messages on one gRPC call', () => {
  it('leak no overload lease: after 3 such calls (nothing ran) a new caller is still admitted', async () => {
    agent = await startAgent({
      policies: [{ name: 'agent-overload', kind: 'overload', maxInFlight: 3 }],
    });
    const a = agent;
    client = new grpc.Client(a.grpcUrl, grpc.credentials.createInsecure());
    const getTask = definitions.getTask as MethodDefinition;
    const codes: number[] = [];
    for (let i = 0; i < 3; i++) {
      codes.push(
        await callWithMessages(client, getTask, undefined, [
          { tenant: '', id: 'a' },
          { tenant: '', id: 'b' },
        ]),
      );
    }
    // grpc-js refuses each call; nothing ran.
    expect(codes.every((code) => code !== 0)).toBe(true);
    expect(a.handlerCalls).toEqual([]);
    // Every call has ended: nothing may still be counted in flight (once the server has seen each
    // end, however long a loaded machine takes; a leaked lease never goes).
    await expect.poll(() => a.limiter.leasesHeld(), { timeout: 10_000 }).toBe(0);
    const alice = await callWithMessages(client, getTask, 'alice', [{ tenant: '', id: 'x' }]);
    // NOT_FOUND (5) for the unknown task is an admitted call; UNAVAILABLE (14) is the leak.
    expect(alice).toBe(grpc.status.NOT_FOUND);
  });

  it('is decided once: the second message of a call is not charged to the caller', async () => {
    agent = await startAgent({
      policies: [
        { name: 'two', kind: 'rate', scope: 'caller', limit: 2, windowSeconds: 3600, burst: 2 },
      ],
    });
    const a = agent;
    client = new grpc.Client(a.grpcUrl, grpc.credentials.createInsecure());
    const getTask = definitions.getTask as MethodDefinition;
    await callWithMessages(client, getTask, 'bob', [
      { tenant: '', id: 'a' },
      { tenant: '', id: 'b' },
    ]);
    // One call (which ran nothing) may cost bob at most one of his two requests.
    const next = await callWithMessages(client, getTask, 'bob', [{ tenant: '', id: 'x' }]);
    expect(next).toBe(grpc.status.NOT_FOUND);
    expect(a.admissions.filter((x) => x.caller === 'bob')).toHaveLength(2);
  });
});
