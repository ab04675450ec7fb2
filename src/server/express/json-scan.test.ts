import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { agreesWithScan, capturedValue, JSON_CONTAINER, jsonPaths, scanJson } from './json-scan.js';

const PATHS = ['method', 'id', 'params.tenant', 'params.message.messageId'] as const;
const SCAN = jsonPaths(PATHS);

/** Nesting depth of a parsed value (a scalar is 0, `{}` is 1). */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + children.reduce<number>((max, child) => Math.max(max, depthOf(child)), 0);
}

/** Keys that hit the paths (some spelled with escapes), and others. */
const key = fc.constantFrom(
  'method',
  'id',
  'params',
  'tenant',
  'message',
  'messageId',
  'other',
  'm\\u0065thod',
  'p"q',
);

/** JSON text of an object whose keys often hit the paths, with duplicates, any values. */
const document: fc.Arbitrary<string> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
    tie('object') as fc.Arbitrary<string>,
  ),
  object: fc
    .array(fc.tuple(key, tie('value') as fc.Arbitrary<string>, fc.constantFrom('', ' ', '\n\t')), {
      maxLength: 6,
    })
    .map(
      (entries) =>
        `{${entries.map(([k, v, ws]) => `${ws}"${k.replace('"', '\\"')}"${ws}:${ws}${v}${ws}`).join(',')}}`,
    ),
})).object;

describe('scanJson', () => {
  it('captures what JSON.parse reads at each path (the last duplicate key wins)', () => {
    fc.assert(
      fc.property(document, (text) => {
        const scan = scanJson(text, 0, SCAN, 1000);
        expect(scan.status).toBe('ok');
        if (scan.status !== 'ok') return;
        expect(scan.topLevelObject).toBe(true);
        expect(agreesWithScan(JSON.parse(text), scan.found, PATHS)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('is too deep exactly when the nesting passes the bound', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 1, max: 8 }), (value, bound) => {
        const text = JSON.stringify(value);
        const scan = scanJson(text, 0, SCAN, bound);
        expect(scan.status === 'too-deep').toBe(depthOf(value) > bound);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses 49,000 levels of arrays before anything is parsed', () => {
    const text = `{"d":${'['.repeat(49_000)}${']'.repeat(49_000)}}`;
    expect(scanJson(text, 0, SCAN, 64).status).toBe('too-deep');
    expect(scanJson(`${'['.repeat(64)}${']'.repeat(64)}`, 0, SCAN, 64).status).toBe('ok');
    expect(scanJson(`${'['.repeat(65)}${']'.repeat(65)}`, 0, SCAN, 64).status).toBe('too-deep');
  });

  it('reads escaped strings and keys, and says so for containers', () => {
    const text =
      '{"m\\u0065thod":"Send\\"Message\\\\","params":{"tenant":{"a":1},"message":{"messageId":"x"}}}';
    const scan = scanJson(text, 0, SCAN, 64);
    if (scan.status !== 'ok') throw new Error(scan.status);
    expect(capturedValue(scan.found, 'method')).toBe('Send"Message\\');
    expect(capturedValue(scan.found, 'params.tenant')).toBe(JSON_CONTAINER);
    expect(capturedValue(scan.found, 'params.message.messageId')).toBe('x');
    expect(capturedValue(scan.found, 'id')).toBeUndefined();
  });

  it('forgets what a replaced object held', () => {
    const text = '{"params":{"message":{"messageId":"first"}},"params":{"tenant":"t"}}';
    const scan = scanJson(text, 0, SCAN, 64);
    if (scan.status !== 'ok') throw new Error(scan.status);
    expect(capturedValue(scan.found, 'params.message.messageId')).toBeUndefined();
    expect(capturedValue(scan.found, 'params.tenant')).toBe('t');
    expect(agreesWithScan(JSON.parse(text), scan.found, PATHS)).toBe(true);
  });

  it('calls text that is not shaped as JSON unreadable, and a differing parse disagrees', () => {
    expect(scanJson('{"method" "x"}', 0, SCAN, 64).status).toBe('unreadable');
    expect(scanJson('{"method":"x"', 0, SCAN, 64).status).toBe('unreadable');
    const scan = scanJson('{"method":"GetTask"}', 0, SCAN, 64);
    if (scan.status !== 'ok') throw new Error(scan.status);
    expect(agreesWithScan({ method: 'CancelTask' }, scan.found, PATHS)).toBe(false);
    expect(agreesWithScan({ method: 'GetTask', id: 1 }, scan.found, PATHS)).toBe(false);
  });
});
