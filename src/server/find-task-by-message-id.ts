/**
 * @module find-task-by-message-id
 * `findTaskByMessageId`: the `dedup.findTask` lookup over the SDK's own `TaskStore`. Structural
 * types only: no SDK import.
 */

import { positiveOption } from '../store/positive-option.js';
import type { AdmissionRequest } from './limiter-options.js';

/** A task as the SDK's `TaskStore.list` returns it, reduced to what the lookup reads. */
export interface TaskWithHistoryLike {
  readonly id: string;
  readonly history?: readonly { readonly messageId?: string; readonly role?: unknown }[];
}

/**
 * The SDK's `TaskStore`, structurally (`DatabaseTaskStore`, `InMemoryTaskStore` fit).
 */
export interface TaskListingStore<C> {
  list(
    params: {
      tenant: string;
      contextId: string;
      status: number;
      pageSize?: number | undefined;
      pageToken: string;
      historyLength?: number | undefined;
      statusTimestampAfter: string | undefined;
      includeArtifacts?: boolean | undefined;
    },
    context: C,
  ): Promise<{ readonly tasks: readonly TaskWithHistoryLike[]; readonly nextPageToken: string }>;
}

/**
 * Options of {@link findTaskByMessageId}.
 */
export interface FindTaskOptions<C> {
  /** The call context the SDK would build for this caller (its user decides the task scope). */
  readonly contextOf: (request: AdmissionRequest) => C;
  /** Tasks read per page; default 100 (the SDK's maximum). */
  readonly pageSize?: number;
  /** Pages read at most (newest first); default 10. */
  readonly maxPages?: number;
}

/**
 * Builds a `dedup.findTask` for `createLimiter` from the SDK's task store: it lists the caller's
 * most recently updated tasks and finds the one whose history holds the message. Asked only when
 * the dedup record cannot answer (orphaned, or the store is down): a few reads, never a second run.
 *
 * @example
 * ```ts
 * const taskStore = new DatabaseTaskStore(db);
 * const limiter = createLimiter({ store: redisStore, dedup: {
 *   findTask: findTaskByMessageId(taskStore, { contextOf: (r) => new ServerCallContext({ user: bearerUser(r.caller) }) }),
 * } });
 * ```
 */
export function findTaskByMessageId<C>(
  taskStore: TaskListingStore<C>,
  options: FindTaskOptions<C>,
): (request: AdmissionRequest) => Promise<string | undefined | null> {
  const pageSize = options.pageSize ?? 100;
  const maxPages = positiveOption('findTaskByMessageId: maxPages', options.maxPages, 10, {
    integer: true,
  });
  if (!Number.isSafeInteger(pageSize) || pageSize < 1 || pageSize > 100) {
    throw new RangeError(`findTaskByMessageId: pageSize must be 1…100, got ${pageSize}`);
  }
  return async (request) => {
    const messageId = request.messageId;
    if (messageId === undefined) return undefined;
    const context = options.contextOf(request);
    let pageToken = '';
    for (let page = 0; page < maxPages; page++) {
      const response = await taskStore.list(
        {
          tenant: request.tenant ?? '',
          contextId: '',
          status: 0,
          pageSize,
          pageToken,
          historyLength: undefined,
          statusTimestampAfter: undefined,
          includeArtifacts: false,
        },
        context,
      );
      for (const task of response.tasks) {
        if (task.history?.some((m) => m.messageId === messageId)) return task.id;
      }
      if (response.nextPageToken === '') return undefined;
      pageToken = response.nextPageToken;
    }
    // More tasks than it reads: it cannot say there is none, so it says it does not know (a
    // copy is then told to come back rather than run what may have run).
    return null;
  };
}
