/**
 * @module until-signal
 * Waiting for SIGINT or SIGTERM, for the long-lived commands.
 */

/**
 * Resolves on the first SIGINT or SIGTERM.
 *
 * @example
 * ```ts
 * await untilSignal(); // 'SIGTERM'
 * ```
 */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (signal: NodeJS.Signals): void => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(signal);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}
