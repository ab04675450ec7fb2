import { describe, expect, it } from 'vitest';
import { createPushMetrics } from './push-metrics.js';

describe('createPushMetrics', () => {
  it('counts deliveries, drops by reason, and circuits open now', async () => {
    const { hooks, registry } = createPushMetrics();
    const base = {
      url: 'http://h.example/x',
      taskId: 't',
      kind: 'statusUpdate' as const,
      attempts: 1,
      ageMs: 250,
    };
    hooks.onDelivered(base);
    hooks.onDrop({ ...base, reason: 'refused', attempts: 0 });
    hooks.onDrop({ ...base, reason: 'circuit-open' });
    const origin = 'http://h.example';
    hooks.onCircuitChange({ origin, from: 'closed', to: 'open', failures: 20, reopenAtMs: 1 });
    hooks.onCircuitChange({ origin, from: 'open', to: 'half-open', failures: 20 });
    hooks.onCircuitChange({ origin, from: 'half-open', to: 'open', failures: 21, reopenAtMs: 2 });
    hooks.onCircuitChange({
      origin: 'http://other.example',
      from: 'closed',
      to: 'open',
      failures: 20,
    });
    let text = await registry.metrics();
    expect(text).toContain('a2a_ratelimit_push_delivered_total{kind="statusUpdate"} 1');
    expect(text).toContain(
      'a2a_ratelimit_push_dropped_total{reason="refused",kind="statusUpdate"} 1',
    );
    expect(text).toContain(
      'a2a_ratelimit_push_dropped_total{reason="circuit-open",kind="statusUpdate"} 1',
    );
    expect(text).toContain('a2a_ratelimit_push_delivery_seconds_bucket{le="0.5"} 1');
    expect(text).toContain('a2a_ratelimit_push_circuits_open 2');
    expect(text).toContain('a2a_ratelimit_push_circuit_changes_total{to="open"} 3');
    expect(text).not.toContain('h.example');
    hooks.onCircuitChange({ origin, from: 'open', to: 'half-open', failures: 21 });
    hooks.onCircuitChange({ origin, from: 'half-open', to: 'closed', failures: 0 });
    text = await registry.metrics();
    expect(text).toContain('a2a_ratelimit_push_circuits_open 1');
  });
});
