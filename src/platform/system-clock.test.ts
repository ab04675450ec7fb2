import { afterEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from './system-clock.js';

describe('systemClock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('reads the wall clock, and follows fake timers as users install them', () => {
    expect(Math.abs(systemClock.nowMs() - Date.now())).toBeLessThan(1_000);
    vi.useFakeTimers({ now: 1_000_000 });
    expect(systemClock.nowMs()).toBe(1_000_000);
    vi.advanceTimersByTime(2_500);
    expect(systemClock.nowMs()).toBe(1_002_500);
  });
});
