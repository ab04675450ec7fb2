import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WriteWatch, writeDeadlineOf } from './write-watch.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

function write(state: { pending: boolean; progress: number }) {
  const expired: number[] = [];
  return {
    expired,
    w: {
      pending: () => state.pending,
      progress: () => state.progress,
      expire: () => expired.push(1),
    },
  };
}

describe('WriteWatch: the response write deadline', () => {
  it('expires a write pending without progress for the deadline, once', () => {
    const watch = new WriteWatch(400);
    const state = { pending: true, progress: 7 };
    const { w, expired } = write(state);
    watch.add(w);
    vi.advanceTimersByTime(300); // seen at 100, unchanged at 200 and 300: ¾ of the deadline
    expect(expired).toHaveLength(0);
    vi.advanceTimersByTime(100);
    expect(expired).toHaveLength(1);
    vi.advanceTimersByTime(2_000);
    expect(expired).toHaveLength(1);
    expect(watch.size()).toBe(0);
  });

  it('a write that progresses, or has nothing pending, is never expired', () => {
    const watch = new WriteWatch(400);
    const moving = { pending: true, progress: 0 };
    const idle = { pending: false, progress: 0 };
    const a = write(moving);
    const b = write(idle);
    watch.add(a.w);
    watch.add(b.w);
    for (let i = 0; i < 50; i++) {
      moving.progress += 1;
      vi.advanceTimersByTime(100);
    }
    expect(a.expired).toHaveLength(0);
    expect(b.expired).toHaveLength(0);
    // Stops progressing: expired within the deadline.
    vi.advanceTimersByTime(400);
    expect(a.expired).toHaveLength(1);
    expect(b.expired).toHaveLength(0);
  });

  it('a removed write is not expired; no timer runs while nothing is watched', () => {
    const watch = new WriteWatch(400);
    const { w, expired } = write({ pending: true, progress: 0 });
    const stop = watch.add(w);
    vi.advanceTimersByTime(200);
    stop();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(1_000);
    expect(expired).toHaveLength(0);
  });

  it('Infinity turns it off; a deadline that is not a positive number is refused', () => {
    const watch = new WriteWatch(writeDeadlineOf(Number.POSITIVE_INFINITY));
    watch.add(write({ pending: true, progress: 0 }).w);
    expect(vi.getTimerCount()).toBe(0);
    expect(writeDeadlineOf(undefined)).toBe(30_000);
    for (const bad of [0, -5, Number.NaN]) expect(() => writeDeadlineOf(bad)).toThrow(RangeError);
  });
});
