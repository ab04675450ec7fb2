import { describe, expect, it } from 'vitest';
import {
  isAgentOverloadedError,
  isRateLimitedError,
  isRetryBudgetExceededError,
  RateLimitedError,
  retryErrorOf,
} from './retry-errors.js';

const errorInfo = (reason: string, metadata: Record<string, string> = {}) => ({
  '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
  reason,
  domain: 'agents.example.com',
  metadata,
});

/** Shaped as the SDK's `JsonRpcTransportError` (`envelopeCode`, `data`, `errorResponse`). */
function jsonRpcTransportError(data: unknown): Error {
  const error = { code: -32603, message: 'Rate limit exceeded', data };
  return Object.assign(new Error(error.message), {
    name: 'JsonRpcTransportError',
    envelopeCode: -32603,
    data,
    errorResponse: { jsonrpc: '2.0', id: 1, error },
  });
}

describe('the guards on errors the SDK threw on its own', () => {
  it('recognise a JSON-RPC error carrying our details, with the hint read from them', () => {
    const e = jsonRpcTransportError([
      errorInfo('RATE_LIMIT_EXCEEDED', { policy: 'per-caller', retryDelay: '4s', kind: 'quota' }),
      { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '3s' },
    ]);
    expect(isRateLimitedError(e)).toBe(true);
    expect(isAgentOverloadedError(e)).toBe(false);
    expect(isRetryBudgetExceededError(e)).toBe(false);
    if (!isRateLimitedError(e)) return;
    expect(e.hint).toMatchObject({ kind: 'quota', delayMs: 3_000, policy: 'per-caller' });
    expect(e.attempts).toBe(1);
    expect(retryErrorOf(e)).toBe((e as unknown as { retryError: unknown }).retryError);
  });

  it('recognise a JSON-RPC error whose data is only our metadata', () => {
    const e = jsonRpcTransportError({
      policy: 'in-flight',
      retryDelay: '1.500s',
      kind: 'overload',
    });
    expect(isAgentOverloadedError(e)).toBe(true);
    expect(isAgentOverloadedError(e) && e.hint.delayMs).toBe(1_500);
  });

  it('leave alone what is no refusal: a bare UNAVAILABLE, a bare -32603, a task error', () => {
    const dropped = Object.assign(new Error('14 UNAVAILABLE: No connection established'), {
      code: 14,
      details: 'No connection established',
      metadata: { getMap: () => ({}) },
    });
    const bare = jsonRpcTransportError(undefined);
    const notFound = Object.assign(new Error('Task not found'), {
      envelopeCode: -32001,
      data: [errorInfo('TASK_NOT_FOUND')],
    });
    for (const e of [dropped, bare, notFound, 'a string', undefined]) {
      expect(isRateLimitedError(e) || isAgentOverloadedError(e)).toBe(false);
      expect(retryErrorOf(e)).toBeUndefined();
    }
  });

  it('prefer our own error on the cause chain over reading the answer again', () => {
    const ours = new RateLimitedError({ kind: 'quota', delayMs: 9_000 }, { attempts: 4 });
    const e = Object.assign(jsonRpcTransportError([errorInfo('AGENT_OVERLOADED')]), {
      cause: ours,
    });
    expect(retryErrorOf(e)).toBe(ours);
    expect(isAgentOverloadedError(e)).toBe(false);
  });

  it('a frozen SDK error is not narrowed, but retryErrorOf still reads it', () => {
    const e = Object.freeze(
      jsonRpcTransportError([errorInfo('RATE_LIMIT_EXCEEDED', { retryDelay: '2s' })]),
    );
    expect(isRateLimitedError(e)).toBe(false);
    expect(retryErrorOf(e)?.hint.delayMs).toBe(2_000);
  });
});
