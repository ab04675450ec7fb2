/**
 * Message answers at the limiter (in-process path, no transport): a copy of a message whose first
 * copy was answered with a Message gets that Message (and its scope) back; a copy from another
 * caller is a new message; an answer past `maxBytes`, or past its caller's share, is not kept (the
 * copy is told "no task", as before); a copy while the first is in flight is still
 * MESSAGE_IN_PROGRESS, or gets the answer if it arrives while the copy waits for it.
 */
import { Message } from '@a2a-js/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../store/memory-store.js';
import { ManualClock } from '../testing/manual-clock.js';
import { ANSWER_OVERHEAD_BYTES } from './answer-budget.js';
import { createLimiter } from './limiter.js';
import type { AdmissionOutcome, Limiter } from './limiter-api.js';
import type { LimiterOptions } from './limiter-options.js';
import { answerBytes, encodeMessageAnswer, type MessageAnswer } from './message-answer.js';

const limiters: Limiter[] = [];
afterEach(async () => {
  await Promise.all(limiters.splice(0).map((l) => l.close()));
});

function setup(dedup: LimiterOptions['dedup'] = {}) {
  const clock = new ManualClock(1_760_000_000_000);
  const store = new MemoryStore({
    policies: [{ name: 'roomy', kind: 'rate', scope: 'caller', limit: 6000, windowSeconds: 60 }],
    clock,
  });
  const limiter = createLimiter({
    store,
    clock,
    domain: 'agents.example.com',
    dedup: { waitForTaskMs: 20, ...(dedup === false ? {} : dedup) },
  });
  limiters.push(limiter);
  const send = (messageId: string, caller = 'alice') =>
    limiter.admit({ caller, method: 'SendMessage', messageId, binding: 'rest' });
  return { clock, limiter, send };
}

type Settle = { settleDedup(taskId: string | undefined, answer?: MessageAnswer): void };

/** A reply of `text` (its messageId a UUID: every reply of one text has the same size). */
function replyOf(text: string): Message {
  return Message.fromJSON({
    messageId: `reply-${crypto.randomUUID()}`,
    role: 'ROLE_AGENT',
    parts: [{ text }],
  });
}

/** The bytes the answer `text` from `owner` is stored in. */
function storedBytes(text: string, owner: string): number {
  return answerBytes(encodeMessageAnswer({ message: replyOf(text), tenant: '', owner }) as string);
}

/** Admits `messageId` and answers it with a Message of `text`, as the tracker would. */
async function answered(
  send: (m: string, c?: string) => AdmissionOutcome | Promise<AdmissionOutcome>,
  messageId: string,
  text: string,
  caller = 'alice',
): Promise<Message> {
  const first = await send(messageId, caller);
  if (first.status !== 'admitted') throw new Error(`not admitted: ${first.status}`);
  const message = replyOf(text);
  (first.ticket as unknown as Settle).settleDedup(undefined, {
    message,
    tenant: '',
    owner: caller,
  });
  first.ticket.end();
  return message;
}

function answerOf(o: AdmissionOutcome): unknown {
  if (o.status !== 'duplicate') return o.status;
  return o.answer === undefined
    ? { taskId: o.taskId }
    : { ...o.answer, message: Message.toJSON(o.answer.message as Message) };
}

describe('Message answers kept for copies', () => {
  it('a copy gets the Message back, with its scope; another caller’s same messageId runs', async () => {
    const { send } = setup();
    const reply = await answered(send, 'm-1', 'on it');
    expect(answerOf(await send('m-1'))).toEqual({
      tenant: '',
      owner: 'alice',
      message: Message.toJSON(reply),
    });
    expect((await send('m-1', 'mallory')).status).toBe('admitted');
  });

  it('an answer over maxBytes is not kept: the copy is told "no task", as without answers', async () => {
    // Exactly maxBytes is kept; one byte more is not.
    const { send } = setup({ answers: { maxBytes: storedBytes('x'.repeat(299), 'alice') } });
    await answered(send, 'small', 'x'.repeat(299));
    await answered(send, 'big', 'x'.repeat(300));
    expect(answerOf(await send('small'))).toMatchObject({ owner: 'alice' });
    expect(answerOf(await send('big'))).toEqual({ taskId: undefined });
    const off = setup({ answers: false });
    await answered(off.send, 'small', 'ok');
    expect(answerOf(await off.send('small'))).toEqual({ taskId: undefined });
  });

  it('one caller keeps answers up to its share; another caller still keeps its own', async () => {
    // A share that holds exactly 4 of the flooder's answers.
    const cost = storedBytes('y'.repeat(40), 'flooder') + ANSWER_OVERHEAD_BYTES + 'flooder'.length;
    const { send } = setup({ answers: { maxBytesPerCaller: cost * 4 } });
    const kept: boolean[] = [];
    for (let i = 0; i < 8; i++) {
      await answered(send, `f-${i}`, 'y'.repeat(40), 'flooder');
      kept.push((await send(`f-${i}`, 'flooder')).status === 'duplicate');
    }
    const withAnswer = [];
    for (let i = 0; i < 8; i++) {
      const o = await send(`f-${i}`, 'flooder');
      withAnswer.push(o.status === 'duplicate' && o.answer !== undefined);
    }
    expect(kept.every(Boolean)).toBe(true); // every copy is deduplicated…
    expect(withAnswer).toEqual([true, true, true, true, false, false, false, false]); // …4 with their answer
    await answered(send, 'h-1', 'y'.repeat(40), 'honest');
    expect(answerOf(await send('h-1', 'honest'))).toMatchObject({ owner: 'honest' });
  });

  it('bounds that are not positive integers are refused at creation, naming the option', () => {
    const store = () => new MemoryStore({ policies: [] });
    for (const answers of [{ maxBytes: 0 }, { maxBytesPerCaller: 1.5 }, { maxBytesTotal: -1 }]) {
      expect(() =>
        createLimiter({ store: store(), domain: 'a.example.com', dedup: { answers } }),
      ).toThrow(
        new RegExp(`dedup\\.answers\\.${Object.keys(answers)[0]} must be a positive integer`),
      );
    }
  });

  it('a copy while the first is in flight: MESSAGE_IN_PROGRESS; one waiting when it answers gets the Message', async () => {
    const { send } = setup({ waitForTaskMs: 5_000 });
    const quick = setup();
    const first = await quick.send('m-2');
    const copy = await quick.send('m-2');
    expect(copy.status === 'rejected' && copy.rejection.reason).toBe('MESSAGE_IN_PROGRESS');
    if (first.status === 'admitted') first.ticket.end();

    const admitted = await send('m-3');
    if (admitted.status !== 'admitted') throw new Error('not admitted');
    const waiting = send('m-3'); // waits for the first copy's outcome
    const message = Message.fromJSON({
      messageId: 'r-3',
      role: 'ROLE_AGENT',
      parts: [{ text: 'hi' }],
    });
    (admitted.ticket as unknown as Settle).settleDedup(undefined, {
      message,
      tenant: 't',
      owner: 'alice',
    });
    expect(answerOf(await waiting)).toEqual({
      tenant: 't',
      owner: 'alice',
      message: Message.toJSON(message),
    });
  });
});
