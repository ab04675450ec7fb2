/**
 * @module example-agent-card
 * `exampleAgentCard`: a complete A2A 1.0 agent card in the SDK's object form, for tests, benchmarks
 * and example agents.
 */

import type { AgentCard } from '@a2a-js/sdk';

/**
 * What {@link exampleAgentCard} builds from.
 */
export interface ExampleAgentCardParts {
  readonly name: string;
  /** Default: the name. */
  readonly description?: string;
  /** Where the agent answers; more can be pushed to `supportedInterfaces` later. */
  readonly interfaces?: readonly { readonly url: string; readonly protocolBinding: string }[];
  /** Default false. */
  readonly extendedAgentCard?: boolean;
}

/**
 * A streaming-capable, text-in / text-out agent card with no skills and no security schemes.
 *
 * @example
 * ```ts
 * const card = exampleAgentCard({ name: 'echo', interfaces: [{ url, protocolBinding: 'JSONRPC' }] });
 * new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
 * ```
 */
export function exampleAgentCard(parts: ExampleAgentCardParts): AgentCard {
  return {
    name: parts.name,
    description: parts.description ?? parts.name,
    version: '0.0.1',
    provider: undefined,
    supportedInterfaces: (parts.interfaces ?? []).map((i) => ({
      url: i.url,
      protocolBinding: i.protocolBinding,
      tenant: '',
      protocolVersion: '1.0',
    })),
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extendedAgentCard: parts.extendedAgentCard ?? false,
      extensions: [],
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
    signatures: [],
  } as unknown as AgentCard;
}
