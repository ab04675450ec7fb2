/**
 * @module read-body-prefix
 * How the retrying fetch reads a response body to look for retry hints: through a clone (the SDK
 * still gets the whole, untouched response), at most a fixed number of bytes, within a time limit,
 * then the clone is cancelled. So a huge, endless or stalled error body neither hangs the client
 * nor is buffered whole.
 */

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
  let reader: ReadableStreamDefaultReader<Uint8Array>;
  try {
    const body = response.clone().body;
    if (body === null) return '';
    reader = body.getReader();
  } catch {
    return ''; // already read, or locked
  }
  const decoder = new TextDecoder();
  let text = '';
  let received = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
    timer.unref?.();
  });
  try {
    while (received < limitBytes) {
      const next = await Promise.race([reader.read(), timedOut]);
      if (next === 'timeout' || next.done) break;
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
  return text;
}
