/**
 * @module script-runner
 * `ScriptRunner`: every call a `RedisStore` makes to Redis (`EVALSHA`, with the one `NOSCRIPT`
 * fallback).
 */

import type { Clock } from '../core/clock.js';
import type { DeadlineTimer } from './deadline-timer.js';
import type { DecisionScript } from './decision-script.js';
import type { RedisLike } from './redis-like.js';

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * What a runner is built from.
 *
 * @internal
 */
export interface ScriptRunnerOptions {
  readonly client: RedisLike;
  /** The key prefix. */
  readonly prefix: string;
  /** The store's deadlines (`timeoutMs`). */
  readonly deadlines: DeadlineTimer;
  /** The store's clock (undefined: Redis `TIME`). */
  readonly clock: Clock | undefined;
}

/**
 * A store's calls to Redis. It holds no script: each call names the one it runs (the policy set's
 * current script, or the policy-set script), so a call keeps the script it started with. On a
 * `NOSCRIPT` reply (the script cache is per node, emptied by restarts and `SCRIPT FLUSH`) the same
 * call is sent once more as `EVAL`, which caches it again: the one place that fallback is written.
 *
 * @internal
 */
export class ScriptRunner {
  readonly client: RedisLike;
  readonly prefix: string;
  readonly deadlines: DeadlineTimer;
  /** NOSCRIPT replies answered by re-sending the script. */
  scriptLoads = 0;
  private readonly clock: Clock | undefined;

  constructor(options: ScriptRunnerOptions) {
    this.client = options.client;
    this.prefix = options.prefix;
    this.deadlines = options.deadlines;
    this.clock = options.clock;
  }

  /** The time argument of a call (`''`: Redis `TIME`). */
  now(): string {
    return this.clock === undefined ? '' : String(this.clock.nowMs());
  }

  /** One call of `script`: `keys`, then `args`, without a deadline. */
  run(script: DecisionScript, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return new Promise((resolve, reject) =>
      this.send(script, keys.length, [...keys, ...args], resolve, reject),
    );
  }

  /** {@link ScriptRunner.run} bounded by the store's `timeoutMs`. */
  timed(
    script: DecisionScript,
    keys: readonly string[],
    args: readonly string[],
  ): Promise<unknown> {
    return this.deadlines.withTimeout(this.run(script, keys, args));
  }

  /**
   * One call with `numKeys` keys at the front of `keysAndArgs`, with callbacks (the hot path: no
   * promise of its own). The `NOSCRIPT` fallback is here and only here.
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
