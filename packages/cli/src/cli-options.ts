/**
 * @module cli-options
 * Parsing of flag values shared by the commands (binding, numbers, ports, hosts, URLs); a bad value
 * is a `CliError` naming the flag.
 */

import { CliError } from './cli-error.js';

/**
 * The three A2A bindings, as the command names them.
 *
 * @example
 * ```ts
 * const binding: CliBinding = CLI_BINDINGS.grpc;
 * ```
 */
export const CLI_BINDINGS = {
  jsonrpc: 'jsonrpc',
  rest: 'rest',
  grpc: 'grpc',
} as const;

/**
 * One of {@link CLI_BINDINGS}.
 */
export type CliBinding = (typeof CLI_BINDINGS)[keyof typeof CLI_BINDINGS];

/**
 * The `protocolBinding` an agent card uses for each binding.
 *
 * @example
 * ```ts
 * CARD_BINDING_NAMES.rest; // 'HTTP+JSON'
 * ```
 */
export const CARD_BINDING_NAMES = {
  jsonrpc: 'JSONRPC',
  rest: 'HTTP+JSON',
  grpc: 'GRPC',
} as const satisfies Record<CliBinding, string>;

/**
 * Parses `--binding`; undefined gives `fallback`.
 *
 * @example
 * ```ts
 * parseBinding('REST', 'jsonrpc'); // 'rest'
 * ```
 */
export function parseBinding(value: unknown, fallback: CliBinding): CliBinding {
  if (value === undefined) return fallback;
  const text = String(value).trim().toLowerCase();
  const aliases: Readonly<Record<string, CliBinding>> = {
    jsonrpc: 'jsonrpc',
    'json-rpc': 'jsonrpc',
    rest: 'rest',
    'http+json': 'rest',
    grpc: 'grpc',
  };
  const binding = aliases[text];
  if (binding === undefined) {
    throw new CliError(`--binding must be jsonrpc, rest or grpc, got "${String(value)}"`);
  }
  return binding;
}

/**
 * Parses a flag that must be a finite number > 0 (e.g. `--time-scale`); undefined gives `fallback`.
 *
 * @example
 * ```ts
 * parsePositiveNumber('10', '--time-scale', 1); // 10
 * ```
 */
export function parsePositiveNumber(value: unknown, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = typeof value === 'number' ? value : Number(String(value).trim());
  if (typeof value === 'boolean' || !Number.isFinite(n) || n <= 0) {
    throw new CliError(`${flag} must be a positive number, got "${String(value)}"`);
  }
  return n;
}

/**
 * Parses a flag that must be a positive integer (e.g. `--burst`); undefined gives `fallback`.
 *
 * @example
 * ```ts
 * parsePositiveInteger('50', '--burst', 100); // 50
 * ```
 */
export function parsePositiveInteger(value: unknown, flag: string, fallback: number): number {
  const n = parsePositiveNumber(value, flag, fallback);
  if (!Number.isSafeInteger(n)) {
    throw new CliError(`${flag} must be a positive integer, got "${String(value)}"`);
  }
  return n;
}

/**
 * Parses a TCP port flag: an integer 0…65535 (0 = any free port); undefined gives `fallback`.
 *
 * @example
 * ```ts
 * parsePort('8080', '--port', 8080); // 8080
 * ```
 */
export function parsePort(value: unknown, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = typeof value === 'number' ? value : Number(String(value).trim());
  if (typeof value === 'boolean' || !Number.isInteger(n) || n < 0 || n > 65_535) {
    throw new CliError(`${flag} must be a port number 0-65535, got "${String(value)}"`);
  }
  return n;
}

/**
 * Parses a string flag that must not be empty when given (cac gives `true` for a flag without a
 * value); undefined gives undefined.
 *
 * @example
 * ```ts
 * parseOptionalString('agents.example.com', '--domain'); // 'agents.example.com'
 * ```
 */
export function parseOptionalString(value: unknown, flag: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' && typeof value !== 'number') {
    throw new CliError(`${flag} needs a value`);
  }
  const text = String(value).trim();
  if (text === '') throw new CliError(`${flag} needs a value`);
  return text;
}

/**
 * Parses an absolute http(s) URL flag or argument.
 *
 * @example
 * ```ts
 * parseHttpUrl('http://127.0.0.1:8080', 'base-url').origin; // 'http://127.0.0.1:8080'
 * ```
 */
export function parseHttpUrl(value: unknown, what: string): URL {
  const text = parseOptionalString(value, what);
  if (text === undefined) throw new CliError(`${what} is required`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new CliError(`${what} must be an http:// or https:// URL, got "${text}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new CliError(`${what} must be an http:// or https:// URL, got "${text}"`);
  }
  return url;
}
