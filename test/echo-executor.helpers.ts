/**
 * An SDK agent executor that answers every message with a direct reply ("ok") and counts how
 * often it ran, for tests that check a rejected call never reached it.
 */

import { AgentEvent, type AgentExecutor } from '@a2a-js/sdk/server';
import { textMessage } from 'a2a-ratelimit/testing';

export function countingEchoExecutor(): { executor: AgentExecutor; executions: () => number } {
  let executions = 0;
  const executor: AgentExecutor = {
    async execute(ctx, bus) {
      executions++;
      bus.publish(
        AgentEvent.message(
          textMessage({ messageId: `r-${ctx.userMessage.messageId}`, text: 'ok', role: 'agent' }),
        ),
      );
      bus.finished();
    },
    async cancelTask() {},
  };
  return { executor, executions: () => executions };
}
