/**
 * @module relay-events
 * What the task-event relay sends through Redis Streams and reads back, and the owner's bus that
 * appends it.
 */

import { TERMINAL_TASK_STATES } from '../core/task-events.js';

/**
 * One entry read from a task's stream: an agent event, or the end of the flow.
 */
export type RelayEntry =
  | { readonly kind: 'event'; readonly event: RelayedEvent }
  | { readonly kind: 'finished' };

/**
 * An agent event as it travels (the SDK's `AgentExecutionEvent`).
 */
export interface RelayedEvent {
  readonly kind: string;
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's event payloads
  readonly data: any;
}

/**
 * Whether Redis stream id `a` comes after `b` (`<ms>-<seq>`).
 *
 * @example
 * ```ts
 * idAfter('1700000000000-2', '1700000000000-1'); // true
 * ```
 */
export function idAfter(a: string, b: string): boolean {
  const [am = '0', as = '0'] = a.split('-');
  const [bm = '0', bs = '0'] = b.split('-');
  const dm = Number(am) - Number(bm);
  return dm !== 0 ? dm > 0 : Number(as) > Number(bs);
}

/**
 * JSON with byte arrays kept (file parts carry raw bytes); {@link decode} reads it back.
 *
 * @example
 * ```ts
 * decode(encode({ raw: new Uint8Array([1, 2]) })); // { raw: Uint8Array [1, 2] }
 * ```
 */
export function encode(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v instanceof Uint8Array ? { $bytes: Buffer.from(v).toString('base64') } : v,
  );
}

/**
 * Reads what {@link encode} wrote.
 */
export function decode(text: string): unknown {
  return JSON.parse(text, (_key, v: unknown) => {
    if (v !== null && typeof v === 'object' && '$bytes' in v && Object.keys(v).length === 1) {
      return new Uint8Array(Buffer.from(String((v as { $bytes: unknown }).$bytes), 'base64'));
    }
    return v;
  });
}

/**
 * Whether an event puts its task in a terminal state.
 *
 * @example
 * ```ts
 * isTerminal({ kind: 'statusUpdate', data: { status: { state: 3 } } }); // true (COMPLETED)
 * ```
 */
export function isTerminal(event: RelayedEvent): boolean {
  if (event.kind === 'message') return false;
  const state = (event.data as { status?: { state?: number } } | undefined)?.status?.state;
  return state !== undefined && TERMINAL_TASK_STATES.has(state);
}

/**
 * The SDK's `resubscribe` mapping of an event to a `StreamResponse` for task `taskId` (undefined
 * for events of other tasks and for messages).
 *
 * @example
 * ```ts
 * toStreamResponse({ kind: 'task', data: { id: 't' } }, 't'); // { payload: { $case: 'task', value: … } }
 * ```
 */
export function toStreamResponse(event: RelayedEvent, taskId: string): unknown {
  const data = event.data as { taskId?: string; id?: string };
  switch (event.kind) {
    case 'statusUpdate':
      return data.taskId === taskId
        ? { payload: { $case: 'statusUpdate', value: data } }
        : undefined;
    case 'artifactUpdate':
      return data.taskId === taskId
        ? { payload: { $case: 'artifactUpdate', value: data } }
        : undefined;
    case 'task':
      return data.id === taskId ? { payload: { $case: 'task', value: data } } : undefined;
    default:
      return undefined;
  }
}
