import { describe, expect, it } from 'vitest';
import { MessageRecords, messageRecordKey } from './message-records.js';

describe('MessageRecords', () => {
  it('is set-if-absent, and a recorded task comes back to later copies', () => {
    const records = new MessageRecords(10);
    expect(records.remember('a', 'm1', 1000, 0)).toEqual({ fresh: true });
    expect(records.remember('a', 'm1', 1000, 1)).toEqual({ fresh: false });
    expect(records.remember('b', 'm1', 1000, 1)).toEqual({ fresh: true });
    records.record('a', 'm1', 'task-9', 1000, 2);
    expect(records.rememberKey(messageRecordKey('a', 'm1'), 1000, 3)).toEqual({
      fresh: false,
      taskId: 'task-9',
    });
    expect(records.remember('a', 'm1', 1000, 2000)).toEqual({ fresh: true }); // expired
  });

  it('at the cap, drops expired records first, then the oldest live one (counted)', () => {
    const records = new MessageRecords(3);
    records.remember('a', 'short', 1, 0); // expires at 1
    records.remember('a', 'old', 1000, 0);
    records.remember('a', 'mid', 1000, 0);
    records.remember('a', 'new', 1000, 5); // full: the expired one makes room
    expect(records.evicted).toBe(0);
    expect(records.remember('a', 'old', 1000, 6)).toEqual({ fresh: false });
    records.remember('a', 'newer', 1000, 7); // full, nothing expired: the oldest live goes
    expect(records.evicted).toBe(1);
    expect(records.remember('a', 'mid', 1000, 8)).toEqual({ fresh: false });
    expect(records.remember('a', 'old', 1000, 8)).toEqual({ fresh: true }); // it was evicted
  });

  it('keeps evicting in insertion order across many evictions', () => {
    const records = new MessageRecords(100);
    for (let i = 0; i < 10_000; i++) records.remember('a', `m${i}`, 1_000_000, i);
    expect(records.size).toBe(100);
    expect(records.evicted).toBe(9_900);
    expect(records.remember('a', 'm9999', 1_000_000, 10_000)).toEqual({ fresh: false });
    expect(records.remember('a', 'm9899', 1_000_000, 10_000)).toEqual({ fresh: true });
  });
});
