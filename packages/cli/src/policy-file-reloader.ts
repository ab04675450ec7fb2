/**
 * @module policy-file-reloader
 * `watchPolicyFile`: `serve --config`'s (and `gateway --config`'s) reload on SIGHUP and on file
 * changes.
 */

import { createHash } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

/** What one reload did. */
export type ReloadOutcome =
  | { readonly kind: 'applied'; readonly detail: string }
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'refused'; readonly reason: string };

/** Options of {@link watchPolicyFile}. */
export interface PolicyFileReloaderOptions {
  /** The policy file (JSON or YAML). */
  readonly file: string;
  /**
   * Reads, validates and applies the file; resolves with a short description of the set now
   * in force (for the log line), rejects with an error whose message names the file and field.
   */
  readonly apply: (file: string) => Promise<string>;
  /** Where the one line per reload goes. */
  readonly log: (line: string) => void;
  /** Also reload when the file changes (not only on SIGHUP); default true. */
  readonly watchFile?: boolean;
  /** Quiet time after the last change event before reading the file, ms; default 100. */
  readonly settleMs?: number;
  /** The signal that asks for a reload; default `SIGHUP`. */
  readonly signal?: NodeJS.Signals;
  /**
   * Whether a refusal may pass by itself (the store was unreachable, say): the same bytes are
   * then tried again on the next change event, not only on a signal. Default: never (a bad file
   * stays bad until it changes).
   */
  readonly isTransient?: (error: unknown) => boolean;
}

/** A running reloader: reload on demand, and stop watching. */
export interface PolicyFileReloader {
  /** Reloads now (coalesced with any reload in progress). */
  reload(): Promise<ReloadOutcome>;
  /** Stops listening for the signal and file changes. */
  close(): void;
}

/**
 * Watches `file` and reloads it on the signal and on changes. The file's directory is watched
 * (editors and config-map updates replace the file rather than write it in place), and a change
 * that leaves the bytes as they were is not a reload. A reload is all or nothing: a file that
 * cannot be read, parsed or validated leaves the running set in force and its one line names the
 * file and the field. Reloads never overlap; triggers during one coalesce into one more.
 *
 * @example
 * ```ts
 * const reloader = watchPolicyFile({
 *   file: 'policies.yaml',
 *   apply: async (file) => { await limiter.updatePolicies((await loadPolicyConfig(file)).policies); return limiter.policySetVersion; },
 *   log: (line) => process.stderr.write(`${line}\n`),
 * });
 * ```
 */
export function watchPolicyFile(options: PolicyFileReloaderOptions): PolicyFileReloader {
  const file = resolve(options.file);
  const signal = options.signal ?? 'SIGHUP';
  const settleMs = options.settleMs ?? 100;
  /** The bytes the last reload read (applied or refused): a change event that leaves them is none. */
  let lastDigest: string | undefined;
  let running: Promise<ReloadOutcome> | undefined;
  let again = false;
  let settleTimer: NodeJS.Timeout | undefined;
  let closed = false;

  const digestOf = async (): Promise<string | undefined> => {
    try {
      return createHash('sha256')
        .update(await readFile(file))
        .digest('hex');
    } catch {
      return undefined; // unreadable: `apply` says why
    }
  };

  const once = async (fromWatch: boolean): Promise<ReloadOutcome> => {
    const digest = await digestOf();
    if (fromWatch && digest !== undefined && digest === lastDigest) return { kind: 'unchanged' };
    try {
      const detail = await options.apply(file);
      lastDigest = digest;
      options.log(`a2a-ratelimit: reloaded ${options.file}: ${detail}`);
      return { kind: 'applied', detail };
    } catch (error) {
      const reason = oneLine((error as Error).message ?? String(error));
      // A bad file is remembered too: one line per bad file, not one per change event an editor
      // makes (a signal always reloads and says it again). A transient failure is not.
      if (options.isTransient?.(error) !== true) lastDigest = digest;
      options.log(`a2a-ratelimit: kept the running policies: ${reason}`);
      return { kind: 'refused', reason };
    }
  };

  const reload = (fromWatch = false): Promise<ReloadOutcome> => {
    if (running !== undefined) {
      again = true;
      return running;
    }
    const run = (async () => {
      let outcome = await once(fromWatch);
      while (again && !closed) {
        again = false;
        outcome = await once(true);
      }
      return outcome;
    })().finally(() => {
      running = undefined;
    });
    running = run;
    return run;
  };

  const onSignal = (): void => {
    void reload(false);
  };
  process.on(signal, onSignal);

  let watcher: FSWatcher | undefined;
  if (options.watchFile ?? true) {
    // Any event in the folder, not only one naming the file: a Kubernetes ConfigMap (or any
    // symlinked config) changes by renaming another entry. The digest tells a change from noise.
    watcher = watch(dirname(file), { persistent: false }, () => {
      clearTimeout(settleTimer);
      settleTimer = setTimeout(() => void reload(true), settleMs);
    });
    watcher.on('error', (error) =>
      options.log(`a2a-ratelimit: stopped watching ${options.file}: ${error.message}`),
    );
  }
  // The running set came from this file: a change event that leaves it as it was is no reload.
  void digestOf().then((d) => {
    lastDigest ??= d;
  });

  return {
    reload: () => reload(false),
    close: () => {
      closed = true;
      process.off(signal, onSignal);
      clearTimeout(settleTimer);
      watcher?.close();
    },
  };
}

/** An error message on one line (a zod or YAML message may span several). */
function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
