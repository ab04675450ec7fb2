import { describe, expect, it } from 'vitest';
import { createVirtualTime } from './virtual-time.js';

describe('VirtualClock', () => {
  it('fires due timers in time order, ties in creation order, and moves time', async () => {
    const vt = createVirtualTime({ startMs: 100 });
    const fired: string[] = [];
    void vt.sleep(300).then(() => fired.push(`c@${vt.nowMs()}`));
    void vt.sleep(100).then(() => fired.push(`a@${vt.nowMs()}`));
    void vt.sleep(100).then(() => fired.push(`b@${vt.nowMs()}`));
    await vt.advance(150);
    expect(fired).toEqual(['a@200', 'b@200']);
    expect(vt.nowMs()).toBe(250);
    await vt.runUntilIdle();
    expect(fired).toEqual(['a@200', 'b@200', 'c@400']);
    expect(vt.pendingTimers).toBe(0);
  });

  it('lets chains settle between timers (a timer set by a timer fires in order)', async () => {
    const vt = createVirtualTime();
    const fired: number[] = [];
    void vt.sleep(10).then(async () => {
      fired.push(vt.nowMs());
      await vt.sleep(5);
      fired.push(vt.nowMs());
    });
    void vt.sleep(20).then(() => fired.push(vt.nowMs()));
    await vt.runUntilIdle();
    expect(fired).toEqual([10, 15, 20]);
  });

  it('rejects with the abort reason and drops the timer', async () => {
    const vt = createVirtualTime();
    const controller = new AbortController();
    const slept = vt.sleep(1_000, controller.signal);
    controller.abort(new Error('stop'));
    await expect(slept).rejects.toThrow('stop');
    expect(vt.pendingTimers).toBe(0);
    await expect(vt.sleep(1, AbortSignal.abort(new Error('already')))).rejects.toThrow('already');
  });

  it('autoAdvance jumps to the next timer when nothing else is pending', async () => {
    const vt = createVirtualTime({ autoAdvance: true });
    await vt.sleep(60_000);
    expect(vt.nowMs()).toBe(60_000);
  });
});

describe('VirtualClock timer queue', () => {
  it('fires many timers created out of order in (time, creation) order, skipping aborted ones', async () => {
    const vt = createVirtualTime();
    const fired: [number, number][] = [];
    const controllers: AbortController[] = [];
    let state = 12345;
    const next = (): number => {
      state = (state * 1103515245 + 12345) % 2147483648;
      return state;
    };
    for (let i = 0; i < 5_000; i++) {
      const controller = new AbortController();
      controllers.push(controller);
      const dueMs = next() % 1_000;
      vt.sleep(dueMs, controller.signal).then(
        () => fired.push([vt.nowMs(), i]),
        () => {},
      );
    }
    for (let i = 0; i < 5_000; i += 3) controllers[i]?.abort(new Error('cancelled'));
    expect(vt.pendingTimers).toBe(5_000 - Math.ceil(5_000 / 3));
    await vt.runUntilIdle();
    expect(fired).toHaveLength(5_000 - Math.ceil(5_000 / 3));
    expect(fired.some(([, i]) => i % 3 === 0)).toBe(false);
    for (let k = 1; k < fired.length; k++) {
      const [prevMs, prevI] = fired[k - 1] as [number, number];
      const [atMs, i] = fired[k] as [number, number];
      expect(atMs > prevMs || (atMs === prevMs && i > prevI)).toBe(true);
    }
    expect(vt.pendingTimers).toBe(0);
  });
});
