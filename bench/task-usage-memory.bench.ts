/**
 * @module task-usage-memory-bench
 * `npm run bench:task-usage-memory`: heap kept per finished task by `limiter.usageOf`'s book of
 * admitted identities. Prints JSON.
 */

import { Buffer } from 'node:buffer';

/**
 * Method: one caller with an 8 kB name (a caller pinning memory with a long name), and the floor
 * of an 8-byte name, in the same run; each task's identity arrives as a fresh string (as a header
 * parse makes one per request). Needs `--expose-gc`. Env: `TASKS` (default 20000),
 * `TASK_USAGE_MODULE` to measure another copy of `task-usage.ts`.
 */
const tasks = Number(process.env.TASKS ?? 20_000);
const modulePath = process.env.TASK_USAGE_MODULE ?? '../src/server/task-usage.js';
const { TaskUsageBook } = (await import(
  modulePath
)) as typeof import('../src/server/task-usage.js');

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

function heapUsed(): number {
  for (let i = 0; i < 4; i++) gc?.();
  return process.memoryUsage().heapUsed;
}

/** Heap per kept task, bytes, for a caller named by `nameBytes` bytes. */
function bytesPerTask(nameBytes: number): number {
  const name = 'n'.repeat(nameBytes);
  const book = new TaskUsageBook({
    ticketHeader: 'x-ticket',
    admittedBy: () => undefined,
    charge: async () => {},
    nowMs: () => 1_760_000_000_000,
  });
  const before = heapUsed();
  for (let i = 0; i < tasks; i++) {
    // A fresh copy of the name per request, as parsing each request's credentials makes one.
    const caller = Buffer.from(name, 'latin1').toString('latin1');
    book.remember(
      `task-${i.toString(36).padStart(8, '0')}`,
      {
        caller,
        method: 'SendMessage',
      },
      { live: false },
    );
  }
  const after = heapUsed();
  if (book.size() !== tasks) throw new Error(`kept ${book.size()} of ${tasks}`);
  return Math.round((after - before) / tasks);
}

const runs = 3;
const long: number[] = [];
const short: number[] = [];
for (let r = 0; r < runs; r++) {
  long.push(bytesPerTask(8192));
  short.push(bytesPerTask(8));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const longMedian = median(long);
const shortMedian = median(short);
console.log(
  JSON.stringify({
    bench: 'task-usage-memory',
    module: modulePath,
    tasks,
    runs,
    bytesPerTask8kName: longMedian,
    bytesPerTask8ByteName: shortMedian,
    ratioLongToShort: Number((longMedian / shortMedian).toFixed(2)),
    projectedMiBAt100kTasks8kName: Number(((longMedian * 100_000) / 2 ** 20).toFixed(1)),
  }),
);
