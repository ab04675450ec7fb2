/**
 * @module message-answer
 * The Message a first copy was answered with, as its dedup record keeps it (with its SDK call
 * scope). Structural: no SDK import.
 */

/** The prefix of a record value that is a stored Message answer (never a task id's). */
export const ANSWER_MARK = '\u0000answer:';

/**
 * The scope the SDK answered a first copy in: its tenant and its user's name, as the SDK's
 * `ServerCallContext` held them. A copy is answered with the Message only in the same scope (the
 * SDK scopes tasks the same way: a copy in another scope could not read the first copy's task).
 */
export interface AnswerScope {
  readonly tenant: string;
  readonly owner: string;
}

/**
 * A first copy's Message answer: the SDK's `Message` as published on the event bus (an object of
 * the SDK's generated type: cast it to `Message` from `@a2a-js/sdk`), and its scope.
 *
 * @example
 * ```ts
 * const answer: MessageAnswer = { message: event.data, tenant: '', owner: 'alice' };
 * ```
 */
export interface MessageAnswer extends AnswerScope {
  readonly message: unknown;
}

/** The stored form: `t` tenant, `o` owner, `m` the message (raw parts as base64, `r` marks them). */
interface StoredForm {
  readonly t: string;
  readonly o: string;
  readonly m: Record<string, unknown>;
  /** Indexes of parts whose raw bytes were written as base64. */
  readonly r?: readonly number[];
}

/** A part's content as the SDK's generated type holds it. */
interface ContentLike {
  readonly $case?: unknown;
  readonly value?: unknown;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A lower bound of the bytes `parts` take in the stored form (text: at least one byte per UTF-16
 * unit; raw: its base64), so an answer far over the bound is refused without encoding it.
 */
function partsMinimumBytes(parts: readonly unknown[]): number {
  let bytes = 0;
  for (const part of parts) {
    const content = isRecord(part) ? (part.content as ContentLike | undefined) : undefined;
    const value = content?.value;
    if (typeof value === 'string') bytes += value.length;
    else if (value instanceof Uint8Array) bytes += Math.ceil(value.byteLength / 3) * 4;
  }
  return bytes;
}

/**
 * The record value of a Message answer: {@link ANSWER_MARK} and its JSON, or undefined when it
 * cannot be written (not an object, a BigInt) or is surely larger than `maxBytes` (checked before
 * encoding). Raw parts keep their bytes (as base64); a value in `metadata` or a `data` part that
 * is not JSON (a `Date`, `NaN`) comes back as JSON writes it — as the JSON bindings wrote it to
 * the first copy. Its size is the string's UTF-8 length ({@link answerBytes}).
 *
 * @example
 * ```ts
 * encodeMessageAnswer({ message: event.data, tenant: '', owner: 'alice' }); // '\u0000answer:{…}'
 * ```
 */
export function encodeMessageAnswer(
  answer: MessageAnswer,
  maxBytes = Number.POSITIVE_INFINITY,
): string | undefined {
  const message = answer.message;
  if (!isRecord(message)) return undefined;
  const parts = message.parts;
  if (Array.isArray(parts) && partsMinimumBytes(parts) > maxBytes) return undefined;
  let copy: Record<string, unknown> = message;
  const raw: number[] = [];
  if (Array.isArray(parts)) {
    const encoded = parts.map((part: unknown, i) => {
      const content = isRecord(part) ? (part.content as ContentLike | undefined) : undefined;
      if (content?.$case !== 'raw' || !(content.value instanceof Uint8Array)) return part;
      raw.push(i);
      const bytes = content.value;
      const base64 = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString(
        'base64',
      );
      return { ...(part as Record<string, unknown>), content: { ...content, value: base64 } };
    });
    if (raw.length > 0) copy = { ...message, parts: encoded };
  }
  const stored: StoredForm = {
    t: answer.tenant,
    o: answer.owner,
    m: copy,
    ...(raw.length > 0 ? { r: raw } : {}),
  };
  try {
    return ANSWER_MARK + JSON.stringify(stored);
  } catch {
    return undefined;
  }
}

/**
 * Whether a record value is a stored Message answer.
 *
 * @example
 * ```ts
 * isMessageAnswer('task-9'); // false
 * ```
 */
export function isMessageAnswer(value: string): boolean {
  return value.startsWith(ANSWER_MARK);
}

/**
 * The size a stored answer counts for: its UTF-8 bytes.
 *
 * @example
 * ```ts
 * answerBytes(encodeMessageAnswer(answer) ?? ''); // e.g. 212
 * ```
 */
export function answerBytes(value: string): number {
  return Buffer.byteLength(value, 'utf8');
}

/**
 * The Message answer a record value holds, or undefined when it is none (or not readable: a
 * record written by a newer version, a damaged value). Raw parts get their bytes back as a
 * `Buffer`, as the SDK's own decoder makes them.
 *
 * @example
 * ```ts
 * const answer = decodeMessageAnswer(value);
 * if (answer !== undefined) send({ payload: { $case: 'message', value: answer.message as Message } });
 * ```
 */
export function decodeMessageAnswer(value: string): MessageAnswer | undefined {
  if (!isMessageAnswer(value)) return undefined;
  let stored: unknown;
  try {
    stored = JSON.parse(value.slice(ANSWER_MARK.length));
  } catch {
    return undefined;
  }
  if (!isRecord(stored)) return undefined;
  const { t, o, m, r } = stored as Partial<Record<keyof StoredForm, unknown>>;
  if (typeof t !== 'string' || typeof o !== 'string' || !isRecord(m)) return undefined;
  if (r !== undefined) {
    if (!Array.isArray(r) || !Array.isArray(m.parts)) return undefined;
    const parts = m.parts as unknown[];
    for (const i of r) {
      const part = typeof i === 'number' ? parts[i] : undefined;
      const content = isRecord(part) ? (part.content as ContentLike | undefined) : undefined;
      if (!isRecord(content) || typeof content.value !== 'string') return undefined;
      (content as { value: unknown }).value = Buffer.from(content.value, 'base64');
    }
  }
  return { tenant: t, owner: o, message: m };
}
