/**
 * @module server/express/duplicate-answers
 * How the Express bindings encode a copy of an admitted message (JSON-RPC, REST or SSE), or rewrite
 * it as the SubscribeToTask it becomes.
 */

import { formatSSEEvent, SendMessageResponse, SSE_HEADERS, StreamResponse } from '@a2a-js/sdk';
import { A2A_ERROR_CODE, toJsonRpcError, toRestErrorBody } from '@a2a-js/sdk/errors';
import { type ServerCallContext, UnauthenticatedUser } from '@a2a-js/sdk/server';
import type { Response } from 'express';
import {
  admitResubscription,
  type DuplicateAnswer,
  sdkCallContext,
} from '../admission-pipeline.js';
import type { ExpressCall, ExpressSteps } from './express-call.js';
import type { ExpressAdmissionOptions } from './express-options.js';
import { JSON_RPC_CONTENT, REST_CONTENT, writeHttp } from './misses.js';

/** The SDK call context for the dedup lookup: same user, tenant and headers the SDK would use. */
export async function duplicateContext(
  options: ExpressAdmissionOptions,
  call: ExpressCall,
): Promise<ServerCallContext> {
  const req = call.req;
  const user = options.userBuilder ? await options.userBuilder(req) : new UnauthenticatedUser();
  return sdkCallContext(
    {
      user,
      headers: req.headers,
      requestedVersion: req.header('a2a-version') || undefined,
      tenant: call.tenant,
    },
    options.contextBuilder,
  );
}

function sseOneEvent(res: Response, frame: unknown): void {
  res.status(200);
  for (const [name, value] of Object.entries(SSE_HEADERS)) res.setHeader(name, value);
  res.end(formatSSEEvent(frame));
}

/** Writes a duplicate's answer in the call's binding (or resubscribes it). */
export function writeDuplicate(
  steps: ExpressSteps,
  call: ExpressCall,
  answer: DuplicateAnswer,
): void {
  if (call.binding === 'jsonrpc') writeJsonRpcDuplicate(steps, call, answer);
  else writeRestDuplicate(steps, call, answer);
}

function writeJsonRpcDuplicate(
  steps: ExpressSteps,
  call: ExpressCall,
  answer: DuplicateAnswer,
): void {
  const { req, res } = call;
  switch (answer.kind) {
    case 'message': {
      const payload = { payload: { $case: 'message' as const, value: answer.message } };
      if (!answer.stream) {
        const result = SendMessageResponse.toJSON(payload);
        res.status(200).json({ jsonrpc: '2.0', id: call.id, result });
      } else
        sseOneEvent(res, { jsonrpc: '2.0', id: call.id, result: StreamResponse.toJSON(payload) });
      return;
    }
    case 'no-task': {
      const error = { code: A2A_ERROR_CODE.INVALID_REQUEST, message: answer.message };
      const body = JSON.stringify({ jsonrpc: '2.0', id: call.id, error });
      writeHttp(res, 200, JSON_RPC_CONTENT, body);
      return;
    }
    case 'lookup-failed':
      res.status(200).json({ jsonrpc: '2.0', id: call.id, error: toJsonRpcError(answer.error) });
      return;
    case 'task':
    case 'final-event': {
      const result = SendMessageResponse.toJSON({ payload: { $case: 'task', value: answer.task } });
      if (answer.kind === 'task') res.status(200).json({ jsonrpc: '2.0', id: call.id, result });
      else sseOneEvent(res, { jsonrpc: '2.0', id: call.id, result });
      return;
    }
    case 'resubscribe':
      // Resubscribe: the SDK streams the live task (first event: the task).
      req.body = {
        jsonrpc: '2.0',
        id: call.id,
        method: 'SubscribeToTask',
        params: {
          id: answer.taskId,
          ...(call.tenant === undefined ? {} : { tenant: call.tenant }),
        },
      };
      admitResubscription(steps, call);
  }
}

function writeRestDuplicate(steps: ExpressSteps, call: ExpressCall, answer: DuplicateAnswer): void {
  const { req, res } = call;
  switch (answer.kind) {
    case 'message': {
      const payload = { payload: { $case: 'message' as const, value: answer.message } };
      if (!answer.stream) {
        writeHttp(res, 200, REST_CONTENT, JSON.stringify(SendMessageResponse.toJSON(payload)));
      } else sseOneEvent(res, StreamResponse.toJSON(payload));
      return;
    }
    case 'no-task': {
      const error = { code: 409, status: 'ALREADY_EXISTS', message: answer.message, details: [] };
      writeHttp(res, 409, REST_CONTENT, JSON.stringify({ error }));
      return;
    }
    case 'lookup-failed':
      writeHttp(res, 404, REST_CONTENT, JSON.stringify(toRestErrorBody(answer.error, 404)));
      return;
    case 'task':
    case 'final-event': {
      const payload = { payload: { $case: 'task' as const, value: answer.task } };
      if (answer.kind === 'task') {
        writeHttp(res, 200, REST_CONTENT, JSON.stringify(SendMessageResponse.toJSON(payload)));
      } else sseOneEvent(res, StreamResponse.toJSON(payload));
      return;
    }
    case 'resubscribe': {
      const prefix = call.tenant === undefined ? '' : `/${encodeURIComponent(call.tenant)}`;
      req.url = `${prefix}/tasks/${encodeURIComponent(answer.taskId)}:subscribe`;
      admitResubscription(steps, call);
    }
  }
}
