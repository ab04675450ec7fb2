/**
 * Push notifications cannot be turned against the agent, proven with the real SDK server and
 * clients on JSON-RPC, HTTP+JSON and gRPC: a caller registering a webhook at any forbidden class
 * of address (literal IPv4 / IPv6, IPv4-mapped, decimal / hex / octal spellings, `localhost`,
 * names the test resolver maps to forbidden addresses) gets the SDK's InvalidParams answer on
 * every binding, through CreateTaskPushNotificationConfig and through SendMessage's config (the
 * task never runs). What is accepted is delivered to the pinned address; a name re-resolving to
 * the metadata address and a redirect to it are refused at delivery. The connector records every
 * dial and sends it to a loopback stand-in, so nothing ever leaves loopback — and the record
 * shows no forbidden address was ever dialled.
 */

import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SendMessageRequest } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { isJsonRpcError, isRestError, RequestMalformedError } from '@a2a-js/sdk/errors';
import { isGrpcError } from '@a2a-js/sdk/errors/grpc';
import { textMessage } from 'a2a-ratelimit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BINDINGS, type PushAgent, startPushAgent } from './push-agent.helpers.js';

const PUBLIC = '93.184.215.14';
const arrivals: {
  url: string | undefined;
  host: string | undefined;
  headers: IncomingHttpHeaders;
  body: string;
}[] = [];
const standIn = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    arrivals.push({
      url: req.url,
      host: req.headers.host,
      headers: req.headers,
      body: Buffer.concat(chunks).toString(),
    });
    if (req.url === '/redirect') {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
      res.end();
    } else res.end('{}');
  });
});
let port = 0;
let agent: PushAgent;
let rebindCalls = 0;

beforeAll(async () => {
  await new Promise<void>((resolve) => standIn.listen(0, '127.0.0.1', () => resolve()));
  port = (standIn.address() as AddressInfo).port;
  agent = await startPushAgent({
    standInPort: port,
    names: {
      'hooks.example.com': [{ address: PUBLIC, family: 4 }],
      'metadata.example.com': [{ address: '169.254.169.254', family: 4 }],
      'mapped.example.com': [{ address: '::ffff:127.0.0.1', family: 6 }],
      'internal.example.com': [{ address: '10.0.0.7', family: 4 }],
      'ula.example.com': [{ address: 'fd00:ec2::254', family: 6 }],
      'mixed.example.com': [
        { address: PUBLIC, family: 4 },
        { address: '192.168.1.1', family: 4 },
      ],
      // Public while the config is registered, the metadata address at delivery.
      'rebind.example.com': () =>
        rebindCalls++ === 0
          ? [{ address: PUBLIC, family: 4 }]
          : [{ address: '169.254.169.254', family: 4 }],
    },
  });
});

afterAll(async () => {
  await agent?.close();
  standIn.closeAllConnections();
  await new Promise<void>((resolve) => standIn.close(() => resolve()));
});

const FORBIDDEN = [
  'http://127.0.0.1:8080/hook',
  'http://2130706433/hook',
  'http://0x7f.0.0.1/hook',
  'http://0177.0.0.1/hook',
  'http://127.1/hook',
  'http://[::1]/hook',
  'http://[::ffff:127.0.0.1]/hook',
  'http://[::ffff:a9fe:a9fe]/hook',
  'http://10.0.0.5/hook',
  'http://172.16.0.5/hook',
  'http://192.168.0.5/hook',
  'http://100.64.0.1/hook',
  'http://169.254.169.254/latest/meta-data/',
  'http://0xa9fea9fe/',
  'http://[fe80::1]/hook',
  'http://[fd00::1]/hook',
  'http://[ff02::1]/hook',
  'http://224.0.0.1/hook',
  'http://0.0.0.0/hook',
  'http://[::]/hook',
  'http://localhost:3000/hook',
  'http://hooks.localhost/hook',
  'file:///etc/passwd',
  'gopher://hooks.example.com/',
  'https://metadata.example.com/hook',
  'https://mapped.example.com/hook',
  'https://internal.example.com/hook',
  'https://ula.example.com/hook',
  'https://mixed.example.com/hook',
];

function pushConfig(taskId: string, url: string) {
  return {
    tenant: '',
    id: '',
    taskId,
    url,
    token: '',
    authentication: { scheme: 'Bearer', credentials: 'caller-secret' },
  };
}

function sendRequest(messageId: string, url?: string): SendMessageRequest {
  return {
    // The SDK's gRPC server files a task sent without `tenant` under the tenant "undefined" (and
    // then cannot find it for a tenant-less CreateTaskPushNotificationConfig): send it empty.
    tenant: '',
    message: textMessage({ messageId, text: 'work' }),
    configuration: {
      acceptedOutputModes: [],
      returnImmediately: false,
      ...(url === undefined ? {} : { taskPushNotificationConfig: pushConfig('', url) }),
    },
  } as unknown as SendMessageRequest;
}

/** The SDK's InvalidParams answer as each binding carries it. */
function expectInvalidParams(error: unknown, binding: (typeof BINDINGS)[number]) {
  expect(error, String(error)).toBeInstanceOf(RequestMalformedError);
  expect((error as RequestMalformedError).reason).toBe('INVALID_PARAMS');
  expect((error as Error).message).toContain('push notification URL refused');
  if (binding === 'JSONRPC') expect(isJsonRpcError(error) && error.envelopeCode).toBe(-32602);
  if (binding === 'HTTP+JSON') expect(isRestError(error) && error.statusCode).toBe(400);
  if (binding === 'GRPC') expect(isGrpcError(error) && error.status).toBe(3); // INVALID_ARGUMENT
}

async function taskOf(client: Client, messageId: string): Promise<string> {
  const result = await client.sendMessage(sendRequest(messageId));
  const id = (result as { id?: string }).id ?? '';
  expect(id).not.toBe('');
  return id;
}

describe.each(BINDINGS)('%s: a forbidden webhook is refused when it is registered', (binding) => {
  it.each(FORBIDDEN)('CreateTaskPushNotificationConfig %s → InvalidParams', async (url) => {
    const client = await agent.client(binding);
    const taskId = await taskOf(client, `task-${binding}-${url}`);
    const error = await client
      .createTaskPushNotificationConfig(pushConfig(taskId, url) as never)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expectInvalidParams(error, binding);
    expect(agent.refusedAtCreation.at(-1)?.url).toBe(url);
  });

  it.each(FORBIDDEN)(
    'SendMessage with a push config for %s → InvalidParams, nothing runs',
    async (url) => {
      const client = await agent.client(binding);
      const before = agent.executions();
      const error = await client.sendMessage(sendRequest(`send-${binding}-${url}`, url)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expectInvalidParams(error, binding);
      expect(agent.executions()).toBe(before);
    },
  );
});

describe('SendStreamingMessage', () => {
  it.each(BINDINGS)(
    '%s: a forbidden push config fails the stream before it starts',
    async (binding) => {
      const client = await agent.client(binding);
      const before = agent.executions();
      const refusedBefore = agent.refusedAtCreation.length;
      const events: unknown[] = [];
      const error = await (async () => {
        for await (const event of client.sendMessageStream(
          sendRequest(`stream-${binding}`, 'http://169.254.169.254/latest/meta-data/'),
        )) {
          events.push(event);
        }
      })().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, String(error)).toBeInstanceOf(RequestMalformedError);
      expect(events).toEqual([]);
      expect(agent.executions()).toBe(before);
      expect(agent.refusedAtCreation.length).toBe(refusedBefore + 1);
    },
  );
});

describe('nothing forbidden was ever dialled, and what is allowed is delivered pinned', () => {
  it('every refusal above: no connection at all, nothing reached loopback', () => {
    expect(agent.refusedAtCreation).toHaveLength((FORBIDDEN.length * 2 + 1) * BINDINGS.length);
    expect(agent.dialled).toEqual([]);
    expect(arrivals).toEqual([]);
    const resolvedNames = new Set(agent.resolved);
    // Names were resolved at registration (and never at delivery: nothing was queued).
    expect(resolvedNames).toEqual(
      new Set([
        'metadata.example.com',
        'mapped.example.com',
        'internal.example.com',
        'ula.example.com',
        'mixed.example.com',
      ]),
    );
    console.log(
      `[push] SSRF: ${agent.refusedAtCreation.length} registrations refused on 3 bindings (${FORBIDDEN.length} URLs × Create and SendMessage, one stream each), ` +
        `${agent.resolved.length} lookups, ${agent.dialled.length} connections, ${arrivals.length} POSTs on loopback`,
    );
  });

  it.each(BINDINGS)(
    '%s: a public name is delivered to its checked address, Host unchanged',
    async (binding) => {
      const client = await agent.client(binding);
      const before = arrivals.length;
      await client.sendMessage(
        sendRequest(`ok-${binding}`, `http://hooks.example.com:${port}/hook`),
      );
      await agent.sender.drain();
      const got = arrivals.slice(before);
      expect(got.length).toBeGreaterThanOrEqual(2);
      expect(got.every((a) => a.host === `hooks.example.com:${port}`)).toBe(true);
      expect(got.every((a) => a.headers.authorization === 'Bearer caller-secret')).toBe(true);
      expect(got.at(-1)?.body).toContain('TASK_STATE_COMPLETED');
      expect(new Set(agent.dialled.map((d) => `${d.hostname} → ${d.address}`))).toEqual(
        new Set([`hooks.example.com → ${PUBLIC}`]),
      );
    },
  );

  it('a name that re-resolves to the metadata address at delivery is refused there, never dialled', async () => {
    const client = await agent.client('JSONRPC');
    const dialsBefore = agent.dialled.length;
    const dropsBefore = agent.drops.length;
    await client.sendMessage(sendRequest('rebind', `http://rebind.example.com:${port}/hook`));
    await agent.sender.drain();
    // Every notification not coalesced into a later one was refused, none sent.
    const drops = agent.drops.slice(dropsBefore).filter((d) => d.reason !== 'coalesced');
    expect(drops.length).toBeGreaterThan(0);
    expect(drops.map((d) => [d.reason, d.attempts])).toEqual(drops.map(() => ['refused', 0]));
    expect(agent.dialled.slice(dialsBefore)).toEqual([]);
    expect(rebindCalls).toBeGreaterThanOrEqual(2);
    expect(agent.sender.stats().dropped.refused).toBe(drops.length);
  });

  it('a redirect to the metadata address is not followed: the notification is dropped', async () => {
    const client = await agent.client('HTTP+JSON');
    const dropsBefore = agent.drops.length;
    const before = arrivals.length;
    await client.sendMessage(sendRequest('redirect', `http://hooks.example.com:${port}/redirect`));
    await agent.sender.drain();
    const drops = agent.drops.slice(dropsBefore).filter((d) => d.reason !== 'coalesced');
    expect(drops.length).toBeGreaterThan(0);
    expect(drops.map((d) => [d.reason, d.status, d.attempts])).toEqual(
      drops.map(() => ['rejected', 302, 1]),
    );
    expect(arrivals.slice(before).every((a) => a.url === '/redirect')).toBe(true);
    expect(agent.dialled.every((d) => d.address === PUBLIC)).toBe(true);
  });
});
