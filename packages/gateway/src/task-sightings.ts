/**
 * @module task-sightings
 * What a passing answer says about tasks (A2A 1.0 and v0.3 JSON shapes), and an SSE reader. Pure.
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
 * Splits an SSE byte stream into events as it arrives (CRLF, LF or CR line ends; a leading BOM
 * ignored) and hands each event's joined `data` to `onData`; an event longer than `maxEventBytes`
 * is skipped. Works on the bytes (line ends are ASCII, never inside a UTF-8 sequence): only `data`
 * values are decoded, and nothing is held between chunks but an unfinished line.
 *
 * @example
 * ```ts
 * const reader = new SseDataReader((data) => console.log(data), 1 << 20);
 * reader.push(chunk);
 * ```
 */
export class SseDataReader {
  /** The bytes of a line the chunks so far ended inside (copies), and their count. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** The line in progress is past the bound: its bytes are dropped until it ends. */
  private dropping = false;
  private data: string[] = [];
  private dataBytes = 0;
  private skipping = false;
  private started = false;
  /** The last chunk ended in a CR (a LF opening the next one belongs to it). */
  private afterCr = false;

  constructor(
    private readonly onData: (data: string) => void,
    private readonly maxEventBytes: number,
  ) {}

  /** Reads a chunk. */
  push(chunk: Uint8Array): void {
    const bytes = Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const n = bytes.length;
    let from = 0;
    // The LF of a CRLF split across chunks: its CR already ended the line.
    if (this.afterCr && n > 0) {
      this.afterCr = false;
      if (bytes[from] === 0x0a) from++;
    }
    for (let i = from; i < n; i++) {
      const b = bytes[i];
      if (b !== 0x0a && b !== 0x0d) continue;
      if (this.dropping)
        this.dropping = false; // its event is skipped (`skipping`)
      else if (this.pendingBytes === 0) this.line(bytes, from, i);
      else {
        this.pending.push(bytes.subarray(from, i));
        const whole = Buffer.concat(this.pending, this.pendingBytes + (i - from));
        this.pending = [];
        this.pendingBytes = 0;
        this.line(whole, 0, whole.length);
      }
      if (b === 0x0d) {
        if (i + 1 === n) this.afterCr = true;
        else if (bytes[i + 1] === 0x0a) i++;
      }
      from = i + 1;
    }
    if (from < n && !this.dropping) {
      // Kept in pieces and joined once at the line's end: a long line costs linear time.
      this.pendingBytes += n - from;
      if (this.pendingBytes > this.maxEventBytes) {
        this.pending = [];
        this.pendingBytes = 0;
        this.dropping = true;
        this.skipping = true;
        this.started = true;
      } else this.pending.push(Buffer.from(bytes.subarray(from)));
    }
  }

  /** One line, `bytes[from..to)`, its end excluded. */
  private line(bytes: Buffer, at: number, to: number): void {
    let from = at;
    if (!this.started) {
      // The stream's first line: a UTF-8 BOM opening it is not part of it.
      this.started = true;
      if (to - from >= 3 && bytes[from] === 0xef && bytes[from + 1] === 0xbb) {
        if (bytes[from + 2] === 0xbf) from += 3;
      }
    }
    if (from === to) {
      if (!this.skipping && this.data.length > 0) this.onData(this.data.join('\n'));
      this.data = [];
      this.dataBytes = 0;
      this.skipping = false;
      return;
    }
    // `data`, then the line's end or `:` and the value (one leading space dropped).
    if (
      this.skipping ||
      to - from < 4 ||
      bytes[from] !== 0x64 ||
      bytes[from + 1] !== 0x61 ||
      bytes[from + 2] !== 0x74 ||
      bytes[from + 3] !== 0x61
    ) {
      return;
    }
    let start = from + 4;
    if (start < to) {
      if (bytes[start] !== 0x3a) return;
      start++;
      if (bytes[start] === 0x20 && start < to) start++;
    }
    this.data.push(bytes.toString('utf8', start, to));
    this.dataBytes += to - start;
    if (this.dataBytes > this.maxEventBytes) {
      this.data = [];
      this.dataBytes = 0;
      this.skipping = true;
    }
  }
}
