import { describe, expect, it } from 'vitest';
import { compilePolicies } from '../core/compile-policies.js';
import { requestStep } from './redis-keys.js';
import {
  batchReplyOffsets,
  decisionOfReply,
  readRememberReply,
  readReserveReply,
  readStepsReply,
  readUndoReply,
} from './script-replies.js';

const set = compilePolicies([
  { name: 'r', kind: 'rate', scope: 'caller', limit: 10, windowSeconds: 1, burst: 2 },
  { name: 'c', kind: 'concurrency', scope: 'caller', max: 2 },
]);
const input = { caller: 'a', method: 'SendMessage' as const };
const steps = set.policies.map((p) => requestStep('x:', p, input, 'a'));

describe('script replies', () => {
  it('decodes an admission, with undo codes in mode t', () => {
    const r = readStepsReply([1, 5_000_000, 1, 5_100_000, 0, 'c', 'l'], 2, 0, true);
    expect(r).toEqual({
      admitted: true,
      nowUs: 5_000_000,
      claimedHold: true,
      tats: [5_100_000, 0],
      undo: ['c', 'l'],
    });
    const d = decisionOfReply(input, steps, r, 'rb');
    expect(d.admitted && d.leases).toEqual([
      { policyIndex: 1, key: steps[1]?.key, leaseId: 'rb.2' },
    ]);
  });

  it('decodes a rejection at an offset: setter 0-based, reserved flag 2 = n/a', () => {
    const r = readStepsReply(['x', 0, 7, 1, 250_000, 2, 9, 0], 2, 1);
    expect(r).toEqual({
      admitted: false,
      nowUs: 7,
      setter: 0,
      delayUs: 250_000,
      reserved: undefined,
      tats: [9, 0],
    });
    const d = decisionOfReply(input, steps, r, '');
    expect(d.admitted).toBe(false);
    if (!d.admitted) expect(d.rejection.policy).toBe('r');
  });

  it('refuses malformed replies instead of reading undefined', () => {
    expect(() => readStepsReply('oops', 1)).toThrow(/unexpected script reply/);
    expect(() => readStepsReply([3, 1, 0], 1)).toThrow(/unexpected/);
    expect(() => readStepsReply([1, 1, 0], 1)).toThrow(/unexpected/); // tat missing
    expect(() => readUndoReply([1], 1)).toThrow(/unexpected/);
  });

  it('splits a batch reply by its lengths; a short reply gives fewer offsets', () => {
    expect(batchReplyOffsets([4, 1, 2, 0, 9, 2, 1, 2], 2)).toEqual([1, 6]);
    expect(batchReplyOffsets([4, 1, 2, 0, 9], 2)).toEqual([1]);
    expect(batchReplyOffsets(null, 1)).toEqual([]);
  });

  it('decodes reservations and message records', () => {
    expect(readReserveReply([1, 30, 1, 5])).toEqual({ reserved: true, delayUs: 30 });
    expect(readRememberReply([1])).toEqual({ fresh: true });
    expect(readRememberReply([0, 't-1'])).toEqual({ fresh: false, taskId: 't-1' });
    expect(readRememberReply([0, '', 1])).toEqual({ fresh: false, orphaned: true });
    expect(readRememberReply([0, '', 0])).toEqual({ fresh: false });
  });
});
