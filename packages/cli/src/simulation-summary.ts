/**
 * @module simulation-summary
 * What one client kind's simulated run came to: per-call tracks in, the outcome out (admissions
 * at once, on the first and later retries, abandoned calls, waits at p50/p99, total time).
 */

import { countAttempts } from './call-outcomes.js';
import type { SeenRequest } from './simulated-agent.js';
import type { ClientKind, ClientKindOutcome } from './simulation.js';

/** Per-call bookkeeping, filled in by the tracking attempt wrapper. */
export interface CallTrack {
  /** Caller and messageId, as `summarize` keys requests. */
  readonly call: string;
  arrivalMs: number;
  firstSendMs: number;
  admittedAttempt: number;
  admittedAtMs: number;
  endMs: number;
}

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1] as number;
}

/** ms → s, to the millisecond. */
function seconds(ms: number): number {
  return Math.round(ms) / 1000;
}

/** The outcome of one client kind's run: counts per attempt, abandoned calls, waits. */
export function summarize(
  kind: ClientKind,
  tracks: readonly CallTrack[],
  requests: readonly SeenRequest[],
): ClientKindOutcome {
  let abandoned = 0;
  let heldByClient = 0;
  let endMs = 0;
  const waitsMs: number[] = [];
  const abandonedAtMs: number[] = [];
  for (const t of tracks) {
    if (t.admittedAttempt < 0) {
      abandoned++;
      abandonedAtMs.push(t.endMs);
    } else waitsMs.push(t.admittedAtMs - t.arrivalMs);
    if (t.firstSendMs > t.arrivalMs) heldByClient++;
    if (t.endMs > endMs) endMs = t.endMs;
  }
  const paced = new Set<string>();
  for (const t of tracks) if (t.firstSendMs > t.arrivalMs) paced.add(t.call);
  const counts = countAttempts(
    requests.map((r) => {
      const call = `${r.caller}\u0000${r.messageId ?? ''}`;
      return { call, attemptIndex: r.attemptIndex, admitted: r.admitted, paced: paced.has(call) };
    }),
  );
  waitsMs.sort((a, b) => a - b);
  return {
    kind,
    calls: tracks.length,
    ...counts,
    abandoned,
    firstRetrySuccessRate:
      counts.rejected === 0 ? 1 : counts.admittedOnFirstRetry / counts.rejected,
    heldByClient,
    totalSeconds: seconds(endMs),
    waitP50Seconds: seconds(percentile(waitsMs, 50)),
    waitP99Seconds: seconds(percentile(waitsMs, 99)),
    requests,
    abandonedAtMs,
  };
}
