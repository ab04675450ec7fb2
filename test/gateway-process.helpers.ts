/**
 * `a2a-ratelimit gateway` as a long-lived child process for the gateway's CLI tests: started
 * with `--port 0` (and whatever else), resolved once its ready banner is out, with its listening
 * and admin URLs read from the banner, its stdout and stderr kept, and a stop that waits for exit.
 */

import type { ChildProcess } from 'node:child_process';
import { spawnCli } from './cli-process.helpers.js';

export interface GatewayProcess {
  /** The listening URL the banner printed (`http://…` or `https://…`). */
  readonly url: string;
  /** The admin URL (without `/metrics`), when `--admin-port` was given. */
  readonly adminUrl: string | undefined;
  readonly banner: string;
  readonly child: ChildProcess;
  /** What the process wrote to stderr so far. */
  stderr(): string;
  /** Resolves once stderr matches `pattern` (no deadline of its own: the test's timeout is). */
  untilStderr(pattern: RegExp): Promise<string>;
  /** Sends `signal` (default SIGTERM) and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `gateway --port 0 …args` and resolves once its banner is out. */
export function startGatewayProcess(args: readonly string[]): Promise<GatewayProcess> {
  const child = spawnCli(['gateway', '--port', '0', ...args]);
  let out = '';
  let err = '';
  const waiters = new Set<() => void>();
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
    for (const wake of waiters) wake();
  });
  return new Promise((resolve, reject) => {
    void exited.then((code) => reject(new Error(`gateway exited ${code}: ${out} ${err}`)));
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (!out.includes('Press Ctrl-C')) return;
      const url = /listening\s+(https?:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1];
      if (url === undefined) {
        reject(new Error(`unexpected banner: ${out}`));
        return;
      }
      const adminUrl = /admin\s+(http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(out)?.[1];
      resolve({
        url,
        adminUrl,
        banner: out,
        child,
        stderr: () => err,
        untilStderr: (pattern) =>
          new Promise((done) => {
            const check = (): void => {
              const match = pattern.exec(err);
              if (match === null) return;
              waiters.delete(check);
              done(match[0]);
            };
            waiters.add(check);
            check();
          }),
        async stop(signal = 'SIGTERM') {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
          const code = await exited;
          clearTimeout(killer);
          return code;
        },
      });
    });
  });
}
