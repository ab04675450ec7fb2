/**
 * @module probe-methods
 * The A2A methods `a2a-ratelimit probe --method` can send (kept apart from the transport so the
 * CLI parses flags without loading the SDK or grpc-js).
 */

/**
 * Methods `probe --method` can send.
 *
 * @example
 * ```ts
 * const method: ProbeMethod = PROBE_METHODS.sendMessage;
 * ```
 */
export const PROBE_METHODS = {
  sendMessage: 'SendMessage',
  sendStreamingMessage: 'SendStreamingMessage',
  getTask: 'GetTask',
  listTasks: 'ListTasks',
} as const;

/**
 * One of {@link PROBE_METHODS}.
 */
export type ProbeMethod = (typeof PROBE_METHODS)[keyof typeof PROBE_METHODS];
