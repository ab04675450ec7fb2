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

describe('MessageRecords ring', () => {
  it('peekKey reads without writing; forgetKey makes the next copy fresh', () => {
    const records = new MessageRecords(10);
    const key = messageRecordKey('a', 'm1');
    expect(records.peekKey(key, 0)).toBeUndefined();
    expect(records.size).toBe(0);
    records.rememberKey(key, 1000, 0);
    expect(records.peekKey(key, 1)).toEqual({ fresh: false });
    records.recordKey(key, 'task-1', 1000, 2);
    expect(records.peekKey(key, 3)).toEqual({ fresh: false, taskId: 'task-1' });
    expect(records.peekKey(key, 1002)).toBeUndefined(); // expired
    records.forgetKey(key);
    expect(records.size).toBe(0);
    expect(records.rememberKey(key, 1000, 4)).toEqual({ fresh: true });
  });

  it('grows past its first slots and wraps around, keeping every live record', () => {
    const records = new MessageRecords(5000);
    // Expire the first 1,500 so the ring wraps while it is being reused.
    for (let i = 0; i < 1500; i++) records.remember('a', `old${i}`, 10, 0);
    for (let i = 0; i < 4000; i++) records.remember('a', `m${i}`, 1_000_000, 100 + i);
    expect(records.evicted).toBe(0);
    for (let i = 0; i < 4000; i += 97) {
      expect(records.peekKey(messageRecordKey('a', `m${i}`), 5000)).toEqual({ fresh: false });
    }
    expect(records.peekKey(messageRecordKey('a', 'old3'), 5000)).toBeUndefined();
    expect(records.size).toBeLessThanOrEqual(5000);
  });

  it('forgotten slots are reclaimed by the sweep and never count as evictions', () => {
    const records = new MessageRecords(100);
    for (let i = 0; i < 10_000; i++) {
      const key = messageRecordKey('a', `r${i}`);
      records.rememberKey(key, 1_000_000, i);
      records.forgetKey(key); // e.g. a message that ran nothing
    }
    records.remember('a', 'kept', 1_000_000, 10_000);
    for (let i = 0; i < 1000; i++) {
      const key = messageRecordKey('a', `s${i}`);
      records.rememberKey(key, 1_000_000, 10_001 + i);
      records.forgetKey(key);
    }
    expect(records.evicted).toBe(0);
    expect(records.peekKey(messageRecordKey('a', 'kept'), 20_000)).toEqual({ fresh: false });
  });

  it('rejects a bad cap', () => {
    expect(() => new MessageRecords(0)).toThrow(RangeError);
  });
});
