/**
 * @module server/express/json-scan
 * One pass over a JSON text before parsing: its nesting depth bounded, and the few values admission
 * needs read at their paths.
 */

/** Default deepest nesting of objects and arrays accepted in a JSON body (the top level is 1). */
export const DEFAULT_MAX_JSON_DEPTH = 64;

/** Paths of interest, compiled once: a tree of keys. */
export interface JsonPaths {
  readonly children: ReadonlyMap<string, JsonPathNode>;
}

interface JsonPathNode extends JsonPaths {
  /** The dotted path, when the value here is captured. */
  readonly path: string;
  readonly capture: boolean;
  /** Captured paths below this node (reset when the key appears again: the last one wins). */
  readonly below: readonly string[];
}

/**
 * Compiles dotted paths (`'params.message.messageId'`) into the tree {@link scanJson} follows.
 *
 * @example
 * ```ts
 * const paths = jsonPaths(['method', 'params.tenant']);
 * ```
 */
export function jsonPaths(paths: readonly string[]): JsonPaths {
  type Mutable = {
    children: Map<string, Mutable>;
    path: string;
    capture: boolean;
    below: string[];
  };
  const root: Mutable = { children: new Map(), path: '', capture: false, below: [] };
  for (const path of paths) {
    let node = root;
    const keys = path.split('.');
    keys.forEach((key, index) => {
      let child = node.children.get(key);
      if (child === undefined) {
        child = {
          children: new Map(),
          path: keys.slice(0, index + 1).join('.'),
          capture: false,
          below: [],
        };
        node.children.set(key, child);
      }
      if (index < keys.length - 1) child.below.push(path);
      node = child;
    });
    node.capture = true;
  }
  return root;
}

/**
 * What {@link scanJson} found: `ok` with the raw JSON text of each captured path present (as
 * `JSON.parse` would read the document: the last of duplicate keys wins) and whether the top level
 * is an object; `too-deep` past the depth bound; `unreadable` when the text is not shaped as JSON
 * (the caller then parses it and answers the parser's error). A text the scan reads `ok` may still
 * be malformed where it does not look (a number's digits, what follows the top-level value).
 */
export type JsonScan =
  | {
      readonly status: 'ok';
      readonly topLevelObject: boolean;
      readonly found: ReadonlyMap<string, string>;
    }
  | { readonly status: 'too-deep' | 'unreadable' };

const TOO_DEEP = { status: 'too-deep' } as const;
const UNREADABLE = { status: 'unreadable' } as const;

function isWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * Scans `text` from `start` (past a byte-order mark): nesting deeper than `maxDepth` is
 * `too-deep`; the values at `paths` are captured. Linear in the text, allocation-free but for
 * the keys it compares and the values it captures.
 *
 * @example
 * ```ts
 * scanJson('{"method":"GetTask","params":{}}', 0, jsonPaths(['method']), 64);
 * // { status: 'ok', topLevelObject: true, found: Map { 'method' => '"GetTask"' } }
 * ```
 */
export function scanJson(
  text: string,
  start: number,
  paths: JsonPaths,
  maxDepth: number,
): JsonScan {
  const n = text.length;
  const found = new Map<string, string>();
  let i = start;
  let tooDeep = false;

  const skipWhitespace = (): void => {
    while (i < n && isWhitespace(text.charCodeAt(i))) i++;
  };
  /** At a quote: past the closing quote, or false at the end. */
  const string = (): boolean => {
    let j = i + 1;
    for (;;) {
      const close = text.indexOf('"', j);
      if (close < 0) return false;
      let slashes = 0;
      for (let k = close - 1; k > i && text.charCodeAt(k) === 0x5c; k--) slashes++;
      j = close + 1;
      if (slashes % 2 === 0) break;
    }
    i = j;
    return true;
  };
  const keyOf = (from: number, to: number): string | undefined => {
    const raw = text.slice(from, to);
    if (!raw.includes('\\')) return raw.slice(1, -1);
    try {
      return JSON.parse(raw) as string;
    } catch {
      return undefined;
    }
  };
  const value = (depth: number, node: JsonPaths | undefined): boolean => {
    skipWhitespace();
    const c = text.charCodeAt(i);
    if (c === 0x7b) return object(depth + 1, node);
    if (c === 0x5b) return array(depth + 1);
    if (c === 0x22) return string();
    const from = i;
    while (i < n) {
      const d = text.charCodeAt(i);
      if (d === 0x2c || d === 0x7d || d === 0x5d || isWhitespace(d)) break;
      i++;
    }
    return i > from;
  };
  const object = (depth: number, node: JsonPaths | undefined): boolean => {
    if (depth > maxDepth) {
      tooDeep = true;
      return false;
    }
    i++;
    skipWhitespace();
    if (text.charCodeAt(i) === 0x7d) {
      i++;
      return true;
    }
    for (;;) {
      skipWhitespace();
      if (text.charCodeAt(i) !== 0x22) return false;
      const keyStart = i;
      if (!string()) return false;
      const child =
        node === undefined || node.children.size === 0
          ? undefined
          : node.children.get(keyOf(keyStart, i) ?? '');
      skipWhitespace();
      if (text.charCodeAt(i) !== 0x3a) return false;
      i++;
      skipWhitespace();
      const valueStart = i;
      if (child !== undefined) for (const path of (child as JsonPathNode).below) found.delete(path);
      if (!value(depth, child)) return false;
      if (child !== undefined && (child as JsonPathNode).capture) {
        found.set((child as JsonPathNode).path, text.slice(valueStart, i));
      }
      skipWhitespace();
      const c = text.charCodeAt(i);
      i++;
      if (c === 0x2c) continue;
      return c === 0x7d;
    }
  };
  const array = (depth: number): boolean => {
    if (depth > maxDepth) {
      tooDeep = true;
      return false;
    }
    i++;
    skipWhitespace();
    if (text.charCodeAt(i) === 0x5d) {
      i++;
      return true;
    }
    for (;;) {
      if (!value(depth, undefined)) return false;
      skipWhitespace();
      const c = text.charCodeAt(i);
      i++;
      if (c === 0x2c) continue;
      return c === 0x5d;
    }
  };

  skipWhitespace();
  const topLevelObject = text.charCodeAt(i) === 0x7b;
  if (value(0, paths)) return { status: 'ok', topLevelObject, found };
  return tooDeep ? TOO_DEEP : UNREADABLE;
}

/** What a captured object or array reads as in {@link capturedValue}: not a scalar. */
export const JSON_CONTAINER: unique symbol = Symbol('json-container');

/**
 * A captured value as `JSON.parse` reads it — strings, numbers, booleans and null themselves,
 * objects and arrays as {@link JSON_CONTAINER} — or `undefined` when absent. Throws a
 * `SyntaxError` for a malformed scalar.
 *
 * @example
 * ```ts
 * capturedValue(scan.found, 'method'); // 'GetTask'
 * ```
 */
export function capturedValue(
  found: ReadonlyMap<string, string>,
  path: string,
): string | number | boolean | null | typeof JSON_CONTAINER | undefined {
  const raw = found.get(path);
  if (raw === undefined) return undefined;
  const c = raw.charCodeAt(0);
  if (c === 0x7b || c === 0x5b) return JSON_CONTAINER;
  if (c === 0x22 && !raw.includes('\\')) return raw.slice(1, -1);
  return JSON.parse(raw) as string | number | boolean | null;
}

/**
 * Whether a parsed document has, at every path of `found`'s scan, what the scan captured (and
 * nothing where it captured nothing): the check that the body decided on is the body run.
 */
export function agreesWithScan(
  parsed: unknown,
  found: ReadonlyMap<string, string>,
  paths: readonly string[],
): boolean {
  for (const path of paths) {
    let at: unknown = parsed;
    for (const key of path.split('.')) {
      at =
        at !== null && typeof at === 'object' && !Array.isArray(at) && Object.hasOwn(at, key)
          ? (at as Record<string, unknown>)[key]
          : undefined;
    }
    let scanned: ReturnType<typeof capturedValue>;
    try {
      scanned = capturedValue(found, path);
    } catch {
      return false;
    }
    if (scanned === JSON_CONTAINER) {
      if (at === null || typeof at !== 'object') return false;
    } else if (scanned !== at) return false;
  }
  return true;
}
