import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RATE_LIMIT_CARD_URI, readRateLimitCard } from './rate-limit-card.js';

function cardWith(params: unknown): unknown {
  return {
    name: 'agent',
    capabilities: {
      streaming: true,
      extensions: [
        { uri: 'urn:other', params: { policies: [] } },
        { uri: RATE_LIMIT_CARD_URI, params },
      ],
    },
  };
}

const perCaller = {
  name: 'per-caller',
  kind: 'rate',
  scope: 'caller',
  methods: ['SendMessage', 'SendStreamingMessage'],
  rejectAs: 'quota',
  limit: 60,
  windowSeconds: 60,
  burst: 10,
};

describe('readRateLimitCard', () => {
  it('reads rate and concurrency policies, leaves overload guards out, says whether messageIds are deduplicated', () => {
    const limits = readRateLimitCard(
      cardWith({
        policies: [
          perCaller,
          { name: 'tasks', kind: 'concurrency', scope: 'caller', methods: ['SendMessage'], max: 5 },
          { name: 'overload', kind: 'overload', scope: 'agent', maxInFlight: 500 },
        ],
        deduplicatesMessageIds: true,
      }),
    );
    expect(limits).toEqual({
      policies: [
        {
          kind: 'rate',
          name: 'per-caller',
          scope: 'caller',
          methods: ['SendMessage', 'SendStreamingMessage'],
          limit: 60,
          windowSeconds: 60,
          burst: 10,
          tiers: [],
        },
        { kind: 'concurrency', name: 'tasks', scope: 'caller', methods: ['SendMessage'], max: 5 },
      ],
      deduplicatesMessageIds: true,
    });
  });

  it('is undefined for a card without the extension, and for anything that is not a card', () => {
    for (const card of [
      undefined,
      null,
      42,
      'card',
      {},
      { capabilities: {} },
      { capabilities: { extensions: 'x' } },
      { capabilities: { extensions: [{ uri: 'urn:other' }] } },
    ]) {
      expect(readRateLimitCard(card)).toBeUndefined();
    }
    expect(readRateLimitCard(cardWith(undefined))).toEqual({
      policies: [],
      deduplicatesMessageIds: false,
    });
  });

  it('leaves malformed entries out: bad numbers, no name, no known method, repeated names', () => {
    const limits = readRateLimitCard(
      cardWith({
        policies: [
          { ...perCaller, name: 'zero', limit: 0 },
          { ...perCaller, name: 'fraction', windowSeconds: 1.5 },
          { ...perCaller, name: 'string', limit: '60' },
          { ...perCaller, name: undefined },
          { ...perCaller, name: 'nomethod', methods: ['Frobnicate'] },
          { ...perCaller, name: 'methods-not-a-list', methods: 'SendMessage' },
          { name: 'conc', kind: 'concurrency', max: -1 },
          { name: 'unknown-kind', kind: 'quota', limit: 1, windowSeconds: 1 },
          null,
          'policy',
          perCaller,
          { ...perCaller, limit: 1 },
        ],
      }),
    );
    expect(limits?.policies.map((p) => p.name)).toEqual(['per-caller']);
    expect(limits?.policies[0]).toMatchObject({ limit: 60 });
  });

  it('defaults: every method, caller scope, burst = limit; legacy method names read as 1.0 ones', () => {
    const limits = readRateLimitCard(
      cardWith({
        policies: [
          { name: 'a', kind: 'rate', limit: 5, windowSeconds: 60 },
          {
            name: 'b',
            kind: 'rate',
            methods: ['message/send', 'SendMessage'],
            limit: 5,
            windowSeconds: 1,
          },
        ],
      }),
    );
    expect(limits?.policies[0]).toMatchObject({ scope: 'caller', burst: 5 });
    expect(limits?.policies[0]?.methods).toHaveLength(11);
    expect(limits?.policies[1]?.methods).toEqual(['SendMessage']);
  });

  describe('tiers (the shape a tiered agent publishes)', () => {
    const tiers = [
      { name: 'free', limit: 60, windowSeconds: 60, burst: 10 },
      { name: 'pro', limit: 600, windowSeconds: 60, burst: 100 },
    ];

    it('public card: plans with the default tier, else the most restrictive one, and keeps every tier', () => {
      const withDefault = readRateLimitCard(
        cardWith({ policies: [{ name: 't', kind: 'rate', tiers, defaultTier: 'pro' }] }),
      );
      expect(withDefault?.policies[0]).toMatchObject({ limit: 600, burst: 100, tier: 'pro' });
      expect(withDefault?.policies[0]).toMatchObject({ tiers });
      const restrictive = readRateLimitCard(
        cardWith({ policies: [{ name: 't', kind: 'rate', tiers: [...tiers].reverse() }] }),
      );
      expect(restrictive?.policies[0]).toMatchObject({ limit: 60, burst: 10, tier: 'free' });
      const asRecord = readRateLimitCard(
        cardWith({
          policies: [
            {
              name: 't',
              kind: 'rate',
              tiers: { free: { limit: 60, windowSeconds: 60, burst: 10 }, bad: { limit: 0 } },
              limit: 30,
              windowSeconds: 60,
            },
          ],
        }),
      );
      // Top-level numbers win over a guess; the record's valid tiers are kept.
      expect(asRecord?.policies[0]).toMatchObject({ limit: 30, burst: 30 });
      expect(asRecord?.policies[0]).toMatchObject({ tiers: [tiers[0]] });
    });

    it('extended card: the caller’s own tier, named on the policy or on the extension', () => {
      const own = readRateLimitCard(
        cardWith({
          policies: [
            {
              name: 't',
              kind: 'rate',
              tiers,
              tier: 'pro',
              limit: 600,
              windowSeconds: 60,
              burst: 100,
            },
          ],
        }),
      );
      expect(own?.policies[0]).toMatchObject({ limit: 600, burst: 100, tier: 'pro' });
      const named = readRateLimitCard(
        cardWith({ callerTier: 'pro', policies: [{ name: 't', kind: 'rate', tiers }] }),
      );
      expect(named).toMatchObject({ callerTier: 'pro' });
      expect(named?.policies[0]).toMatchObject({ limit: 600, burst: 100, tier: 'pro' });
    });
  });

  it('never throws, whatever the card holds (property)', () => {
    fc.assert(
      fc.property(fc.anything(), fc.anything(), (params, policies) => {
        readRateLimitCard(params);
        readRateLimitCard(cardWith(params));
        const limits = readRateLimitCard(cardWith({ policies: [policies, params] }));
        for (const p of limits?.policies ?? []) {
          if (p.kind === 'rate') {
            expect(Number.isSafeInteger(p.limit) && p.limit > 0).toBe(true);
            expect(Number.isSafeInteger(p.burst) && p.burst > 0).toBe(true);
          } else expect(Number.isSafeInteger(p.max) && p.max > 0).toBe(true);
        }
      }),
    );
  });

  it('reads back the numbers of any valid published policy (property)', () => {
    const positive = fc.integer({ min: 1, max: 1_000_000 });
    fc.assert(
      fc.property(positive, positive, positive, positive, (limit, windowSeconds, burst, max) => {
        const limits = readRateLimitCard(
          cardWith({
            policies: [
              { ...perCaller, limit, windowSeconds, burst },
              { name: 'c', kind: 'concurrency', scope: 'caller+method', max },
            ],
          }),
        );
        expect(limits?.policies).toMatchObject([
          { kind: 'rate', limit, windowSeconds, burst },
          { kind: 'concurrency', scope: 'caller+method', max },
        ]);
      }),
    );
  });
});
