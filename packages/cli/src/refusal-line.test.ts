import { describe, expect, it } from 'vitest';
import { MAX_LOGGED_VALUE_CHARS, quoteLogValue, refusalLine } from './refusal-line.js';

const at = new Date(Date.UTC(2026, 11, 5, 17, 0, 0, 250));

describe('refusalLine', () => {
  it('one line: ISO time, status, reason, policy, delay, method, binding, caller, tenant', () => {
    expect(
      refusalLine(
        {
          caller: 'alice',
          method: 'SendMessage',
          binding: 'jsonrpc',
          status: 429,
          policy: 'per-caller',
          reason: 'RATE_LIMIT_EXCEEDED',
          retryAfterMs: 12_000,
          tenant: 'acme',
        },
        at,
      ),
    ).toBe(
      '2026-12-05T17:00:00.250Z refused status=429 reason=RATE_LIMIT_EXCEEDED policy=per-caller retryAfterMs=12000 method=SendMessage binding=jsonrpc caller="alice" tenant="acme"',
    );
  });

  it('leaves out what a refusal does not have', () => {
    expect(
      refusalLine(
        { caller: '', method: 'GetTask', binding: 'rest', status: 401, policy: 'identity' },
        at,
      ),
    ).toBe(
      '2026-12-05T17:00:00.250Z refused status=401 reason=REFUSED policy=identity method=GetTask binding=rest caller=""',
    );
  });

  it('a caller cannot forge a line, a field, or hide text', () => {
    const evil =
      'eve" status=200\n2026-12-05T17:00:00.000Z refused caller="bob\r\u2028\u202e\u0000\u009b\\';
    const line = refusalLine(
      {
        caller: evil,
        method: 'SendMessage',
        binding: 'rest',
        status: 429,
        policy: 'p',
        tenant: 't\n1',
      },
      at,
    );
    expect(line.split(/[\n\r\u2028\u2029]/)).toHaveLength(1);
    expect(line).not.toMatch(/[\p{Cc}\p{Cf}]/u);
    expect(line).toContain(
      'caller="eve\\" status=200\\u000a2026-12-05T17:00:00.000Z refused caller=\\"bob\\u000d\\u2028\\u202e\\u0000\\u009b\\\\"',
    );
    expect(line).toContain('tenant="t\\u000a1"');
    // Exactly the fields written: a quoted value never closes early.
    const unquoted = line.replace(/"(?:[^"\\]|\\.)*"/g, '""');
    expect(unquoted.match(/ \w+=/g)).toEqual([
      ' status=',
      ' reason=',
      ' policy=',
      ' method=',
      ' binding=',
      ' caller=',
      ' tenant=',
    ]);
  });

  it('caps a long value (by characters, not halving a surrogate pair)', () => {
    const long = '😀'.repeat(MAX_LOGGED_VALUE_CHARS + 50);
    const quoted = quoteLogValue(long);
    expect(Array.from(quoted)).toHaveLength(MAX_LOGGED_VALUE_CHARS + 3);
    expect(quoted.endsWith('😀…"')).toBe(true);
    expect(quoteLogValue('x'.repeat(MAX_LOGGED_VALUE_CHARS))).toBe(
      `"${'x'.repeat(MAX_LOGGED_VALUE_CHARS)}"`,
    );
  });

  it('quotes an operator value that is not a bare token', () => {
    const line = refusalLine(
      { caller: 'a', method: 'SendMessage', binding: 'rest', status: 429, policy: 'my policy' },
      at,
    );
    expect(line).toContain('policy="my policy"');
  });
});
