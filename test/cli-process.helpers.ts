/**
 * Runs the `a2a-ratelimit` CLI from source as a child process (`node --import tsx
 * --conditions=a2a-ratelimit-source packages/cli/src/main.ts …`: the library from its sources
 * too), for the CLI tests: one-shot commands with their exit code, stdout and stderr; and `serve` as a long-lived child whose ports are read from its ready banner.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MAIN = 'packages/cli/src/main.ts';

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Spawns the CLI from source with `args`. */
export function spawnCli(args: readonly string[]): ChildProcess {
  return spawn(
    process.execPath,
    ['--import', 'tsx', '--conditions=a2a-ratelimit-source', MAIN, ...args],
    {
      cwd: ROOT,
      env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
}

/** Runs one command to completion. */
export function runCliProcess(args: readonly string[], timeoutMs = 60_000): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(args);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `a2a-ratelimit ${args.join(' ')} did not finish in ${timeoutMs} ms: ${stdout} ${stderr}`,
        ),
      );
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      // Let the pipes drain.
      setImmediate(() => resolve({ code, stdout, stderr }));
    });
  });
}

export interface ServeProcess {
  readonly baseUrl: string;
  readonly httpPort: number;
  readonly grpcPort: number;
  readonly grpcTarget: string;
  readonly banner: string;
  output(): string;
  /** What the process wrote to stderr so far. */
  stderr(): string;
  /** Sends `signal` (e.g. SIGHUP) without waiting for anything. */
  signal(signal: NodeJS.Signals): void;
  /** Sends `signal` and resolves with how the process ended. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `serve` (ports 0 unless given) and resolves once its banner is out. */
export function startServeProcess(args: readonly string[] = []): Promise<ServeProcess> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(['serve', '--port', '0', '--grpc-port', '0', ...args]);
    let out = '';
    let err = '';
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
      child.once('exit', (code, signal) => done({ code, signal })),
    );
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not start: ${out} ${err}`));
    }, 30_000);
    void exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code} before it was ready: ${out} ${err}`));
    });
    child.stderr?.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (!out.includes('Press Ctrl-C to stop.')) return;
      clearTimeout(timer);
      const http = /JSON-RPC\s+http:\/\/127\.0\.0\.1:(\d+)\/a2a\/jsonrpc/.exec(out);
      const grpc = /gRPC\s+127\.0\.0\.1:(\d+)/.exec(out);
      if (http === null || grpc === null) {
        reject(new Error(`unexpected banner: ${out}`));
        return;
      }
      const httpPort = Number(http[1]);
      const grpcPort = Number(grpc[1]);
      resolve({
        baseUrl: `http://127.0.0.1:${httpPort}`,
        httpPort,
        grpcPort,
        grpcTarget: `127.0.0.1:${grpcPort}`,
        banner: out,
        output: () => out + err,
        stderr: () => err,
        signal: (signal) => {
          child.kill(signal);
        },
        async stop(signal = 'SIGTERM') {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
          const result = await exited;
          clearTimeout(killer);
          return result;
        },
      });
    });
  });
}

/** The last non-empty line of a text. */
export function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return lines[lines.length - 1] ?? '';
}
