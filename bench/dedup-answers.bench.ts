/**
 * @module dedup-answers.bench
 * What keeping a first copy's Message answer costs a limiter on a `MemoryStore`: µs per message and
 * per copy, heap per answer. Prints JSON.
 */

import { Message } from '@a2a-js/sdk';
import type { Policy } from '../src/core/policy.js';
import { createLimiter } from '../src/server/limiter.js';
import type { Limiter } from '../src/server/limiter-api.js';
import type { MessageAnswer } from '../src/server/message-answer.js';
import { MemoryStore } from '../src/store/memory-store.js';
import { ManualClock } from '../src/testing/manual-clock.js';

const gc = (globalThis as { gc?: () => void }).gc;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const PER_ROUND = Number(process.env.BENCH_PER_ROUND ?? 20_000);
const HEAP_MESSAGES = 100_000;

const policies: Policy[] = [
  {
    name: 'roomy',
    kind: 'rate',
    scope: 'caller',
    limit: 1_000_000,
    windowSeconds: 1,
    burst: 1_000_000,
  },
];

type Settle = { settleDedup(taskId: string | undefined, answer?: MessageAnswer): void };

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1] ?? 0;
}

function limiterOf(answers: boolean): Limiter {
  const clock = new ManualClock(1_760_000_000_000);
  const store = new MemoryStore({ policies, clock, maxKeys: 200_000 });
  return createLimiter({
    store,
    clock,
    domain: 'bench.example.com',
    dedup: answers ? {} : { answers: false },
  });
}

/** The README quick start's reply. */
function reply(): Message {
  return Message.fromJSON({
    messageId: crypto.randomUUID(),
    role: 'ROLE_AGENT',
    contextId: crypto.randomUUID(),
    parts: [{ text: 'on it' }],
  });
}

let seq = 0;
/** Admits, answers and ends `n` new messages; µs per message. */
function answerMessages(limiter: Limiter, n: number, caller: (i: number) => string): number {
  const replies = Array.from({ length: n }, reply);
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const id = `m-${seq++}`;
    const who = caller(i);
    const o = limiter.admit({ caller: who, method: 'SendMessage', messageId: id, binding: 'rest' });
    if (o instanceof Promise || o.status !== 'admitted') throw new Error('not admitted');
    const message = replies[i] as Message;
    (o.ticket as unknown as Settle).settleDedup(undefined, { message, tenant: '', owner: who });
    o.ticket.end();
  }
  return Number(process.hrtime.bigint() - start) / 1000 / n;
}

/** Answers `n` copies of the last messages; µs per copy. */
async function answerCopies(limiter: Limiter, n: number, caller: (i: number) => string) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const id = `m-${seq - n + i}`;
    const o = await limiter.admit({
      caller: caller(i),
      method: 'SendMessage',
      messageId: id,
      binding: 'rest',
    });
    if (o.status !== 'duplicate') throw new Error(`not a copy: ${o.status}`);
  }
  return Number(process.hrtime.bigint() - start) / 1000 / n;
}

function heapBytes(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

/**
 * Run: `node --expose-gc --import tsx bench/dedup-answers.bench.ts`. Against the same limiter with
 * `dedup.answers: false` (the record then says "no task") in the same run. Per message: admit,
 * settle with the README quick start's reply (a Message of one text part, a UUID messageId), end —
 * µs per message, interleaved rounds, medians; per copy: µs to answer it (the record read and the
 * answer decoded); and the heap each kept answer takes (after GC, 100,000 messages, both variants).
 */
async function main(): Promise<void> {
  const caller = (i: number) => `caller-${i % 1000}`;
  const perMessage: Record<'kept' | 'off', number[]> = { kept: [], off: [] };
  const perCopy: Record<'kept' | 'off', number[]> = { kept: [], off: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const variant of round % 2 ? (['off', 'kept'] as const) : (['kept', 'off'] as const)) {
      const limiter = limiterOf(variant === 'kept');
      perMessage[variant].push(answerMessages(limiter, PER_ROUND, caller));
      perCopy[variant].push(await answerCopies(limiter, PER_ROUND, caller));
      await limiter.close();
    }
  }
  const heapPerMessage: Record<'kept' | 'off', number> = { kept: 0, off: 0 };
  for (const variant of ['off', 'kept'] as const) {
    const before = heapBytes();
    const limiter = limiterOf(variant === 'kept');
    // 100 callers × 1,000 answers of ~400 stored bytes: within every default bound.
    answerMessages(limiter, HEAP_MESSAGES, (i) => `caller-${i % 100}`);
    heapPerMessage[variant] = Math.round((heapBytes() - before) / HEAP_MESSAGES);
    await limiter.close();
  }
  const round2 = (x: number) => Math.round(x * 100) / 100;
  const kept = median(perMessage.kept);
  const off = median(perMessage.off);
  console.log(
    JSON.stringify({
      rounds: ROUNDS,
      messagesPerRound: PER_ROUND,
      microsPerMessage: { kept: round2(kept), off: round2(off), ratio: round2(kept / off) },
      microsPerCopy: {
        kept: round2(median(perCopy.kept)),
        off: round2(median(perCopy.off)),
        ratio: round2(median(perCopy.kept) / median(perCopy.off)),
      },
      heapBytesPerMessage: {
        ...heapPerMessage,
        perKeptAnswer: heapPerMessage.kept - heapPerMessage.off,
      },
    }),
  );
}

await main();
