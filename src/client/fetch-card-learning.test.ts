import { describe, expect, it } from 'vitest';
import { publishedAgentCard } from '../../packages/cli/src/simulated-agent.js';
import { learnAgentCardResponse, MAX_CARD_BYTES } from './fetch-card-learning.js';
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
    expect(scheduler.pacers.planFor('https://evil.example', 'c', 'SendMessage')).toBeDefined();
    expect(scheduler.pacers.planFor('https://victim.example', 'c', 'SendMessage')).toBeUndefined();
  });
});

describe('learnAgentCardResponse: the card is read by bytes, not by Content-Length', () => {
  const cardOf = async () =>
    JSON.stringify(
      await publishedAgentCard([
        { name: 'p', kind: 'rate', scope: 'caller', limit: 60, windowSeconds: 60, burst: 10 },
      ]),
    );
  /** A body of `text` then `padBytes` spaces, streamed in 64 KiB pieces, with the given headers. */
  function streamed(text: string, padBytes: number, headers: Record<string, string>) {
    let left = padBytes;
    let pulls = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulls++;
        if (pulls === 1) controller.enqueue(new TextEncoder().encode(text));
        else if (left > 0) {
          const n = Math.min(left, 65_536);
          left -= n;
          controller.enqueue(new Uint8Array(n).fill(0x20));
        } else controller.close();
      },
    });
    return { response: new Response(body, { headers }), pulls: () => pulls };
  }

  it('a card without Content-Length within the cap is learned', async () => {
    const scheduler = new RetryScheduler();
    const { response } = streamed(await cardOf(), 1_000, {});
    await learnAgentCardResponse(
      scheduler,
      'https://a.example/.well-known/agent-card.json',
      response,
      (u) => u.origin,
    );
    expect(scheduler.pacers.knows('https://a.example')).toBe(true);
  });

  it('a card whose Content-Length says 2 KiB but runs past the cap: reading stops there, not learned', async () => {
    const scheduler = new RetryScheduler();
    const huge = streamed(await cardOf(), 8 * MAX_CARD_BYTES, { 'content-length': '2048' });
    await learnAgentCardResponse(
      scheduler,
      'https://a.example/.well-known/agent-card.json',
      huge.response,
      (u) => u.origin,
    );
    expect(scheduler.pacers.knows('https://a.example')).toBe(false);
    // 1 MiB in 64 KiB pieces is 16 pulls; the source was cancelled long before its 128.
    expect(huge.pulls()).toBeLessThan(24);
  });
});
