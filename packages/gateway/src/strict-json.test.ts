import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseStrictJson } from './strict-json.js';

describe('parseStrictJson', () => {
  it('reads what JSON.parse reads when no object repeats a key', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
        const text = JSON.stringify(value);
        const parsed = parseStrictJson(text, 64);
        expect(parsed).toEqual({ status: 'ok', value: JSON.parse(text) });
      }),
    );
  });

  it('refuses a key repeated in any object, however it is escaped', () => {
    expect(parseStrictJson('{"a":1,"a":2}', 64)).toEqual({ status: 'duplicate-key', key: 'a' });
    expect(parseStrictJson('{"method":1,"\\u006dethod":2}', 64)).toEqual({
      status: 'duplicate-key',
      key: 'method',
    });
    expect(parseStrictJson('[{"x":{"b":1,"c":"\\"b\\":","b":2}}]', 64)).toEqual({
      status: 'duplicate-key',
      key: 'b',
    });
    // The same key in sibling objects is no duplicate.
    expect(parseStrictJson('[{"a":1},{"a":2}]', 64).status).toBe('ok');
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1 }),
        fc.jsonValue({ maxDepth: 2 }),
        (object, extra) => {
          const key = Object.keys(object)[0] as string;
          const text = `${JSON.stringify(object).slice(0, -1)},${JSON.stringify(key)}:${JSON.stringify(extra)}}`;
          expect(parseStrictJson(`{"wrap":${text}}`, 64)).toEqual({ status: 'duplicate-key', key });
        },
      ),
    );
  });

  it('bounds the depth and says why a text is malformed', () => {
    expect(parseStrictJson('[[[1]]]', 3).status).toBe('ok');
    expect(parseStrictJson('[[[1]]]', 2).status).toBe('too-deep');
    expect(parseStrictJson('{"a":', 64).status).toBe('malformed');
  });
});
