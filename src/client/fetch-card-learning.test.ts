import { describe, expect, it } from 'vitest';
import { publishedAgentCard } from '../../packages/cli/src/simulated-agent.js';
import { learnAgentCardResponse } from './fetch-card-learning.js';
import { RetryScheduler } from './retry-scheduler.js';

describe('learnAgentCardResponse: a card plans only for its own origin', () => {
  it('a card fetched from one origin does not set the plan of another origin it lists', async () => {
    const strict = (await publishedAgentCard([
      { name: 'p', kind: 'rate', scope: 'caller', limit: 1, windowSeconds: 3600, burst: 1 },
    ])) as Record<string, unknown>;
    const card = {
      ...strict,
      supportedInterfaces: [
        { url: 'https://victim.example/a2a/jsonrpc', protocolBinding: 'JSONRPC' },
      ],
    };
    const scheduler = new RetryScheduler();
    await learnAgentCardResponse(
      scheduler,
      'https://evil.example/.well-known/agent-card.json',
      new Response(JSON.stringify(card), { headers: { 'content-type': 'application/json' } }),
      (u) => u.origin,
    );
    expect(scheduler.plans.planFor('https://evil.example', 'c', 'SendMessage')).toBeDefined();
    expect(scheduler.plans.planFor('https://victim.example', 'c', 'SendMessage')).toBeUndefined();
  });
});
