/**
 * @module call-outcomes
 * What happened to a fan-out's calls, as `demo` and `simulate` report it, counted from the requests
 * an agent saw.
 */

/**
 * Outcome counts of a fan-out, from the agent's side and the client's.
 */
export interface CallOutcomeCounts {
  /** Calls made. */
  readonly calls: number;
  /** Calls admitted on a first send that went out when the call was made. */
  readonly admittedAtOnce: number;
  /** Calls admitted on a first send the client held back to the agent's pace (a planned send). */
  readonly admittedPaced: number;
  /** Calls rejected on their first send. */
  readonly rejected: number;
  /** Calls admitted on their first retry. */
  readonly admittedOnFirstRetry: number;
  /** Calls admitted on their second or a later retry. */
  readonly admittedOnLaterRetry: number;
  /** Second and later retries sent (requests, not calls), admitted or not. */
  readonly laterRetries: number;
  /** Retries the agent rejected again (requests, not calls). */
  readonly rejectedRetries: number;
  /** Calls never admitted: the client gave up. */
  readonly abandoned: number;
  /** From the fan-out to the last call's end, seconds on the run's clock. */
  readonly totalSeconds: number;
  /** Requests the agent received (first sends and retries). */
  readonly requestsSeenByAgent: number;
}

/**
 * One request the agent decided: which call it belongs to, which attempt, and the outcome.
 */
export interface SeenAttempt {
  /** Identifies the call (e.g. caller and messageId). */
  readonly call: string;
  /** 0 for the first send, 1 for the first retry, … */
  readonly attemptIndex: number;
  readonly admitted: boolean;
  /** A first send the client held back after the call was made (its gate or plan). */
  readonly paced?: boolean;
}

/**
 * Counts the agent-side outcomes of a fan-out from its requests (in any order).
 *
 * @example
 * ```ts
 * countAttempts([{ call: 'a', attemptIndex: 0, admitted: false }, { call: 'a', attemptIndex: 1, admitted: true }]);
 * // { admittedAtOnce: 0, admittedPaced: 0, rejected: 1, admittedOnFirstRetry: 1, admittedOnLaterRetry: 0, laterRetries: 0, rejectedRetries: 0, requestsSeenByAgent: 2 }
 * ```
 */
export function countAttempts(
  attempts: Iterable<SeenAttempt>,
): Omit<CallOutcomeCounts, 'calls' | 'abandoned' | 'totalSeconds'> {
  let admittedAtOnce = 0;
  let admittedPaced = 0;
  let rejected = 0;
  let admittedOnFirstRetry = 0;
  let admittedOnLaterRetry = 0;
  let laterRetries = 0;
  let rejectedRetries = 0;
  let requestsSeenByAgent = 0;
  for (const a of attempts) {
    requestsSeenByAgent++;
    if (a.attemptIndex > 1) laterRetries++;
    if (a.attemptIndex === 0) {
      if (!a.admitted) rejected++;
      else if (a.paced === true) admittedPaced++;
      else admittedAtOnce++;
    } else if (!a.admitted) {
      rejectedRetries++;
    } else if (a.attemptIndex === 1) {
      admittedOnFirstRetry++;
    } else {
      admittedOnLaterRetry++;
    }
  }
  return {
    admittedAtOnce,
    admittedPaced,
    rejected,
    admittedOnFirstRetry,
    admittedOnLaterRetry,
    laterRetries,
    rejectedRetries,
    requestsSeenByAgent,
  };
}
