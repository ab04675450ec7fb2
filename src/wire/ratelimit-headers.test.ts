import fc from 'fast-check';
import { parseList, Token } from 'structured-headers';
import { describe, expect, it } from 'vitest';
import type { LimitState } from '../core/rejection.js';
import { rateLimitHeaders, readRateLimitHeaders } from './ratelimit-headers.js';
import { limitsArb } from './wire.test-helpers.js';

const perCaller: LimitState = {
  policy: 'per-caller',
  limit: 60,
  windowSeconds: 60,
  remaining: 9,
  resetSeconds: 1,
};
const perTenant: LimitState = {
  policy: 'per-tenant',
  limit: 1000,
  windowSeconds: 3600,
  remaining: 412,
  resetSeconds: 0,
};

describe('rateLimitHeaders', () => {
  it('writes one list member per policy (fixed strings)', () => {
    expect(rateLimitHeaders([perCaller, perTenant])).toEqual({
      'ratelimit-policy': '"per-caller";q=60;w=60, "per-tenant";q=1000;w=3600',
      ratelimit: '"per-caller";r=9;t=1, "per-tenant";r=412;t=0',
    });
  });

  it('writes the rejecting policy with r=0', () => {
    expect(rateLimitHeaders([perCaller], 'per-caller')).toEqual({
      'ratelimit-policy': '"per-caller";q=60;w=60',
      ratelimit: '"per-caller";r=0;t=1',
    });
  });

  it('rounds r down and t up, escapes names, and skips unusable states', () => {
    expect(
      rateLimitHeaders([
        { policy: 'a "b"', limit: 10, windowSeconds: 1, remaining: 2.7, resetSeconds: 0.2 },
        { policy: 'nan', limit: Number.NaN, windowSeconds: 1, remaining: 1, resetSeconds: 1 },
        { policy: 'é', limit: 1, windowSeconds: 1, remaining: 1, resetSeconds: 1 },
        { policy: 'a "b"', limit: 99, windowSeconds: 1, remaining: 1, resetSeconds: 1 },
      ]),
    ).toEqual({ 'ratelimit-policy': '"a \\"b\\"";q=10;w=1', ratelimit: '"a \\"b\\"";r=2;t=1' });
    expect(rateLimitHeaders([])).toEqual({});
  });

  it('always yields fields a structured-fields parser reads back to the same numbers', () => {
    fc.assert(
      fc.property(limitsArb(), fc.option(fc.nat(3)), (limits, pick) => {
        const rejected = pick === null ? undefined : limits[pick]?.policy;
        const headers = rateLimitHeaders(limits, rejected);
        if (limits.length === 0) {
          expect(headers).toEqual({});
          return;
        }
        const policies = parseList(headers['ratelimit-policy'] ?? '');
        const states = parseList(headers.ratelimit ?? '');
        const firstByName = new Map<string, LimitState>();
        for (const l of limits) if (!firstByName.has(l.policy)) firstByName.set(l.policy, l);
        expect(policies).toHaveLength(firstByName.size);
        expect(states).toHaveLength(firstByName.size);
        for (const [i, [name, l]] of [...firstByName].entries()) {
          expect(policies[i]).toEqual([
            name,
            new Map([
              ['q', l.limit],
              ['w', l.windowSeconds],
            ]),
          ]);
          const r = name === rejected ? 0 : l.remaining;
          expect(states[i]).toEqual([
            name,
            new Map([
              ['r', r],
              ['t', l.resetSeconds],
            ]),
          ]);
        }
      }),
    );
  });
});

describe('readRateLimitHeaders', () => {
  it('reads draft-11 fields, split over several field lines, from a record in any case', () => {
    expect(
      readRateLimitHeaders({
        'RateLimit-Policy': ['"burst";q=100;w=60', '"daily";q=1000;w=86400;qu="requests"'],
        RateLimit: '"burst";r=0;t=12, "daily";r=900;t=3600, default;r=5',
      }),
    ).toEqual({
      policies: [
        { policy: 'burst', limit: 100, windowSeconds: 60 },
        { policy: 'daily', limit: 1000, windowSeconds: 86400 },
      ],
      states: [
        { policy: 'burst', remaining: 0, resetSeconds: 12 },
        { policy: 'daily', remaining: 900, resetSeconds: 3600 },
        { policy: 'default', remaining: 5 },
      ],
    });
  });

  it('reads a fetch Headers object', () => {
    const headers = new Headers({ 'RateLimit-Policy': '"p";q=60;w=60', RateLimit: '"p";r=9;t=1' });
    expect(readRateLimitHeaders(headers)).toEqual({
      policies: [{ policy: 'p', limit: 60, windowSeconds: 60 }],
      states: [{ policy: 'p', remaining: 9, resetSeconds: 1 }],
    });
  });

  it('reads the draft-07 dictionary and integer policies', () => {
    expect(
      readRateLimitHeaders({
        ratelimit: 'limit=100, remaining=50, reset=5',
        'ratelimit-policy': '10;w=1, 50;w=60',
      }),
    ).toEqual({
      policies: [
        { policy: '10', limit: 10, windowSeconds: 1 },
        { policy: '50', limit: 50, windowSeconds: 60 },
      ],
      states: [{ remaining: 50, resetSeconds: 5 }],
    });
  });

  it('reads draft-06 and X-RateLimit fields, converting epoch resets with nowMs', () => {
    const nowMs = 1_700_000_000_000;
    expect(
      readRateLimitHeaders(
        {
          'RateLimit-Remaining': '3',
          'RateLimit-Reset': '7',
          'X-RateLimit-Limit': '60',
          'X-RateLimit-Remaining': '0',
          'X-RateLimit-Reset': '1700000030',
        },
        nowMs,
      ).states,
    ).toEqual([
      { remaining: 3, resetSeconds: 7 },
      { remaining: 0, resetSeconds: 30 },
    ]);
    // Without a clock an epoch cannot be converted: the reset is left out.
    expect(
      readRateLimitHeaders({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1700000030' })
        .states,
    ).toEqual([{ remaining: 0 }]);
  });

  it('ignores malformed fields and items', () => {
    expect(
      readRateLimitHeaders({
        'ratelimit-policy': '"p";q=-1;w=60, "q";q=5, "r";q=5;w=0, ("inner");q=1;w=1',
        ratelimit: '"p";r=1.5, "q";r=-1, "s";t=3',
      }),
    ).toEqual({ policies: [], states: [] });
    expect(readRateLimitHeaders({ ratelimit: '"p";r=1;t=2,,' })).toEqual({
      policies: [],
      states: [],
    });
    expect(readRateLimitHeaders({ 'x-ratelimit-remaining': 'lots' })).toEqual({
      policies: [],
      states: [],
    });
  });

  it('accepts tokens as item names', () => {
    expect(readRateLimitHeaders({ ratelimit: 'default;r=50;t=30' }).states).toEqual([
      { policy: new Token('default').toString(), remaining: 50, resetSeconds: 30 },
    ]);
  });

  it('reads back what rateLimitHeaders writes', () => {
    fc.assert(
      fc.property(limitsArb(), (limits) => {
        const read = readRateLimitHeaders(rateLimitHeaders(limits));
        const seen = new Set<string>();
        const unique = limits.filter((l) => !seen.has(l.policy) && seen.add(l.policy));
        expect(read.policies).toEqual(
          unique.map((l) => ({ policy: l.policy, limit: l.limit, windowSeconds: l.windowSeconds })),
        );
        expect(read.states).toEqual(
          unique.map((l) => ({
            policy: l.policy,
            remaining: l.remaining,
            resetSeconds: l.resetSeconds,
          })),
        );
      }),
    );
  });
});
