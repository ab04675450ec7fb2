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
