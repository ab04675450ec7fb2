/**
 * A usage policy's unit on the wire (`qu`, draft-ietf-httpapi-ratelimit-headers-11 §3) and on the
 * card: the server writes it, the readers mark the policy and its states with it, and the client's
 * request pacing (gate and card plans) never mistakes a token budget for a request quota
 * (`packages/cli/src/token-budget-pacing.test.ts`, against the CLI's simulated agent).
 */

import type { Policy } from 'a2a-ratelimit';
import { rateLimitHeaders, readRateLimitHeaders } from 'a2a-ratelimit';
import { createLimiter } from 'a2a-ratelimit/server';
import { ManualClock } from 'a2a-ratelimit/testing';
import { parseList } from 'structured-headers';
import { describe, expect, it } from 'vitest';
import { publishedParams } from './rate-limit-card.helpers.js';

/** One policy's limit state, as `rateLimitHeaders` takes it. */
type LimitState = Parameters<typeof rateLimitHeaders>[0][number];

const TOKENS: Policy = {
  name: 'tokens',
  kind: 'rate',
  unit: 'tokens',
  methods: ['SendMessage'],
  limit: 10_000,
  windowSeconds: 60,
};
const PER_CALLER: Policy = {
  name: 'per-caller',
  kind: 'rate',
  methods: ['SendMessage'],
  limit: 60,
  windowSeconds: 60,
  burst: 10,
};

const tokenState: LimitState = {
  policy: 'tokens',
  limit: 10_000,
  windowSeconds: 60,
  remaining: 6_000,
  resetSeconds: 1,
  unit: 'tokens',
};

describe('qu in RateLimit-Policy', () => {
  it('a usage policy item carries qu="<unit>"; a request policy none', () => {
    const headers = rateLimitHeaders([
      { policy: 'per-caller', limit: 60, windowSeconds: 60, remaining: 9, resetSeconds: 1 },
      tokenState,
    ]);
    expect(headers).toEqual({
      'ratelimit-policy': '"per-caller";q=60;w=60, "tokens";q=10000;qu="tokens";w=60',
      ratelimit: '"per-caller";r=9;t=1, "tokens";r=6000;t=1',
    });
    const [, tokens] = parseList(headers['ratelimit-policy'] as string);
    expect(tokens?.[1].get('qu')).toBe('tokens'); // an sf-string, as the draft requires
  });

  it('leaves out a state whose unit could not be written as is', () => {
    expect(rateLimitHeaders([{ ...tokenState, unit: 'Tokens "x"' }])).toEqual({});
  });

  it('reads qu back onto the policy and the states of that policy', () => {
    const read = readRateLimitHeaders({
      'ratelimit-policy': '"per-caller";q=60;w=60, "tokens";q=10000;qu="tokens";w=60',
      ratelimit: '"per-caller";r=9;t=1, "tokens";r=6000;t=1',
    });
    expect(read).toEqual({
      policies: [
        { policy: 'per-caller', limit: 60, windowSeconds: 60 },
        { policy: 'tokens', limit: 10_000, windowSeconds: 60, unit: 'tokens' },
      ],
      states: [
        { policy: 'per-caller', remaining: 9, resetSeconds: 1 },
        { policy: 'tokens', remaining: 6_000, resetSeconds: 1, unit: 'tokens' },
      ],
    });
  });

  it('qu="requests" is the default unit; a token qu is read; a non-string qu drops the item', () => {
    const read = readRateLimitHeaders({
      'ratelimit-policy':
        '"a";q=5;qu="requests";w=1, "b";q=5;qu=content-bytes;w=1, "c";q=5;qu=3;w=1',
    });
    expect(read.policies).toEqual([
      { policy: 'a', limit: 5, windowSeconds: 1 },
      { policy: 'b', limit: 5, windowSeconds: 1, unit: 'content-bytes' },
    ]);
  });

  it('round-trips every state through the writer and the reader', () => {
    const states: LimitState[] = [
      tokenState,
      { policy: 'per-caller', limit: 60, windowSeconds: 60, remaining: 0, resetSeconds: 12 },
    ];
    const read = readRateLimitHeaders(rateLimitHeaders(states));
    expect(read.policies.map((p) => p.unit)).toEqual(['tokens', undefined]);
    expect(read.states.map((s) => s.unit)).toEqual(['tokens', undefined]);
  });

  it("the limiter's answers carry the usage policy's qu, admitted or refused", async () => {
    const clock = new ManualClock(1_000_000);
    const limiter = createLimiter({
      policies: [PER_CALLER, TOKENS],
      clock,
      domain: 'agents.example.com',
      eventLoopDelay: false,
    });
    const alice = { caller: 'alice', method: 'SendMessage' as const, binding: 'rest' as const };
    const first = await limiter.admit(alice);
    expect(first.status).toBe('admitted');
    if (first.status !== 'admitted') return;
    expect(first.ticket.headers['ratelimit-policy']).toBe(
      '"per-caller";q=60;w=60, "tokens";q=10000;qu="tokens";w=60',
    );
    first.ticket.end();
    await limiter.reportUsage(alice, 10_000);
    const refused = await limiter.admit(alice);
    expect(refused.status).toBe('rejected');
    if (refused.status !== 'rejected') return;
    const rest = limiter.encodeRest(refused.rejection, refused.limits);
    expect(rest.headers['ratelimit-policy']).toContain('"tokens";q=10000;qu="tokens";w=60');
    expect(rest.headers.ratelimit).toContain('"tokens";r=0;t=');
    await limiter.close();
  });
});

describe('the unit on the card', () => {
  it('the extension publishes the unit (the card reader and the pacers: src/client/pacer-table.test.ts)', () => {
    const limiter = createLimiter({
      policies: [PER_CALLER, TOKENS],
      domain: 'agents.example.com',
      eventLoopDelay: false,
    });
    const { policies } = publishedParams(limiter);
    expect(policies.find((p) => p.name === 'tokens')).toMatchObject({
      kind: 'rate',
      limit: 10_000,
      unit: 'tokens',
    });
    expect(policies.find((p) => p.name === 'per-caller')).not.toHaveProperty('unit');
    void limiter.close();
  });
});
