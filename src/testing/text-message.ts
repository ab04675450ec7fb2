/**
 * @module text-message
 * `textMessage`: one A2A 1.0 text `Message` in the SDK's object form, for tests, benchmarks and
 * example agents.
 */

import type { Message } from '@a2a-js/sdk';

/** `Role` values of the SDK's generated enum. */
const ROLES = { user: 1, agent: 2 } as const;

/**
 * What {@link textMessage} builds from.
 */
export interface TextMessageParts {
  readonly messageId: string;
  readonly text: string;
  /** Default `user`. */
  readonly role?: keyof typeof ROLES;
  /** Default `''` (none). */
  readonly taskId?: string;
  /** Default `''` (none). */
  readonly contextId?: string;
}

/**
 * A text message with every field the SDK's `Message` type requires.
 *
 * @example
 * ```ts
 * await client.sendMessage({ message: textMessage({ messageId: 'm-1', text: 'research X' }) });
 * bus.publish(AgentEvent.message(textMessage({ messageId: 'r-1', text: 'done', role: 'agent', contextId })));
 * ```
 */
export function textMessage(parts: TextMessageParts): Message {
  return {
    messageId: parts.messageId,
    contextId: parts.contextId ?? '',
    taskId: parts.taskId ?? '',
    role: ROLES[parts.role ?? 'user'],
    parts: [
      {
        content: { $case: 'text', value: parts.text },
        metadata: undefined,
        filename: '',
        mediaType: 'text/plain',
      },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  } as unknown as Message;
}
