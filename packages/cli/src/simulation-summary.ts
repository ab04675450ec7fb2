/**
 * @module simulation-summary
 * The client kinds a simulation compares, and what one kind's run came to.
 */

import { type CallOutcomeCounts, countAttempts } from './call-outcomes.js';
import type { SeenRequest } from './simulated-agent.js';

/**
 * The client kinds a simulation can compare:
 * - `ours`: the production `RetryScheduler`, honouring every hint (agent answers with our encoding);
 * - `naive`: full-jitter exponential backoff (base 0.5 s, 4 retries, 30 s budget) against an agent
 *   that answers a bare HTTP 500 over plain GCRA (no held slots) — the seed's counter-example;
 * - `fixed`: ignores the answer, retries every `fixedDelayMs` (default 1 s), 4 retries;
 * - `hint-ignoring`: ignores the answer, retries at once and then every 250 ms, 10 retries;
 * - `give-up-early`: ignores the answer, retries once after `fixedDelayMs`, then gives up;
 * - `planned`: the production `RetryScheduler` that has also read the agent's card: first sends
 *   go when the published policies say they conform (rate paced, concurrency bounded), and every
 *   hint is still honoured.
 *
 * @example
 * ```ts
 * const kinds: readonly ClientKind[] = CLIENT_KINDS; // ['ours', 'naive', 'fixed', 'hint-ignoring', 'give-up-early', 'planned']
 * ```
 */
export const CLIENT_KINDS = [
  'ours',
  'naive',
  'fixed',
  'hint-ignoring',
  'give-up-early',
  'planned',
] as const;

/**
 * One of {@link CLIENT_KINDS}.
 */
export type ClientKind = (typeof CLIENT_KINDS)[number];

/**
 * What happened to the calls of one client kind. Counts are calls unless said otherwise.
 *
 * @example
 * ```ts
 * const { admittedAtOnce, admittedOnFirstRetry, abandoned } = report.outcomes[0] as ClientKindOutcome;
 * ```
 */
export interface ClientKindOutcome extends CallOutcomeCounts {
  readonly kind: ClientKind;
  /** Share of calls rejected at first that were admitted on their first retry; 1 when none was rejected. */
  readonly firstRetrySuccessRate: number;
  /** Calls whose first send the client delayed after their arrival (our gate). */
  readonly heldByClient: number;
  /** Median time from arrival to admission over admitted calls, s (0 when none). */
  readonly waitP50Seconds: number;
  /** 99th percentile of the same, s. */
  readonly waitP99Seconds: number;
  /** Every request the agent saw, in order (for charts; left out of JSON summaries). */
  readonly requests: readonly SeenRequest[];
  /** When each abandoned call was given up, ms of virtual time (for charts; left out of JSON summaries). */
  readonly abandonedAtMs: readonly number[];
}

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
