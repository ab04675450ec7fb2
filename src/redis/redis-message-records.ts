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
import { messageKey } from './redis-keys.js';
import type { RedisRooms } from './redis-rooms.js';
import { readRememberReply, UNAVAILABLE_RECORD } from './script-replies.js';
import { isStoreTimeoutError } from './store-timeout-error.js';

/**
 * `Store.rememberMessage` on Redis. Failed, late, or degraded between probes: `unavailable`.
 * After a late `pending` write, the owner's pending record is dropped again right behind it (same
 * connection, so Redis runs the two in order): a decision that gave up leaves nothing pending.
 * While degraded, one call per retry interval probes Redis.
 *
 * @internal
 */
export async function rememberMessage(
  rooms: RedisRooms,
  caller: string,
  messageId: string,
  ttlMs: number,
  pending?: PendingMessageOptions,
): Promise<MessageRecord> {
  checkMessageTtlMs(ttlMs);
  if (pending !== undefined) checkMessageTtlMs(pending.pendingTtlMs);
  const { runner, policies, failure } = rooms;
  const degraded = failure.mode !== 'redis';
  const probe = degraded && failure.takeProbe();
  if (degraded && !probe) return UNAVAILABLE_RECORD;
  try {
    const reply = await runner.timed(
      policies.script,
      [messageKey(runner.prefix, caller, messageId)],
      [
        SCRIPT_MODES.remember,
        runner.now(),
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
      void forgetPendingMessage(rooms, caller, messageId, pending.owner, false).catch(() => {});
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
  rooms: RedisRooms,
  records: readonly { readonly caller: string; readonly messageId: string }[],
  owner: string,
  pendingTtlMs: number,
): Promise<boolean[]> {
  checkMessageTtlMs(pendingTtlMs);
  const { runner, policies } = rooms;
  return Promise.all(
    records.map(async (r) => {
      const reply = await runner.timed(
        policies.script,
        [messageKey(runner.prefix, r.caller, r.messageId)],
        [SCRIPT_MODES.renewPending, runner.now(), String(pendingTtlMs), owner],
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
  rooms: RedisRooms,
  caller: string,
  messageId: string,
  owner: string,
  timed: boolean,
): Promise<void> {
  const { runner, policies } = rooms;
  const keys = [messageKey(runner.prefix, caller, messageId)];
  const args = [SCRIPT_MODES.forgetPending, runner.now(), owner];
  if (timed) await runner.timed(policies.script, keys, args);
  else await runner.run(policies.script, keys, args);
}

/**
 * `Store.recordMessageTask` on Redis. Tried while degraded too (the limiter writes outcomes again
 * until one is taken).
 *
 * @internal
 */
export async function recordMessageTask(
  rooms: RedisRooms,
  caller: string,
  messageId: string,
  taskId: string,
  ttlMs: number,
): Promise<void> {
  checkMessageTtlMs(ttlMs);
  const { runner, policies, failure } = rooms;
  try {
    await runner.timed(
      policies.script,
      [messageKey(runner.prefix, caller, messageId)],
      [SCRIPT_MODES.recordTask, runner.now(), String(ttlMs), taskId],
    );
  } catch (error) {
    failure.countError(error);
    throw error;
  }
}
