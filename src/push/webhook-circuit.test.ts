import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type CircuitOutcome, WebhookCircuit } from './webhook-circuit.js';

describe('WebhookCircuit', () => {
  it('opens after failureThreshold consecutive failures, not before', () => {
    const c = new WebhookCircuit({ failureThreshold: 3, openMs: 1_000 });
    for (let i = 0; i < 2; i++) expect(c.record('failed', i, false)).toBeUndefined();
    expect(c.permit(2)).toEqual({ go: true, probe: false });
    expect(c.record('failed', 2, false)).toEqual({
      from: 'closed',
      to: 'open',
      failures: 3,
      reopenAtMs: 1_002,
    });
    expect(c.state).toBe('open');
    expect(c.reopenAtMs).toBe(1_002);
  });

  it('an answer resets the count; a neutral outcome changes nothing', () => {
    const c = new WebhookCircuit({ failureThreshold: 3, openMs: 1_000 });
    c.record('failed', 0, false);
    c.record('failed', 1, false);
    c.record('neutral', 2, false);
    expect(c.consecutiveFailures).toBe(2);
    c.record('answered', 3, false);
    expect(c.consecutiveFailures).toBe(0);
    expect(c.isIdle()).toBe(true);
    c.record('failed', 4, false);
    c.record('failed', 5, false);
    expect(c.state).toBe('closed');
  });

  it('open: nothing goes until reopenAtMs, then exactly one probe', () => {
    const c = new WebhookCircuit({ failureThreshold: 1, openMs: 1_000 });
    c.record('failed', 0, false);
    expect(c.peek(999)).toEqual({ pass: false, untilMs: 1_000 });
    expect(c.permit(999)).toEqual({ go: false, untilMs: 1_000 });
    expect(c.peek(1_000)).toEqual({ pass: true });
    expect(c.permit(1_000)).toEqual({
      go: true,
      probe: true,
      transition: { from: 'open', to: 'half-open', failures: 1 },
    });
    expect(c.peek(1_001)).toEqual({ pass: false });
    expect(c.permit(1_001)).toEqual({ go: false });
  });

  it('half-open: the probe answered closes it; the probe failed opens it again for openMs', () => {
    const c = new WebhookCircuit({ failureThreshold: 1, openMs: 1_000 });
    c.record('failed', 0, false);
    c.permit(1_000);
    expect(c.record('failed', 1_200, true)).toEqual({
      from: 'half-open',
      to: 'open',
      failures: 2,
      reopenAtMs: 2_200,
    });
    expect(c.permit(2_199).go).toBe(false);
    expect(c.permit(2_200)).toMatchObject({ go: true, probe: true });
    expect(c.record('answered', 2_300, true)).toEqual({
      from: 'half-open',
      to: 'closed',
      failures: 0,
    });
    expect(c.permit(2_301)).toEqual({ go: true, probe: false });
  });

  it('a neutral probe hands the probe to the next POST', () => {
    const c = new WebhookCircuit({ failureThreshold: 1, openMs: 10 });
    c.record('failed', 0, false);
    c.permit(10);
    c.record('neutral', 11, true);
    expect(c.state).toBe('half-open');
    expect(c.permit(12)).toEqual({ go: true, probe: true });
  });

  it('late failures of POSTs sent before it opened do not extend it; a late answer closes it', () => {
    const c = new WebhookCircuit({ failureThreshold: 1, openMs: 1_000 });
    c.record('failed', 0, false);
    expect(c.record('failed', 500, false)).toBeUndefined();
    expect(c.reopenAtMs).toBe(1_000);
    expect(c.record('answered', 600, false)).toMatchObject({ from: 'open', to: 'closed' });
  });

  it('never lets a POST through while open, whatever happens (random outcomes)', () => {
    const outcome = fc.constantFrom<CircuitOutcome>('answered', 'failed', 'failed', 'neutral');
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 400 }), outcome), { maxLength: 200 }),
        (steps) => {
          const c = new WebhookCircuit({ failureThreshold: 3, openMs: 1_000 });
          let nowMs = 0;
          let openedAt: number | undefined;
          for (const [advanceMs, result] of steps) {
            nowMs += advanceMs;
            const permit = c.permit(nowMs);
            if (openedAt !== undefined && nowMs < openedAt + 1_000) expect(permit.go).toBe(false);
            if (!permit.go) continue;
            const t = c.record(result, nowMs, permit.probe);
            if (t?.to === 'open') openedAt = nowMs;
            if (t?.to === 'closed') openedAt = undefined;
          }
        },
      ),
    );
  });

  it('refuses bad options', () => {
    expect(() => new WebhookCircuit({ failureThreshold: 0 })).toThrow(/failureThreshold/);
    expect(() => new WebhookCircuit({ failureThreshold: 2.5 })).toThrow(/failureThreshold/);
    expect(() => new WebhookCircuit({ openMs: 0 })).toThrow(/openMs/);
    expect(new WebhookCircuit()).toMatchObject({ failureThreshold: 20, openMs: 30_000 });
  });
});
