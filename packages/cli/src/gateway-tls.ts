/**
 * @module gateway-tls
 * `gateway --tls-cert/--tls-key`: HTTPS on the gateway's listener, the certificate re-read on
 * SIGHUP.
 */

import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import { createSecureContext } from 'node:tls';
import { CliError } from './cli-error.js';
import { parseOptionalString } from './cli-options.js';

/** The certificate chain and private key files (PEM) of the listener. */
export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

/** A certificate chain and its private key, read and checked. */
export interface TlsPair {
  readonly cert: Buffer;
  readonly key: Buffer;
}

/**
 * Parses `--tls-cert` and `--tls-key`: both, or neither (undefined: plain HTTP).
 *
 * @example
 * ```ts
 * parseTlsFlags({ tlsCert: 'cert.pem', tlsKey: 'key.pem' }); // { certFile: 'cert.pem', keyFile: 'key.pem' }
 * parseTlsFlags({ tlsCert: 'cert.pem' }); // throws: --tls-cert needs --tls-key <file> …
 * ```
 */
export function parseTlsFlags(flags: Record<string, unknown>): TlsFiles | undefined {
  const certFile = parseOptionalString(flags.tlsCert, '--tls-cert');
  const keyFile = parseOptionalString(flags.tlsKey, '--tls-key');
  if (certFile === undefined && keyFile === undefined) return undefined;
  if (certFile === undefined) {
    throw new CliError('--tls-key needs --tls-cert <file> (the certificate chain, PEM)');
  }
  if (keyFile === undefined) {
    throw new CliError('--tls-cert needs --tls-key <file> (its private key, PEM)');
  }
  return { certFile, keyFile };
}

function oneLine(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown };
  const message = typeof e?.message === 'string' ? e.message : String(error);
  return message.replace(/\s+/g, ' ').trim();
}

async function readPem(file: string, flag: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (error) {
    throw new CliError(`${flag} ${file}: cannot read it (${oneLine(error)})`);
  }
}

/**
 * Reads both files and checks that they parse and belong together; a `CliError` in one line
 * otherwise.
 *
 * @example
 * ```ts
 * const pair = await readTlsPair({ certFile: 'cert.pem', keyFile: 'key.pem' });
 * ```
 */
export async function readTlsPair(files: TlsFiles): Promise<TlsPair> {
  const [cert, key] = await Promise.all([
    readPem(files.certFile, '--tls-cert'),
    readPem(files.keyFile, '--tls-key'),
  ]);
  try {
    createSecureContext({ cert, key });
  } catch (error) {
    throw new CliError(
      `--tls-cert ${files.certFile} / --tls-key ${files.keyFile}: not a PEM certificate and its private key (${oneLine(error)})`,
    );
  }
  return { cert, key };
}

/**
 * An HTTPS server with the pair of `files` (not listening yet).
 *
 * @example
 * ```ts
 * const server = await createTlsServer({ certFile: 'cert.pem', keyFile: 'key.pem' });
 * server.on('request', gateway.handler);
 * ```
 */
export async function createTlsServer(files: TlsFiles): Promise<Server> {
  return createServer(await readTlsPair(files));
}

/**
 * Reloads the certificate and key of a running HTTPS server on `signal` (default SIGHUP): new
 * connections get the new pair; one line per reload goes to `log` (a pair that fails keeps the
 * running one). Returns the function that stops listening for the signal.
 *
 * @example
 * ```ts
 * const stop = reloadTlsOnSignal(server, files, (line) => process.stderr.write(`${line}\n`));
 * ```
 */
export function reloadTlsOnSignal(
  server: Server,
  files: TlsFiles,
  log: (line: string) => void,
  signal: NodeJS.Signals = 'SIGHUP',
): () => void {
  // Reloads run one after another, so the last signal's files win.
  let queue = Promise.resolve();
  const reloadOnce = async (): Promise<void> => {
    try {
      server.setSecureContext(await readTlsPair(files));
      log(`a2a-ratelimit gateway: TLS certificate reloaded from ${files.certFile}`);
    } catch (error) {
      log(`a2a-ratelimit gateway: TLS certificate kept: ${oneLine(error)}`);
    }
  };
  const reload = (): void => {
    queue = queue.then(reloadOnce);
  };
  process.on(signal, reload);
  return () => process.off(signal, reload);
}
