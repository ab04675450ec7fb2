/**
 * @module strict-json
 * The JSON a gateway may forward: no key twice in an object, nesting bounded. Pure.
 */

/** What {@link parseStrictJson} made of a text. */
export type StrictJson =
  | { readonly status: 'ok'; readonly value: unknown }
  | { readonly status: 'malformed'; readonly message: string }
  | { readonly status: 'duplicate-key'; readonly key: string }
  | { readonly status: 'too-deep' };

/** The decoded text of the JSON string literal `text[from..to)` (quotes included). */
function keyText(text: string, from: number, to: number): string {
  const raw = text.slice(from, to);
  return raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
}

/**
 * Parses `text` as JSON and refuses a duplicate key in any object (compared after unescaping, so
 * `"a"` and `"\u0061"` are one key) and nesting deeper than `maxDepth` (the top level is 1).
 *
 * @example
 * ```ts
 * parseStrictJson('{"a":1,"a":2}', 64); // { status: 'duplicate-key', key: 'a' }
 * parseStrictJson('{"a":[1]}', 64);      // { status: 'ok', value: { a: [1] } }
 * ```
 */
export function parseStrictJson(text: string, maxDepth: number): StrictJson {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { status: 'malformed', message: (error as Error).message };
  }
  // The text is valid JSON: a string ends at the first unescaped quote, and a string followed by
  // `:` is a key of the innermost open object.
  const keys: (Set<string> | undefined)[] = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const start = i;
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i += 2;
        else if (d === 0x22) break;
        else i++;
      }
      i++;
      let j = i;
      // JSON whitespace: space, tab, LF, CR.
      for (let w = text.charCodeAt(j); w === 0x20 || w === 0x09 || w === 0x0a || w === 0x0d; ) {
        w = text.charCodeAt(++j);
      }
      if (text.charCodeAt(j) === 0x3a) {
        const open = keys.at(-1);
        const key = keyText(text, start, i);
        if (open !== undefined) {
          if (open.has(key)) return { status: 'duplicate-key', key };
          open.add(key);
        }
      }
      continue;
    }
    if (c === 0x7b || c === 0x5b) {
      if (keys.length >= maxDepth) return { status: 'too-deep' };
      keys.push(c === 0x7b ? new Set() : undefined);
    } else if (c === 0x7d || c === 0x5d) keys.pop();
    i++;
  }
  return { status: 'ok', value };
}
