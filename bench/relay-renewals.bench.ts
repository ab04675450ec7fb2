/**
 * @module relay-renewals-bench
 * `npm run bench:relay-renewals`: Redis writes per second the task-event relay makes for tasks left
 * input-required. Prints JSON.
 */

import { DefaultExecutionEventBusManager } from '@a2a-js/sdk/server';
import { Redis } from 'ioredis';

/**
 * Method: 500 tasks left input-required after their executors returned, on one replica, the SDK's
 * settle offered for each as `DefaultRequestHandler` does (the bus kept alive), then every command
 * under this run's private key prefix counted with `MONITOR` over a measuring window. Env:
 * `REDIS_URL`, `TASKS` (default 500), `WINDOW_MS` (default 10000), `RELAY_MODULE` to measure
 * another copy of `task-event-relay.ts`.
 */
const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const tasks = Number(process.env.TASKS ?? 500);
const windowMs = Number(process.env.WINDOW_MS ?? 10_000);
const modulePath = process.env.RELAY_MODULE ?? '../src/redis/task-event-relay.js';
const { createTaskEventRelay } = (await import(
  modulePath
)) as typeof import('../src/redis/task-event-relay.js');

const prefix = `a2arl-bench:relay:${Date.now().toString(36)}:${Math.random().toString(36).slice(2)}:`;
const client = new Redis(url);
const monitor = await new Redis(url).monitor();

const INPUT_REQUIRED = 6;
const relay = createTaskEventRelay({ client, keyPrefix: prefix });
const manager = relay.eventBusManager(new DefaultExecutionEventBusManager()) as ReturnType<
  typeof relay.eventBusManager<DefaultExecutionEventBusManager>
> & { settleByTaskId?: (id: string, bus: unknown, state: number, context: unknown) => boolean };
for (let i = 0; i < tasks; i++) {
  const id = `task-${i}`;
  const bus = manager.createOrGetByTaskId(id, undefined);
  // The executor returned with the task input-required: the SDK offers the bus, then keeps it.
  manager.settleByTaskId?.(id, bus, INPUT_REQUIRED, undefined);
}
// Let the claims land, then count one measuring window.
await new Promise((r) => setTimeout(r, 500));
const counts = new Map<string, number>();
let writes = 0;
monitor.on('monitor', (_time: string, args: string[]) => {
  if (!args.some((a) => typeof a === 'string' && a.startsWith(prefix))) return;
  const command = String(args[0]).toLowerCase();
  counts.set(command, (counts.get(command) ?? 0) + 1);
  if (command !== 'get' && command !== 'exists' && command !== 'xread' && command !== 'xrevrange') {
    writes++;
  }
});
await new Promise((r) => setTimeout(r, windowMs));
monitor.disconnect();
const owned = relay.ownedTasks();
await relay.close();
const keys = await client.keys(`${prefix}*`);
if (keys.length > 0) await client.del(...keys);
client.disconnect();
console.log(
  JSON.stringify({
    bench: 'relay-renewals',
    module: modulePath,
    interruptedTasks: tasks,
    ownedTasks: owned,
    windowMs,
    writesPerSecond: Number(((writes * 1000) / windowMs).toFixed(1)),
    commands: Object.fromEntries(counts),
  }),
);
process.exit(0);
