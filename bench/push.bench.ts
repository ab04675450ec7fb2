/**
 * @module push.bench
 * `npm run bench:push`: what the SSRF-safe webhook delivery costs against plain `fetch`, and the
 * pure checks alone. Prints JSON.
 */

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createWebhookPolicy, createWebhookTransport } from '../src/push/index.js';

/**
 * Method: POSTs per second to a webhook on 127.0.0.1 (4 in flight, as `maxConcurrentPerWebhook`)
 * through `createWebhookTransport` (keep-alive `node:http` agent, every new connection resolved,
 * checked and pinned) against the global `fetch` the sender used before (undici, keep-alive, no
 * checks), interleaved rounds, medians; and the pure checks alone (`checkUrl`, `checkAddress`).
 * Last line: one JSON object.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 1_000);
const IN_FLIGHT = 4;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

async function postsPerSecond(post: () => Promise<unknown>): Promise<number> {
  let n = 0;
  const endAt = performance.now() + ROUND_MS;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (performance.now() < endAt) {
        await post();
        n++;
      }
    }),
  );
  return n / ((performance.now() - start) / 1000);
}

function opsPerSecond(op: (i: number) => unknown): number {
  let n = 0;
  const start = performance.now();
  while (performance.now() - start < ROUND_MS / 4) for (let j = 0; j < 1000; j++) op(n++);
  return n / ((performance.now() - start) / 1000);
}

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.end('{}'));
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
const body = JSON.stringify({
  statusUpdate: { taskId: 't', status: { state: 'TASK_STATE_WORKING' } },
});
const headers = { 'content-type': 'application/a2a+json', authorization: 'Bearer x' };
const transport = createWebhookTransport({ policy: { allowPrivateNetworks: true } });
const viaTransport = () =>
  transport.post({ url, headers, body, signal: AbortSignal.timeout(10_000) });
const viaFetch = async () => {
  const res = await fetch(url, {
    method: 'POST',
    headers,
    body,
    signal: AbortSignal.timeout(10_000),
  });
  await res.arrayBuffer();
};

const rounds = { transport: [] as number[], fetch: [] as number[] };
await viaTransport();
await viaFetch();
for (let r = 0; r < ROUNDS; r++) {
  rounds.transport.push(await postsPerSecond(viaTransport));
  rounds.fetch.push(await postsPerSecond(viaFetch));
  console.log(
    `round ${r + 1}: transport ${rounds.transport.at(-1)?.toFixed(0)} POST/s, fetch ${rounds.fetch.at(-1)?.toFixed(0)} POST/s`,
  );
}
transport.close();
server.closeAllConnections();
server.close();

const policy = createWebhookPolicy({ allow: ['hooks.corp.example', '10.20.0.0/16'] });
const urls = ['https://hooks.example.com/a2a', 'http://2130706433/', 'http://[::ffff:10.20.0.1]/'];
const checkUrl = median(
  Array.from({ length: ROUNDS }, () => opsPerSecond((i) => policy.checkUrl(urls[i % 3] as string))),
);
const checkAddress = median(
  Array.from({ length: ROUNDS }, () =>
    opsPerSecond((i) =>
      policy.checkAddress('hooks.example.com', i % 2 ? '93.184.215.14' : 'fd00::1'),
    ),
  ),
);
const transportMedian = median(rounds.transport);
const fetchMedian = median(rounds.fetch);
console.log(
  JSON.stringify({
    inFlight: IN_FLIGHT,
    postsPerSecond: { transport: Math.round(transportMedian), fetch: Math.round(fetchMedian) },
    transportOverFetch: Number((transportMedian / fetchMedian).toFixed(2)),
    checksPerSecond: { checkUrl: Math.round(checkUrl), checkAddress: Math.round(checkAddress) },
    usPerCheck: {
      checkUrl: Number((1e6 / checkUrl).toFixed(2)),
      checkAddress: Number((1e6 / checkAddress).toFixed(2)),
    },
  }),
);
