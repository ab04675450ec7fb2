/**
 * @module cli-error
 * `CliError`, the errors a user of the command can act on, and how any error ends the command (one
 * line, an exit code).
 */

/**
 * Exit codes of the command.
 *
 * @example
 * ```ts
 * process.exitCode = EXIT_CODES.usage;
 * ```
 */
export const EXIT_CODES = {
  /** Everything passed. */
  ok: 0,
  /** A check failed (`probe`), or an unexpected error. */
  failure: 1,
  /** A user error: bad flags, bad config, unreachable or unsuitable agent. */
  usage: 2,
} as const;

/**
 * An error the user can act on. Its message is one line that says what is wrong and, where it
 * helps, what to do; it is printed without a stack trace.
 *
 * @example
 * ```ts
 * throw new CliError('--time-scale must be a positive number, got "fast"');
 * ```
 */
export class CliError extends Error {
  override readonly name = 'CliError';
  /** Brand checked by {@link isCliError} (works across copies of this module). */
  readonly isCliError = true;
  /** Process exit code; default {@link EXIT_CODES.usage}. */
  readonly exitCode: number;

  constructor(
    message: string,
    options: { readonly exitCode?: number; readonly cause?: unknown } = {},
  ) {
    super(oneLine(message), options.cause === undefined ? undefined : { cause: options.cause });
    this.exitCode = options.exitCode ?? EXIT_CODES.usage;
  }
}

/**
 * Whether `value` is a {@link CliError}.
 *
 * @example
 * ```ts
 * if (isCliError(error)) process.exitCode = error.exitCode;
 * ```
 */
export function isCliError(value: unknown): value is CliError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { isCliError?: unknown }).isCliError === true
  );
}

/**
 * Collapses whitespace and line breaks so a message fits on one line.
 *
 * @example
 * ```ts
 * oneLine('a\n  b'); // 'a b'
 * ```
 */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * The text printed for an error that ends the command: one line for a {@link CliError} or a
 * parser error; one line plus a hint (or, with `debug`, the stack) for anything else.
 *
 * @example
 * ```ts
 * process.stderr.write(formatCliError(error, { debug: false }));
 * ```
 */
export function formatCliError(error: unknown, options: { readonly debug: boolean }): string {
  const program = 'a2a-ratelimit';
  if (isCliError(error)) {
    return `${program}: ${error.message}\n${options.debug && error.stack ? `${error.stack}\n` : ''}`;
  }
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof Error && error.name === 'CACError') {
    return `${program}: ${oneLine(message)} (see --help)\n`;
  }
  if (options.debug) {
    return `${program}: unexpected error: ${oneLine(message)}\n${error instanceof Error ? (error.stack ?? '') : ''}\n`;
  }
  return `${program}: unexpected error: ${oneLine(message)} (run with --debug for the stack)\n`;
}

/**
 * The exit code for an error that ends the command.
 *
 * @example
 * ```ts
 * process.exitCode = exitCodeOf(error); // 2 for a CliError or a bad flag
 * ```
 */
export function exitCodeOf(error: unknown): number {
  if (isCliError(error)) return error.exitCode;
  if (error instanceof Error && error.name === 'CACError') return EXIT_CODES.usage;
  return EXIT_CODES.failure;
}
