/**
 * @module probe-methods
 * The A2A methods `probe --method` can send (apart from the transport, so parsing flags loads no
 * SDK).
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
