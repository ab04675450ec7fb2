/**
 * @module read-body-prefix
 * Reading a bounded prefix of a response body (through a clone, size- and time-limited) for hints
 * or a card, and capping a body for its reader.
 */

import { BrandedError } from '../core/branded-error.js';

/**
 * Most bytes read from a body for hints: 64 KiB (our rejections are under 2 KiB).
 *
 * @example
 * ```ts
 * await readBodyPrefix(response, ERROR_BODY_LIMIT_BYTES);
 * ```
 */
export const ERROR_BODY_LIMIT_BYTES = 64 * 1024;

/**
 * Longest wait for the body, ms: past it, what arrived is used (the headers' hints still count).
 *
 * @example
 * ```ts
 * await readBodyPrefix(response, ERROR_BODY_LIMIT_BYTES, ERROR_BODY_TIMEOUT_MS);
 * ```
 */
export const ERROR_BODY_TIMEOUT_MS = 10_000;

/**
 * The first `limitBytes` of a response's body as UTF-8 text (a multi-byte character cut at the
 * limit is dropped), read from a clone within `timeoutMs`; then the clone's stream is cancelled.
 * Never throws: `''` when there is no body or it fails before anything arrived.
 *
 * @example
 * ```ts
 * const text = await readBodyPrefix(response); // ≤ 64 KiB, ≤ 10 s; `response` is left unread
 * ```
 */
export async function readBodyPrefix(
  response: Response,
  limitBytes: number = ERROR_BODY_LIMIT_BYTES,
  timeoutMs: number = ERROR_BODY_TIMEOUT_MS,
): Promise<string> {
  return (await readClone(response, limitBytes, timeoutMs)).text;
}

/**
 * The whole body of a response as UTF-8 text, read from a clone, when it ends within
 * `limitBytes` bytes and `timeoutMs`; `undefined` when it is longer (reading stops at the cap,
 * whatever `Content-Length` said or did not say, and the clone is cancelled), stalls past
 * `timeoutMs`, fails, or there is none. Never throws; `response` is left unread.
 *
 * @example
 * ```ts
 * const card = await readWholeBody(response, 1_048_576); // undefined past 1 MiB
 * ```
 */
export async function readWholeBody(
  response: Response,
  limitBytes: number,
  timeoutMs: number = ERROR_BODY_TIMEOUT_MS,
): Promise<string | undefined> {
  const read = await readClone(response, limitBytes + 1, timeoutMs);
  return read.complete && read.bytes <= limitBytes ? read.text : undefined;
}

/** What was read of a clone: its text, the bytes counted, and whether the body ended cleanly. */
interface CloneRead {
  readonly text: string;
  readonly bytes: number;
  readonly complete: boolean;
}

async function readClone(
  response: Response,
  limitBytes: number,
  timeoutMs: number,
): Promise<CloneRead> {
  let reader: ReadableStreamDefaultReader<Uint8Array>;
  try {
    const body = response.clone().body;
    if (body === null) return { text: '', bytes: 0, complete: true };
    reader = body.getReader();
  } catch {
    return { text: '', bytes: 0, complete: false }; // already read, or locked
  }
  const decoder = new TextDecoder();
  let text = '';
  let received = 0;
  let complete = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
    timer.unref?.();
  });
  try {
    while (received < limitBytes) {
      const next = await Promise.race([reader.read(), timedOut]);
      if (next === 'timeout') break;
      if (next.done) {
        complete = true;
        break;
      }
      const chunk = next.value.subarray(0, limitBytes - received);
      received += chunk.length;
      text += decoder.decode(chunk, { stream: true });
    }
  } catch {
    // The body failed midway: what arrived is what there is.
  } finally {
    clearTimeout(timer);
    reader.cancel().catch(() => undefined);
  }
  return { text, bytes: received, complete };
}

/**
 * Stable `code` strings of the body reader's errors.
 *
 * @example
 * ```ts
 * if (e.code === READ_BODY_ERROR_CODES.tooLarge) console.log('body over the cap');
 * ```
 */
export const READ_BODY_ERROR_CODES = { tooLarge: 'ERR_A2A_BODY_TOO_LARGE' } as const;

/**
 * Thrown (as the body's stream error) by a body that {@link capResponseBody} cut at its cap.
 *
 * @example
 * ```ts
 * await capped.text().catch((e) => e instanceof BodyTooLargeError); // true past the cap
 * ```
 */
export class BodyTooLargeError extends BrandedError<typeof READ_BODY_ERROR_CODES.tooLarge> {
  declare readonly name: 'BodyTooLargeError';
  /** Brand set by the base class. */
  declare readonly isBodyTooLargeError: true;
  /** The cap that was exceeded, bytes. */
  readonly limitBytes: number;

  constructor(what: string, limitBytes: number) {
    super(
      'BodyTooLargeError',
      READ_BODY_ERROR_CODES.tooLarge,
      `${what} is larger than ${limitBytes} bytes: not read further`,
    );
    this.limitBytes = limitBytes;
  }
}

/**
 * The same response with a body that fails with {@link BodyTooLargeError} once more than
 * `limitBytes` arrived (counted as they arrive, whatever the framing), cancelling the source
 * there: whoever reads it never holds more than the cap. A body within the cap is unchanged.
 *
 * @example
 * ```ts
 * const card = capResponseBody(await fetch(cardUrl), 1_048_576, 'agent card');
 * ```
 */
export function capResponseBody(response: Response, limitBytes: number, what: string): Response {
  const source = response.body;
  if (source === null) return response;
  const reader = source.getReader();
  let received = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        controller.close();
        return;
      }
      received += value.byteLength;
      if (received > limitBytes) {
        controller.error(new BodyTooLargeError(what, limitBytes));
        await reader.cancel().catch(() => undefined);
        return;
      }
      controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
