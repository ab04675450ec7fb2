/**
 * @module script-runner
 * `ScriptRunner`: the decision script run by `EVALSHA`, with the one `NOSCRIPT` fallback.
 */

import type { DecisionScript } from './decision-script.js';
import type { RedisLike } from './redis-like.js';

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * The client and the script it runs (swapped when the policy set changes): `EVALSHA`, and on a
 * `NOSCRIPT` reply (the script cache is per node, emptied by restarts and `SCRIPT FLUSH`) the same
 * call once more as `EVAL`, which caches it again. The one place that fallback is written.
 *
 * @internal
 */
export class ScriptRunner {
  readonly client: RedisLike;
  /** The script calls run now; a call keeps the script it started with. */
  script: DecisionScript;
  /** NOSCRIPT replies answered by re-sending the script. */
  scriptLoads = 0;

  constructor(client: RedisLike, script: DecisionScript) {
    this.client = client;
    this.script = script;
  }

  /** One script call: `keys`, then `args`. */
  run(keys: readonly string[], args: readonly string[], script = this.script): Promise<unknown> {
    return this.call(script, keys.length, [...keys, ...args]);
  }

  /** One script call with `numKeys` keys at the front of `keysAndArgs`. */
  call(script: DecisionScript, numKeys: number, keysAndArgs: readonly string[]): Promise<unknown> {
    return new Promise((resolve, reject) =>
      this.send(script, numKeys, keysAndArgs, resolve, reject),
    );
  }

  /**
   * {@link ScriptRunner.call} with callbacks (the hot path: no promise of its own). The `NOSCRIPT`
   * fallback is here and only here.
   */
  send(
    script: DecisionScript,
    numKeys: number,
    keysAndArgs: readonly string[],
    onReply: (reply: unknown) => void,
    onError: (error: unknown) => void,
  ): void {
    this.client.evalsha(script.sha1, numKeys, ...keysAndArgs).then(onReply, (error: unknown) => {
      if (!isNoScript(error)) {
        onError(error);
        return;
      }
      this.scriptLoads++;
      this.client.eval(script.text, numKeys, ...keysAndArgs).then(onReply, onError);
    });
  }
}

/**
 * What the store's smaller rooms (leases, deduplication records) call Redis through.
 *
 * @internal
 */
export interface RedisCallHost {
  /** The key prefix. */
  readonly prefix: string;
  /** One script call bounded by the store's `timeoutMs`. */
  timed(keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /** One script call without a deadline. */
  untimed(keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /** The time argument of a call (`''`: Redis `TIME`). */
  now(): string;
}
