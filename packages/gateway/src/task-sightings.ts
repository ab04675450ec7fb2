/**
 * @module task-sightings
 * What a passing answer says about tasks: the task (id and state) or the Message a SendMessage
 * result, a GetTask / CancelTask answer or a stream event carries, in the A2A 1.0 JSON shapes
 * (`{task}`, `{message}`, `{statusUpdate}`, a bare Task) and the v0.3 ones (`kind`), with states
 * as 1.0 enum names, v0.3 names or numbers; and an SSE reader that hands over each event's data as
 * it completes. Pure.
 */

/** A task seen in an answer, or a Message answer. */
export type TaskSighting =
  | {
      readonly kind: 'task';
      readonly taskId: string;
      readonly state: number | undefined;
      /**
       * The Task or status update object itself (where the agent's usage report is read);
       * undefined where the answer was not decoded as JSON (gRPC, read only for id and state).
       */
      readonly object?: Record<string, unknown> | undefined;
    }
  | { readonly kind: 'message'; readonly message: Record<string, unknown> };

const STATE_NUMBERS: Readonly<Record<string, number>> = {
  TASK_STATE_UNSPECIFIED: 0,
  TASK_STATE_SUBMITTED: 1,
  TASK_STATE_WORKING: 2,
  TASK_STATE_COMPLETED: 3,
  TASK_STATE_FAILED: 4,
  TASK_STATE_CANCELED: 5,
  TASK_STATE_CANCELLED: 5,
  TASK_STATE_INPUT_REQUIRED: 6,
  TASK_STATE_REJECTED: 7,
  TASK_STATE_AUTH_REQUIRED: 8,
  submitted: 1,
  working: 2,
  completed: 3,
  failed: 4,
  canceled: 5,
  cancelled: 5,
  'input-required': 6,
  rejected: 7,
  'auth-required': 8,
};

/**
 * A task state as the A2A `TaskState` number, from a number, a 1.0 enum name or a v0.3 name.
 *
 * @example
 * ```ts
 * taskStateNumber('TASK_STATE_COMPLETED'); // 3
 * taskStateNumber('input-required');       // 6
 * ```
 */
export function taskStateNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) ? value : undefined;
  if (typeof value !== 'string') return undefined;
  return Object.hasOwn(STATE_NUMBERS, value) ? STATE_NUMBERS[value] : undefined;
}

function objectOr(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function taskOf(task: Record<string, unknown>): TaskSighting | undefined {
  if (typeof task.id !== 'string' || task.id === '') return undefined;
  return {
    kind: 'task',
    taskId: task.id,
    state: taskStateNumber(objectOr(task.status)?.state),
    object: task,
  };
}

/**
 * What an A2A result object (a SendMessage result, a Task, a stream event) says.
 *
 * @example
 * ```ts
 * sightingOf({ task: { id: 't', status: { state: 'TASK_STATE_WORKING' } } }); // { kind: 'task', taskId: 't', state: 2, object: { id: 't', … } }
 * ```
 */
export function sightingOf(result: unknown): TaskSighting | undefined {
  const r = objectOr(result);
  if (r === undefined) return undefined;
  const task = objectOr(r.task);
  if (task !== undefined) return taskOf(task);
  const message = objectOr(r.message);
  if (message !== undefined) return { kind: 'message', message };
  const update = objectOr(r.statusUpdate) ?? (r.kind === 'status-update' ? r : undefined);
  if (update !== undefined) {
    if (typeof update.taskId !== 'string') return undefined;
    return {
      kind: 'task',
      taskId: update.taskId,
      state: taskStateNumber(objectOr(update.status)?.state),
      object: update,
    };
  }
  if (r.kind === 'message') return { kind: 'message', message: r };
  if (r.kind === 'task' || objectOr(r.status) !== undefined) return taskOf(r);
  return undefined;
}

/**
 * What an answer body says: a JSON-RPC response's `result`, or a REST body.
 *
 * @example
 * ```ts
 * sightingOfAnswer('jsonrpc', { jsonrpc: '2.0', id: 1, result: { task } });
 * ```
 */
export function sightingOfAnswer(
  binding: 'jsonrpc' | 'rest',
  body: unknown,
): TaskSighting | undefined {
  if (binding === 'jsonrpc') return sightingOf(objectOr(body)?.result);
  return sightingOf(body);
}

/**
 * Splits an SSE byte stream into events as it arrives (CRLF, LF or CR line ends) and hands each
 * event's joined `data` to `onData`; an event longer than `maxEventBytes` is skipped.
 *
 * @example
 * ```ts
 * const reader = new SseDataReader((data) => console.log(data), 1 << 20);
 * reader.push(chunk);
 * ```
 */
export class SseDataReader {
  private pending = '';
  private data: string[] = [];
  private skipping = false;
  /** The last chunk ended in a CR (a LF opening the next one belongs to it). */
  private afterCr = false;
  private readonly decoder = new TextDecoder();

  constructor(
    private readonly onData: (data: string) => void,
    private readonly maxEventBytes: number,
  ) {}

  /** Reads a chunk. */
  push(chunk: Uint8Array): void {
    let text = this.pending + this.decoder.decode(chunk, { stream: true });
    // The LF of a CRLF split across chunks: its CR already ended the line.
    if (this.afterCr && this.pending === '' && text.startsWith('\n')) text = text.slice(1);
    this.afterCr = false;
    let start = 0;
    for (;;) {
      const lf = text.indexOf('\n', start);
      const cr = text.indexOf('\r', start);
      const end = lf < 0 ? cr : cr < 0 ? lf : Math.min(lf, cr);
      if (end < 0) break;
      this.line(text.slice(start, end));
      if (text[end] === '\r' && end === text.length - 1) this.afterCr = true;
      start = end + (text[end] === '\r' && text[end + 1] === '\n' ? 2 : 1);
    }
    this.pending = text.slice(start);
    if (this.pending.length > this.maxEventBytes) {
      this.pending = '';
      this.skipping = true;
    }
  }

  private line(line: string): void {
    if (line === '') {
      if (!this.skipping && this.data.length > 0) this.onData(this.data.join('\n'));
      this.data = [];
      this.skipping = false;
      return;
    }
    if (this.skipping || !line.startsWith('data')) return;
    if (line.length > 4 && line[4] !== ':') return;
    const value = line.slice(5);
    this.data.push(value.startsWith(' ') ? value.slice(1) : value);
    if (this.data.reduce((n, d) => n + d.length, 0) > this.maxEventBytes) {
      this.data = [];
      this.skipping = true;
    }
  }
}
