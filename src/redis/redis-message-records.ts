/**
 * @module redis-message-records
 * The deduplication records of a `RedisStore`: pending, orphaned, taken over, and the task a
 * message started.
 */

import {
  checkMessageTtlMs,
  type MessageRecord,
  type PendingMessageOptions,
} from '../store/message-records.js';
import { SCRIPT_MODES } from './decision-script.js';
import type { FailureMode } from './failure-mode.js';
import { messageKey } from './redis-keys.js';
import { readRememberReply, UNAVAILABLE_RECORD } from './script-replies.js';
import type { RedisCallHost } from './script-runner.js';
import { isStoreTimeoutError } from './store-timeout-error.js';

/**
 * What the records need from their store.
 *
 * @internal
 */
export interface MessageRecordHost extends RedisCallHost {
  readonly failure: FailureMode;
}

/**
 * `Store.rememberMessage` on Redis. Failed, late, or degraded between probes: `unavailable`.
 * After a late `pending` write, the owner's pending record is dropped again right behind it (same
 * connection, so Redis runs the two in order): a decision that gave up leaves nothing pending.
 * While degraded, one call per retry interval probes Redis.
 *
 * @internal
 */
export async function rememberMessage(
  host: MessageRecordHost,
  caller: string,
  messageId: string,
  ttlMs: number,
  pending?: PendingMessageOptions,
): Promise<MessageRecord> {
  checkMessageTtlMs(ttlMs);
  if (pending !== undefined) checkMessageTtlMs(pending.pendingTtlMs);
  const { failure } = host;
  const degraded = failure.mode !== 'redis';
  const probe = degraded && failure.takeProbe();
  if (degraded && !probe) return UNAVAILABLE_RECORD;
  try {
    const reply = await host.timed(
      [messageKey(host.prefix, caller, messageId)],
      [
        SCRIPT_MODES.remember,
        host.now(),
        String(ttlMs),
        pending === undefined ? '' : String(pending.pendingTtlMs),
        pending?.owner ?? '',
        pending?.takeOver === true ? '1' : '',
      ],
    );
    const record = readRememberReply(reply);
    if (probe) failure.recovered();
    return record;
  } catch (error) {
    if (probe) failure.probeFailed();
    failure.countError(error);
    if (pending !== undefined && isStoreTimeoutError(error)) {
      void forgetPendingMessage(host, caller, messageId, pending.owner, false).catch(() => {});
    }
    return UNAVAILABLE_RECORD;
  }
}

/**
 * `Store.renewPendingMessages` on Redis. Tried while degraded too: these are background writes
 * (the background probe switches back).
 *
 * @internal
 */
export async function renewPendingMessages(
  host: RedisCallHost,
  records: readonly { readonly caller: string; readonly messageId: string }[],
  owner: string,
  pendingTtlMs: number,
): Promise<boolean[]> {
  checkMessageTtlMs(pendingTtlMs);
  return Promise.all(
    records.map(async (r) => {
      const reply = await host.timed(
        [messageKey(host.prefix, r.caller, r.messageId)],
        [SCRIPT_MODES.renewPending, host.now(), String(pendingTtlMs), owner],
      );
      return reply === 1;
    }),
  );
}

/**
 * `Store.forgetPendingMessage` on Redis; `timed` false: no deadline (a clean-up sent behind a
 * call that timed out).
 *
 * @internal
 */
export async function forgetPendingMessage(
  host: RedisCallHost,
  caller: string,
  messageId: string,
  owner: string,
  timed: boolean,
): Promise<void> {
  const keys = [messageKey(host.prefix, caller, messageId)];
  const args = [SCRIPT_MODES.forgetPending, host.now(), owner];
  await (timed ? host.timed(keys, args) : host.untimed(keys, args));
}

/**
 * `Store.recordMessageTask` on Redis. Tried while degraded too (the limiter writes outcomes again
 * until one is taken).
 *
 * @internal
 */
export async function recordMessageTask(
  host: MessageRecordHost,
  caller: string,
  messageId: string,
  taskId: string,
  ttlMs: number,
): Promise<void> {
  checkMessageTtlMs(ttlMs);
  try {
    await host.timed(
      [messageKey(host.prefix, caller, messageId)],
      [SCRIPT_MODES.recordTask, host.now(), String(ttlMs), taskId],
    );
  } catch (error) {
    host.failure.countError(error);
    throw error;
  }
}
