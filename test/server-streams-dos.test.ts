/**
 * One caller cannot hold every agent-wide in-flight slot with long-lived streams under the
 * README's policy set (found by attacking the server: with only task and rate limits, direct
 * SubscribeToTask streams and replayed streamed messages filled `maxInFlight`, and every other
 * caller was refused as "agent overloaded"). The README's `streams-per-caller` policy (a
 * concurrency limit held until the response ends) bounds them; `maxInFlight` and the stream
 * limit are scaled down from 500 / 10 to 12 / 4.
 */

import type { Policy } from 'a2a-ratelimit';
import { afterEach, describe, expect, it } from 'vitest';
import { MOUNTS, startAgent, type TestAgent } from './server-agent.helpers.js';

let agent: TestAgent | undefined;
const open: AbortController[] = [];
afterEach(async () => {
  for (const c of open.splice(0)) c.abort();
  await agent?.close();
  agent = undefined;
});

const STREAMS = 4;
/** The README quick start's policies, scaled down. */
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
    max: STREAMS,
    holdUntil: 'response',
  },
  { name: 'agent-overload', kind: 'overload', maxInFlight: 12 },
];

const V1 = { 'a2a-version': '1.0' };
const json = { 'content-type': 'application/json', ...V1 };
const sendBody = (messageId: string, text = 'task') =>
  JSON.stringify({ message: { messageId, role: 'ROLE_USER', parts: [{ text }] } });

/** Opens a response and reads its first chunk when it is a stream; the stream is left open. */
async function openStream(url: string, init: RequestInit): Promise<boolean> {
  const ac = new AbortController();
  open.push(ac);
  const res = await fetch(url, { ...init, signal: ac.signal });
  if (!res.headers.get('content-type')?.includes('text/event-stream')) {
    await res.text();
    return false;
  }
  await res.body?.getReader().read();
  return true;
}

describe.each(MOUNTS)('streams under the README policies (%s mount)', (mount) => {
  it('a caller opens at most its stream limit, directly or by replay; another caller is served', async () => {
    agent = await startAgent({ mount, policies: README_POLICIES });
    const a = agent;
    const mallory = { ...json, authorization: 'Bearer mallory' };
    expect(
      await openStream(`${a.restUrl}/message:stream`, {
        method: 'POST',
        headers: mallory,
        body: sendBody('m-long', 'hold'),
      }),
    ).toBe(true);
    const taskId = [...a.taskStore.saved.values()][0]?.id as string;
    let opened = 1;
    for (let i = 0; i < 10; i++) {
      const direct = openStream(`${a.restUrl}/tasks/${taskId}:subscribe`, {
        headers: { ...V1, authorization: 'Bearer mallory' },
      });
      const replay = openStream(`${a.restUrl}/message:stream`, {
        method: 'POST',
        headers: mallory,
        body: sendBody('m-long', 'hold'),
      });
      opened += Number(await direct) + Number(await replay);
    }
    expect(opened).toBe(STREAMS);
    expect(a.executions.get('m-long')).toBe(1);
    const res = await fetch(`${a.restUrl}/message:send`, {
      method: 'POST',
      headers: { ...json, authorization: 'Bearer alice' },
      body: sendBody('alice-1'),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).not.toContain('AGENT_OVERLOADED');
  });
});
