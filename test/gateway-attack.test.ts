/**
 * A hostile caller against the gateway: requests whose bytes the gateway decides one way and the
 * agent behind it reads another (a body charset the agent decodes differently; a tenant named in
 * the body or the query rather than the path), each counted on the upstream's side.
 */

import type { RatePolicy } from 'a2a-ratelimit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type SdkUpstream,
  startSdkUpstream,
  startTestGateway,
  type TestGateway,
  textMessageJson,
} from './gateway.helpers.js';

const V1 = { 'a2a-version': '1.0' };

/** One message per caller per hour; reads are free. */
const oneMessage: RatePolicy = {
  name: 'one-message',
  kind: 'rate',
  scope: 'caller',
  methods: ['SendMessage', 'SendStreamingMessage'],
  limit: 1,
  windowSeconds: 3600,
  burst: 1,
};

/** `text` in UTF-7 (RFC 2152): one shifted run of its UTF-16BE code units. */
function utf7(text: string): string {
  const units = Buffer.alloc(text.length * 2);
  for (let i = 0; i < text.length; i++) units.writeUInt16BE(text.charCodeAt(i), i * 2);
  return `+${units.toString('base64').replace(/=+$/, '')}-`;
}

async function post(
  gw: TestGateway,
  path: string,
  body: string,
  headers: Record<string, string>,
): Promise<{ status: number; text: string }> {
  const r = await fetch(`${gw.baseUrl}${path}`, {
    method: 'POST',
    headers: { ...V1, 'content-type': 'application/json', ...headers },
    body,
  });
  return { status: r.status, text: await r.text() };
}

describe('a body the agent decodes with another charset (upstream: sdk)', () => {
  let upstream: SdkUpstream;
  let gw: TestGateway;
  beforeAll(async () => {
    upstream = await startSdkUpstream();
    gw = await startTestGateway(upstream.baseUrl, { policies: [oneMessage] });
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  it('a GetTask hiding a SendMessage in UTF-7 never runs a message', async () => {
    // What the gateway reads as one string value, an agent decoding UTF-7 reads as the end of
    // GetTask's params and a second method and params (JSON.parse keeps the last of each key).
    const hidden = `"},"method":"SendMessage","params":{"message":${JSON.stringify(
      textMessageJson('smuggled', 'hi'),
    )},"z":"`;
    const body = `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t-1","x":"${utf7(hidden)}"}}`;
    for (const charset of ['utf-7', 'UTF-7', '"utf-7"']) {
      const answer = await post(gw, '/a2a/jsonrpc', body, {
        authorization: `Bearer u7-${charset}`,
        'content-type': `application/json; charset=${charset}`,
      });
      expect(answer.status).not.toBe(500);
    }
    // The same through the REST binding: a message the gateway reads as another messageId.
    const rest = `{"message":${JSON.stringify(textMessageJson('first', 'hi'))},"x":"${utf7(
      `","message":${JSON.stringify(textMessageJson('second', 'hi'))},"z":"`,
    )}"}`;
    await post(gw, '/a2a/rest/message:send', rest, {
      authorization: 'Bearer u7-rest',
      'content-type': 'application/json;charset=utf-7',
    });
    expect(upstream.executions.has('smuggled')).toBe(false);
    expect(upstream.executions.has('second')).toBe(false);
  });
});
