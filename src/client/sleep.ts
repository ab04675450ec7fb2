/**
 * @module sleep
 * Waiting as the client needs it: the cancellable `Sleep` contract, the timer-based `systemSleep`,
 * and `systemClock`.
 */

/**
 * Waits `ms` milliseconds. Rejects with `signal.reason` as soon as `signal` aborts (also when it
 * is already aborted), and never resolves early.
 *
 * @example
 * ```ts
 * const sleep: Sleep = (ms, signal) => systemSleep(ms, signal);
 * await sleep(1_500); // 1.5 s
 * ```
 */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/**
 * A real timer-based {@link Sleep}: `setTimeout` for `ms` milliseconds (0 for negative or NaN),
 * cancelled by `signal`.
 *
 * @example
 * ```ts
 * await systemSleep(250, AbortSignal.timeout(1_000));
 * ```
 */
export const systemSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    // setTimeout overflows above 2^31 − 1 ms and fires at once; wait longer delays in pieces.
    let remainingMs = Math.max(0, ms || 0);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const arm = (): void => {
      const stepMs = Math.min(remainingMs, MAX_TIMER_MS);
      remainingMs -= stepMs;
      timer = setTimeout(() => {
        if (remainingMs > 0) return arm();
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, stepMs);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    arm();
  });

const MAX_TIMER_MS = 2_147_483_647;
