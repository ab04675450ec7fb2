import { describe, expect, it } from 'vitest';
import { agentCardTargets } from './agent-card-targets.js';
import { isAgentCardRequest } from './fetch-card-learning.js';

describe('agentCardTargets', () => {
  it('keys HTTP interfaces by origin and gRPC ones as written (A2A 1.0 cards)', () => {
    const targets = agentCardTargets({
      supportedInterfaces: [
        { url: 'http://127.0.0.1:8080/a2a/jsonrpc', protocolBinding: 'JSONRPC' },
        { url: 'http://127.0.0.1:8080/a2a/rest', protocolBinding: 'HTTP+JSON' },
        { url: '127.0.0.1:50051', protocolBinding: 'GRPC' },
      ],
    });
    expect(targets).toEqual({
      httpUrls: ['http://127.0.0.1:8080/a2a/jsonrpc', 'http://127.0.0.1:8080/a2a/rest'],
      grpcTargets: ['127.0.0.1:50051'],
      keys: ['http://127.0.0.1:8080', '127.0.0.1:50051'],
    });
  });

  it('reads v0.3 cards (url, preferredTransport, additionalInterfaces) and ignores anything else', () => {
    expect(
      agentCardTargets({
        url: 'https://a.example/rpc',
        preferredTransport: 'JSONRPC',
        additionalInterfaces: [{ url: 'a.example:443', transport: 'GRPC' }, { url: 7 }],
      }).keys,
    ).toEqual(['a.example:443', 'https://a.example']);
    for (const card of [undefined, 'card', [], { supportedInterfaces: 'x' }]) {
      expect(agentCardTargets(card)).toEqual({ httpUrls: [], grpcTargets: [], keys: [] });
    }
  });
});

describe('isAgentCardRequest', () => {
  it('is a GET of the well-known card (1.0 or v0.3 path), nothing else', () => {
    expect(isAgentCardRequest('GET', 'http://a/.well-known/agent-card.json')).toBe(true);
    expect(isAgentCardRequest('get', 'http://a/x/.well-known/agent.json')).toBe(true);
    expect(isAgentCardRequest('POST', 'http://a/.well-known/agent-card.json')).toBe(false);
    expect(isAgentCardRequest('GET', 'http://a/agent-card.json')).toBe(false);
    expect(isAgentCardRequest('GET', 'not a url')).toBe(false);
  });
});
