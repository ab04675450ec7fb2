/**
 * docs/other-sdks.md, the JS column, checked: `@a2a-js/sdk`'s own client (no retry of ours) on
 * each binding against `serve`, with and without `--mirror-http-status`: the class it throws on a
 * rejection, and that `extractRetryHint({ kind: 'error', error })` reads the kind, the policy and
 * the delay from what was thrown.
 */

import { AgentCard, SendMessageRequest } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { extractRetryHint } from 'a2a-ratelimit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, startServeProcess } from './cli-process.helpers.js';

const NAMES = { jsonrpc: 'JSONRPC', rest: 'HTTP+JSON', grpc: 'GRPC' } as const;

async function refusal(serve: ServeProcess, binding: keyof typeof NAMES): Promise<unknown> {
  const card = AgentCard.fromJSON(
    await (await fetch(`${serve.baseUrl}/.well-known/agent-card.json`)).json(),
  );
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [
        new JsonRpcTransportFactory(),
        new RestTransportFactory(),
        new GrpcTransportFactory(),
      ],
      preferredTransports: [NAMES[binding]],
    }),
  );
  const client = await factory.createFromAgentCard(card);
  const caller = `other-sdks-${binding}-${process.pid}-${Date.now().toString(36)}`;
  // The default policy admits a burst of 10: the 11th is refused — unless the sends took over a
  // second (a loaded host) and a token refilled meanwhile; a few more sends reach the refusal.
  for (let i = 0; i < 30; i++) {
    try {
      await client.sendMessage(
        SendMessageRequest.fromJSON({
          message: { messageId: `${caller}-${i}`, role: 'ROLE_USER', parts: [{ text: 'x' }] },
        }),
        { serviceParameters: { authorization: `Bearer ${caller}` } },
      );
    } catch (error) {
      return error;
    }
  }
  throw new Error('never refused');
}

describe('@a2a-js/sdk client facing our rejections', () => {
  let plain: ServeProcess;
  let mirrored: ServeProcess;
  beforeAll(async () => {
    [plain, mirrored] = await Promise.all([
      startServeProcess(),
      startServeProcess(['--mirror-http-status']),
    ]);
  });
  afterAll(async () => {
    await Promise.all([plain?.stop(), mirrored?.stop()]);
  });

  it.each([
    ['jsonrpc', false, 'JsonRpcTransportError'],
    ['jsonrpc', true, 'JsonRpcTransportError'],
    ['rest', false, 'RestA2AErrorImpl'],
    ['grpc', false, 'GrpcA2AErrorImpl'],
  ] as const)(
    '%s (mirrored %s): throws %s; extractRetryHint reads it',
    async (binding, mirror, cls) => {
      const error = await refusal(mirror ? mirrored : plain, binding);
      expect((error as Error).constructor.name).toBe(cls);
      const hint = extractRetryHint({ kind: 'error', error }, Date.now());
      // REST keeps no details: the kind comes from the status, the delay from Retry-After.
      expect(hint).toMatchObject(
        binding === 'rest'
          ? { kind: 'quota', status: 429, delaySource: 'retry-after' }
          : { kind: 'quota', policy: 'per-caller', reason: 'RATE_LIMIT_EXCEEDED' },
      );
      expect(hint.delayMs).toBeGreaterThanOrEqual(1000);
      const e = error as Record<string, unknown>;
      if (binding === 'jsonrpc') {
        // error.data: the whole details array (ErrorInfo, RetryInfo, QuotaFailure); no HTTP status.
        expect(e.envelopeCode).toBe(-32603);
        expect((e.data as { '@type': string }[]).map((d) => d['@type'].split('.').at(-1))).toEqual([
          'ErrorInfo',
          'RetryInfo',
          'QuotaFailure',
        ]);
      } else if (binding === 'rest') {
        // statusCode and headers only: the body's details are not kept.
        expect(e.statusCode).toBe(429);
        expect((e.headers as Record<string, string>)['retry-after']).toMatch(/^\d+$/);
      } else {
        expect(e.status).toBe(8);
        expect(e.statusDetailsBin).toBeInstanceOf(Uint8Array);
      }
    },
  );
});
