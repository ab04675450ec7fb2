/**
 * @module cli-app
 * The `a2a-ratelimit` program: the cac parser with its commands, and `runCli` (one line and an exit
 * code per failure).
 */

import { readFileSync } from 'node:fs';
import { type CAC, cac } from 'cac';
import { CliError, EXIT_CODES, exitCodeOf, formatCliError } from './cli-error.js';
import { registerDemoCommand } from './demo-command.js';
import { registerGatewayCommand } from './gateway-command.js';
import { registerProbeCommand } from './probe-command.js';
import { registerServeCommand } from './serve-command.js';
import { registerSimulateCommand } from './simulate-command.js';

/** The package version, read from the CLI package's package.json one level up (src or dist). */
function packageVersion(): string {
  try {
    const text = readFileSync(new URL('../package.json', import.meta.url), 'utf8');
    const version = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === 'string' ? version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/**
 * Creates the parser with `demo`, `serve`, `simulate` and `probe` registered.
 *
 * @example
 * ```ts
 * const cli = createCli();
 * cli.outputHelp();
 * ```
 */
export function createCli(): CAC {
  const cli = cac('a2a-ratelimit');
  cli.option('--debug', 'Show the stack trace of unexpected errors');
  registerDemoCommand(cli);
  registerServeCommand(cli);
  registerGatewayCommand(cli);
  registerSimulateCommand(cli);
  registerProbeCommand(cli);
  cli.help();
  cli.version(packageVersion());
  return cli;
}

/** A negative number as a flag value: `-5`, `-0.5`, `-.5`, `-1e3`. */
const NEGATIVE_NUMBER = /^-(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$/i;

/**
 * Joins a negative number to the long flag before it (`--callers -5` → `--callers=-5`), so the
 * parser reads it as the flag's value (and the command says what is wrong with it) rather than
 * as an unknown short flag `-5`.
 *
 * @example
 * ```ts
 * joinNegativeValues(['simulate', '--callers', '-5']); // ['simulate', '--callers=-5']
 * ```
 */
export function joinNegativeValues(args: readonly string[]): string[] {
  const out: string[] = [];
  for (const arg of args) {
    const previous = out[out.length - 1];
    if (
      NEGATIVE_NUMBER.test(arg) &&
      previous !== undefined &&
      /^--[^=]+$/.test(previous) &&
      !previous.startsWith('--no-')
    ) {
      out[out.length - 1] = `${previous}=${arg}`;
    } else out.push(arg);
  }
  return out;
}

/**
 * Runs the program on `argv` (as `process.argv`: node, script, then arguments) and resolves with
 * the exit code. Errors are written to `stderr` as one line (the stack only with `--debug`).
 *
 * @example
 * ```ts
 * process.exitCode = await runCli(process.argv);
 * ```
 */
export async function runCli(
  argv: readonly string[],
  stderr: { write(text: string): unknown } = process.stderr,
): Promise<number> {
  const debug = argv.includes('--debug');
  try {
    const cli = createCli();
    const [node = 'node', script = 'a2a-ratelimit', ...rest] = argv;
    const parsed = cli.parse([node, script, ...joinNegativeValues(rest)], { run: false });
    if (parsed.options.help === true || parsed.options.version === true) return 0;
    if (cli.matchedCommand === undefined) {
      const name = parsed.args[0];
      if (name === undefined) {
        // No command is a usage error: the help, and a non-zero exit (scripts notice).
        cli.outputHelp();
        stderr.write('a2a-ratelimit: no command given; commands: demo, serve, simulate, probe\n');
        return EXIT_CODES.usage;
      }
      throw new CliError(
        `unknown command "${name}"; commands: demo, serve, simulate, probe (see --help)`,
      );
    }
    const result: unknown = await cli.runMatchedCommand();
    return typeof result === 'number' ? result : 0;
  } catch (error) {
    stderr.write(formatCliError(error, { debug }));
    return exitCodeOf(error);
  }
}
