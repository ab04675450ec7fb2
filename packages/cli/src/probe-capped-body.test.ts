import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readCappedText } from './probe-capped-body.js';

/** A response whose body arrives in `chunks`, counting how many chunks were pulled. */
function chunked(chunks: Uint8Array[]): { response: Response; pulled: () => number } {
  let next = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const chunk = chunks[next++];
      if (chunk === undefined) controller.close();
      else controller.enqueue(chunk);
    },
  });
  return { response: new Response(stream), pulled: () => next };
}

const bytes = (text: string) => new TextEncoder().encode(text);

describe('readCappedText', () => {
  it('a body within the cap is read whole', async () => {
    const { response } = chunked([bytes('{"a":'), bytes('1}')]);
    expect(await readCappedText(response, 100)).toEqual({
      text: '{"a":1}',
      bytes: 7,
      truncated: false,
    });
  });

  it('a body exactly at the cap is not truncated', async () => {
    const { response } = chunked([bytes('abcd'), bytes('ef')]);
    expect(await readCappedText(response, 6)).toEqual({
      text: 'abcdef',
      bytes: 6,
      truncated: false,
    });
  });

  it('a longer body stops at the cap and pulls no further chunk', async () => {
    const chunk = new Uint8Array(1000).fill(120);
    const { response, pulled } = chunked(Array.from({ length: 1000 }, () => chunk));
    const read = await readCappedText(response, 2500);
    expect(read).toMatchObject({ bytes: 2500, truncated: true });
    expect(read.text).toBe('x'.repeat(2500));
    expect(pulled()).toBeLessThanOrEqual(4);
  });

  it('a character cut by the cap is dropped, never mangled', async () => {
    const { response } = chunked([bytes('ab€cd')]); // € is 3 bytes
    expect((await readCappedText(response, 4)).text).toBe('ab');
  });

  it('any split of any text: the text read is a prefix of the body, at most the cap', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: 'grapheme', maxLength: 60 }),
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 20 }),
        fc.integer({ min: 0, max: 80 }),
        async (text, sizes, cap) => {
          const all = bytes(text);
          const chunks: Uint8Array[] = [];
          for (let at = 0, i = 0; at < all.length; i++) {
            const size = sizes[i % sizes.length] ?? 1;
            chunks.push(all.subarray(at, at + size));
            at += size;
          }
          const read = await readCappedText(chunked(chunks).response, cap);
          expect(text.startsWith(read.text)).toBe(true);
          expect(read.bytes).toBe(Math.min(cap, all.length));
          expect(read.truncated).toBe(all.length > cap);
          if (!read.truncated) expect(read.text).toBe(text);
        },
      ),
    );
  });
});
