import { describe, expect, it } from 'vitest';
import type { ProbeCheck } from './probe-check.js';
import { checkLevel, graded } from './probe-checks.js';
import { originsOf } from './probe-origins.js';

const check = (name: string, status: ProbeCheck['status']): ProbeCheck => ({
  name,
  status,
  detail: '',
});

describe('originsOf', () => {
  it('what the agent sent but the gateway lost is "path"; what the agent lacks too is "agent"', () => {
    const through = [
      check('status', 'pass'),
      check('retry-after', 'fail'),
      check('ratelimit', 'warn'),
      check('a2a-answer', 'fail'),
      check('retry', 'skip'),
    ];
    const direct = [
      check('status', 'pass'),
      check('retry-after', 'pass'),
      check('ratelimit', 'warn'),
    ];
    expect(originsOf(through, direct)).toEqual({
      'retry-after': 'path',
      ratelimit: 'agent',
      'a2a-answer': 'path',
    });
  });

  it('a check the direct run skipped, and the retry it never runs, are left unplaced', () => {
    expect(
      originsOf(
        [check('retry-info', 'fail'), check('retry', 'fail')],
        [check('retry-info', 'skip')],
      ),
    ).toEqual({});
  });
});

describe('grading', () => {
  it('RateLimit and gRPC pushback are recommended everywhere, retry-after only on gRPC', () => {
    expect(checkLevel('ratelimit', 'rest')).toBe('recommended');
    expect(checkLevel('pushback', 'grpc')).toBe('recommended');
    expect(checkLevel('retry-after', 'grpc')).toBe('recommended');
    for (const binding of ['rest', 'jsonrpc'] as const)
      expect(checkLevel('retry-after', binding)).toBe('required');
    for (const name of [
      'status',
      'media type',
      'body',
      'reason',
      'domain',
      'retry-info',
      'a2a-answer',
    ])
      expect(checkLevel(name, 'grpc')).toBe('required');
  });

  it('a failed recommended check is a warning; a failed required one stays a failure', () => {
    expect(graded(check('ratelimit', 'fail'), 'jsonrpc')).toMatchObject({
      status: 'warn',
      level: 'recommended',
    });
    expect(graded(check('retry-info', 'fail'), 'jsonrpc')).toMatchObject({
      status: 'fail',
      level: 'required',
    });
    expect(graded(check('ratelimit', 'pass'), 'rest').status).toBe('pass');
  });
});
