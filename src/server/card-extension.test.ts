import { describe, expect, it } from 'vitest';
import { rateLimitExtension } from './card-extension.js';
import { createLimiter } from './limiter.js';

describe('card extension: overload policies', () => {
  it("publishes a caller's share of maxInFlight (the default one too), and none when off", async () => {
    const limiter = createLimiter({
      policies: [
        { name: 'agent-overload', kind: 'overload', maxInFlight: 500, maxEventLoopDelayMs: 250 },
        { name: 'no-share', kind: 'overload', maxInFlight: 100, maxInFlightPerCaller: false },
      ],
      domain: 'agents.example.com',
      dedup: false,
      eventLoopDelay: false,
    });
    try {
      expect(rateLimitExtension(limiter).params.policies).toMatchObject([
        {
          name: 'agent-overload',
          kind: 'overload',
          rejectAs: 'overload',
          maxInFlight: 500,
          maxInFlightPerCaller: 50,
          maxEventLoopDelayMs: 250,
        },
        { name: 'no-share', maxInFlight: 100 },
      ]);
      expect(rateLimitExtension(limiter).params.policies[1]).not.toHaveProperty(
        'maxInFlightPerCaller',
      );
    } finally {
      await limiter.close();
    }
  });
});
