/**
 * @module probe-capped-body
 * How `probe` reads any HTTP body: streamed up to a fixed cap, the rest cancelled unread.
 */

/**
 * The most of an answer's body `probe` reads, bytes (64 KiB): a rejection's body is a few hundred
 * bytes, and a truncated success is still a success.
 */
export const PROBE_MAX_BODY_BYTES = 65_536;

/** The most of the agent card `probe` reads, bytes (1 MiB): a card with many skills still fits. */
export const PROBE_MAX_CARD_BYTES = 1_048_576;

/**
 * A body read up to a cap.
 */
export interface CappedText {
  /** The first `maxBytes` bytes as UTF-8 text (a character cut by the cap is dropped). */
  readonly text: string;
  /** Bytes kept (≤ the cap). */
  readonly bytes: number;
  /** The body went on past the cap; the rest was cancelled unread. */
  readonly truncated: boolean;
}

/**
 * Reads `response`'s body up to `maxBytes`, then cancels the stream (the connection is dropped,
 * nothing more is buffered). A body that ends within the cap is read whole.
 *
 * @example
 * ```ts
 * const { text, truncated } = await readCappedText(await fetch(url), PROBE_MAX_BODY_BYTES);
 * ```
 */
export async function readCappedText(response: Response, maxBytes: number): Promise<CappedText> {
  const body = response.body;
  if (body === null) return { text: '', bytes: 0, truncated: false };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  let truncated = false;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      const room = maxBytes - bytes;
      if (value.byteLength >= room) {
        if (room > 0) chunks.push(value.subarray(0, room));
        bytes += Math.max(0, room);
        // Exactly at the cap: more may follow, or not; only a further byte says truncated.
        truncated = value.byteLength > room || !(await reader.read()).done;
        break;
      }
      chunks.push(value);
      bytes += value.byteLength;
    }
  } finally {
    if (truncated) await reader.cancel().catch(() => {});
    else reader.releaseLock();
  }
  const all = new Uint8Array(bytes);
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.byteLength;
  }
  // `stream: true` holds back a trailing partial character instead of writing U+FFFD for it.
  const text = new TextDecoder('utf-8').decode(all, { stream: truncated });
  return { text, bytes, truncated };
}
