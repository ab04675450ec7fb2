import { describe, expect, it } from 'vitest';
import type { Admission, Rejection } from '../core/rejection.js';
import { HoldLedger } from './hold-ledger.js';
import type { AdmissionRequest } from './limiter-options.js';

const request = (messageId: string | undefined): AdmissionRequest => ({
  caller: 'c1',
  method: 'SendMessage',
  binding: 'jsonrpc',
  ...(messageId === undefined ? {} : { messageId }),
});

const rejection = (retryAfterMs: number, reserved = true): Rejection => ({
  kind: 'quota',
  retryAfterMs,
  policy: 'per-caller',
  scope: 'caller',
  subject: 'c1',
  method: 'SendMessage',
  reserved,
  message: 'limited',
});

const claimed: Admission = { admitted: true, limits: [], leases: [], claimedHold: true };

function ledger(graceMs = 1_000) {
  const events: string[] = [];
  const book = new HoldLedger(
    { holds: (event, policy, count) => events.push(`${event} ${policy} ${count}`) },
    () => graceMs,
  );
  return { book, events };
}

describe('HoldLedger', () => {
  it('counts a hold made, then claimed by the retry with the same messageId', () => {
    const { book, events } = ledger();
    book.rejected(request('m1'), rejection(2_000), 0);
    book.rejected(request('m1'), rejection(2_000), 500); // the same hold seen again: not new
    book.admitted(request('m1'), claimed);
    book.admitted(request('m1'), claimed); // nothing left to claim
    expect(events).toEqual(['made per-caller 1', 'claimed per-caller 1']);
  });

  it('ignores rejections that reserve nothing or have no messageId', () => {
    const { book, events } = ledger();
    book.rejected(request('m1'), rejection(2_000, false), 0);
    book.rejected(request(undefined), rejection(2_000), 0);
    book.sweep(1_000_000);
    expect(events).toEqual([]);
  });

  it('sweeps a hold as expired only after its delay and grace have passed', () => {
    const { book, events } = ledger(1_000);
    book.rejected(request('m1'), rejection(2_000), 0);
    book.rejected(request('m2'), rejection(10_000), 0);
    book.sweep(3_000); // m1's hold lasts until 3,000 ms: still open
    expect(events).toEqual(['made per-caller 1', 'made per-caller 1']);
    book.sweep(3_001);
    expect(events.slice(2)).toEqual(['expired per-caller 1']);
    book.admitted(request('m1'), claimed); // gone: no claim counted
    book.admitted(request('m2'), claimed);
    expect(events.slice(3)).toEqual(['claimed per-caller 1']);
  });

  it('keeps at most 100,000 open holds, shedding the oldest to 90,000 as expired', () => {
    const { book, events } = ledger();
    for (let i = 0; i < 100_001; i++) book.rejected(request(`m${i}`), rejection(60_000), 0);
    const expired = events.filter((e) => e.startsWith('expired')).length;
    expect(expired).toBe(10_001);
    book.admitted(request('m0'), claimed); // the oldest was shed
    book.admitted(request('m100000'), claimed); // the newest is kept
    expect(events.filter((e) => e.startsWith('claimed'))).toEqual(['claimed per-caller 1']);
  });
});
