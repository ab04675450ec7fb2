import { describe, expect, it } from 'vitest';
import { SmoothedDelay } from './event-loop-monitor.js';

describe('SmoothedDelay: the event-loop signal overload policies see', () => {
  it('reports nothing during the warm-up, however slow the start-up', () => {
    const s = new SmoothedDelay(10, 4);
    for (const sample of [2_000, 900, 700, 400]) {
      s.record(sample);
      expect(s.delayMs()).toBe(0);
    }
    // None of them counts afterwards: the window holds only what came after.
    for (let i = 0; i < 10; i++) s.record(3);
    expect(s.delayMs()).toBe(3);
  });

  it('a single stall, even a long one, does not move the median', () => {
    const s = new SmoothedDelay(10, 0);
    for (let i = 0; i < 10; i++) s.record(4);
    s.record(5_000);
    expect(s.delayMs()).toBe(4);
    // Two more stall samples in a row: still under half the window.
    s.record(800);
    s.record(900);
    expect(s.delayMs()).toBe(4);
  });

  it('a delay lasting more than half the window is reported', () => {
    const s = new SmoothedDelay(10, 0);
    for (let i = 0; i < 10; i++) s.record(4);
    const seen: number[] = [];
    for (let i = 0; i < 10; i++) {
      s.record(300);
      seen.push(s.delayMs());
    }
    // Reported from the sixth sustained sample on (the lower median of ten), then it stays.
    expect(seen.indexOf(300)).toBe(5);
    expect(seen.slice(5).every((v) => v === 300)).toBe(true);
    // And it ends as the delay does.
    for (let i = 0; i < 5; i++) s.record(4);
    expect(s.delayMs()).toBe(4);
  });

  it('right after the warm-up, a stall is one sample of a window of zeros', () => {
    const s = new SmoothedDelay(4, 1);
    s.record(5_000); // warm-up
    s.record(600);
    expect(s.delayMs()).toBe(0);
    s.record(600);
    expect(s.delayMs()).toBe(0);
    s.record(600);
    expect(s.delayMs()).toBe(600);
  });
});
