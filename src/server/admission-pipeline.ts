/**
 * @module server/admission-pipeline
 * The admission flow every binding runs, written once and binding-neutral: identity → skill →
 * `limiter.admit` → admitted, rejected or duplicate.
 */

import type { Message, Task } from '@a2a-js/sdk';
import {
  type A2ARequestHandler,
  defaultServerCallContextBuilder,
  type ServerCallContext,
  type ServerCallContextBuilder,
  type User,
} from '@a2a-js/sdk/server';
import type { A2AMethod } from '../core/a2a-methods.js';
import { TERMINAL_TASK_STATES } from '../core/task-events.js';
import type { AdmissionOutcome, AdmissionTicket, Limiter } from './limiter-api.js';
import type { AdmissionRequest } from './limiter-options.js';
import type { MessageAnswer } from './message-answer.js';

/** A rejected admission: the `Rejection` and the rate states its headers report. */
export type RejectedOutcome = Extract<AdmissionOutcome, { status: 'rejected' }>;

/**
 * Where an admission failed: the caller's identity (a `UserBuilder` or `identify` threw), the
 * decision (a `skill` function, the limiter or its store threw), or the resubscription of a
 * duplicate stream (its admission, or the lookup of the task).
 */
export const ADMISSION_STAGE = {
  identity: 'identity',
  decision: 'decision',
  resubscription: 'resubscription',
} as const;

/** One of {@link ADMISSION_STAGE}. */
export type AdmissionStage = (typeof ADMISSION_STAGE)[keyof typeof ADMISSION_STAGE];

/**
 * One call on its way through the pipeline: what the limiter is asked (`caller` and `skill` are
 * filled in by the pipeline), and whether it came in the SDK's v0.3 form. A binding extends it
 * with what its answers need (the Express request and response, the JSON-RPC id, the gRPC call).
 */
export interface PipelineCall extends AdmissionRequest {
  caller: string;
  skill: string | undefined;
  /** A v0.3 request: a duplicate stream is answered with one event, never resubscribed. */
  readonly legacy: boolean;
}

/**
 * What a binding gives the pipeline, once per handler. Each step gets the call it is about; none
 * but `identify` and `skillOf` may throw.
 */
export interface BindingSteps<C extends PipelineCall> {
  readonly limiter: Limiter;
  /** The caller's key: a string, or a promise of one. May throw (stage `identity`). */
  identify(call: C): string | PromiseLike<string>;
  /** The skill the call targets, or undefined. May throw (stage `decision`). */
  skillOf(call: C): string | undefined;
  /**
   * The client hung up (while an asynchronous identity or store decided): an admitted ticket is
   * then ended at once and nothing runs.
   */
  isGone(call: C): boolean;
  /** Admitted as `method` (the call's own, or SubscribeToTask for a resubscription): run it. */
  run(call: C, ticket: AdmissionTicket, method: A2AMethod): void;
  /** Rejected: answer with the encoded rejection. */
  reject(call: C, outcome: RejectedOutcome): void;
  /** A copy of an admitted message: answer it (see {@link resolveDuplicate}). */
  duplicate(call: C, taskId: string | undefined, answer?: MessageAnswer): Promise<void>;
  /** The admission failed at `stage`: answer with an error, run nothing. */
  fail(call: C, error: unknown, stage: AdmissionStage): void;
}

function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/**
 * Runs identity → decision → outcome for one call. Plain functions with the call as argument:
 * nothing is allocated but the promise callbacks of an identity or store that is asynchronous.
 */
export function admitCall<C extends PipelineCall>(steps: BindingSteps<C>, call: C): void {
  let caller: string | PromiseLike<string>;
  try {
    caller = steps.identify(call);
  } catch (error) {
    steps.fail(call, error, ADMISSION_STAGE.identity);
    return;
  }
  if (typeof caller === 'string') {
    decideCall(steps, call, caller);
    return;
  }
  caller.then(
    (value) => decideCall(steps, call, value),
    (error: unknown) => steps.fail(call, error, ADMISSION_STAGE.identity),
  );
}

function decideCall<C extends PipelineCall>(steps: BindingSteps<C>, call: C, caller: string): void {
  try {
    call.caller = caller;
    call.skill = steps.skillOf(call);
    const outcome = steps.limiter.admit(call);
    if (isPromiseLike(outcome)) {
      outcome.then(
        (o) => settle(steps, call, o),
        (error: unknown) => steps.fail(call, error, ADMISSION_STAGE.decision),
      );
    } else settle(steps, call, outcome);
  } catch (error) {
    steps.fail(call, error, ADMISSION_STAGE.decision);
  }
}

function settle<C extends PipelineCall>(
  steps: BindingSteps<C>,
  call: C,
  outcome: AdmissionOutcome,
): void {
  try {
    if (outcome.status === 'admitted') {
      if (steps.isGone(call)) outcome.ticket.end();
      else steps.run(call, outcome.ticket, call.method);
    } else if (outcome.status === 'duplicate') {
      steps
        .duplicate(call, outcome.taskId, outcome.answer)
        .catch((error: unknown) => steps.fail(call, error, ADMISSION_STAGE.resubscription));
    } else steps.reject(call, outcome);
  } catch (error) {
    steps.fail(call, error, ADMISSION_STAGE.decision);
  }
}

/**
 * Decides the resubscription a copy of a still-running stream becomes (a stream like any other:
 * `Limiter.admitResubscription`) and, admitted, runs it as SubscribeToTask through `steps.run`.
 */
export function admitResubscription<C extends PipelineCall>(steps: BindingSteps<C>, call: C): void {
  const step = (outcome: AdmissionOutcome): void => {
    if (outcome.status === 'admitted') {
      if (steps.isGone(call)) outcome.ticket.end();
      else steps.run(call, outcome.ticket, 'SubscribeToTask');
    } else if (outcome.status === 'rejected') steps.reject(call, outcome);
    else {
      const error = new Error('a resubscription cannot be a duplicate');
      steps.fail(call, error, ADMISSION_STAGE.resubscription);
    }
  };
  const fail = (error: unknown): void => steps.fail(call, error, ADMISSION_STAGE.resubscription);
  try {
    const outcome = steps.limiter.admitResubscription(call);
    if (isPromiseLike(outcome)) {
      outcome.then((o) => {
        try {
          step(o);
        } catch (error) {
          fail(error);
        }
      }, fail);
    } else step(outcome);
  } catch (error) {
    fail(error);
  }
}

/**
 * How a copy of an admitted message is answered, for the binding to encode:
 * - `message`: the first copy was answered with `message` (no task), kept in its record: the
 *   same Message again — the response of a SendMessage, the one event of a stream (`stream`);
 * - `no-task`: the first copy ran and answered without a task, and its answer was not kept (past
 *   `dedup.answers`' bounds, or asked in another SDK scope); `message` says so (JSON-RPC
 *   invalid request, REST 409 / gRPC ALREADY_EXISTS);
 * - `lookup-failed`: the task could not be read (`error`, as the SDK's `getTask` threw it);
 * - `task`: a SendMessage copy, answered with the task as its response;
 * - `final-event`: a stream copy whose task is done (or a v0.3 request): one event, the task;
 * - `resubscribe`: a stream copy whose task still runs: it becomes SubscribeToTask on `taskId`
 *   (decided by {@link admitResubscription}), with the call context the lookup used.
 */
export type DuplicateAnswer =
  | { readonly kind: 'message'; readonly message: Message; readonly stream: boolean }
  | { readonly kind: 'no-task'; readonly message: string }
  | { readonly kind: 'lookup-failed'; readonly error: unknown }
  | { readonly kind: 'task'; readonly task: Task }
  | { readonly kind: 'final-event'; readonly task: Task }
  | {
      readonly kind: 'resubscribe';
      readonly task: Task;
      readonly taskId: string;
      readonly context: ServerCallContext;
    };

/** What {@link sdkCallContext} builds a context from, as the SDK's routers gather it. */
export interface CallContextSource {
  readonly user: User;
  readonly headers: Record<string, unknown>;
  readonly requestedVersion: string | undefined;
  readonly tenant: string | undefined;
}

/**
 * The SDK call context for a duplicate's task lookup: the same user, tenant, headers and
 * requested version the SDK would use, built by the agent's context builder (or the SDK's).
 */
export function sdkCallContext(
  source: CallContextSource,
  build: ServerCallContextBuilder = defaultServerCallContextBuilder,
): ServerCallContext {
  const { user, headers, requestedVersion, tenant } = source;
  return build({
    extensions: undefined,
    user,
    headers: headers as Parameters<ServerCallContextBuilder>[0]['headers'],
    ...(requestedVersion === undefined ? {} : { requestedVersion }),
    ...(tenant === undefined ? {} : { tenant }),
  });
}

/**
 * Finds how a copy of an admitted message is answered: the task of the first copy, fetched with
 * `contextOf()` as the SDK would fetch it for this caller, and what the copy's method makes of it;
 * or the Message the first copy was answered with, when the copy comes in the same SDK scope
 * (tenant and user: the scope the SDK would read the task in).
 */
export async function resolveDuplicate(
  handler: A2ARequestHandler,
  call: PipelineCall,
  taskId: string | undefined,
  contextOf: () => ServerCallContext | Promise<ServerCallContext>,
  answer?: MessageAnswer,
): Promise<DuplicateAnswer> {
  if (taskId === undefined) {
    if (answer !== undefined) {
      const context = await contextOf();
      if (
        (context.tenant ?? '') === answer.tenant &&
        (context.user?.userName ?? '') === answer.owner
      ) {
        const stream = call.method !== 'SendMessage';
        return { kind: 'message', message: answer.message as Message, stream };
      }
    }
    return {
      kind: 'no-task',
      message: `Message ${call.messageId ?? ''} was already received and processed without creating a task; it is not run again`,
    };
  }
  const context = await contextOf();
  let task: Task;
  try {
    task = await handler.getTask({ id: taskId, tenant: call.tenant ?? '' }, context);
  } catch (error) {
    return { kind: 'lookup-failed', error };
  }
  if (call.method === 'SendMessage') return { kind: 'task', task };
  if (TERMINAL_TASK_STATES.has(task.status?.state ?? 0) || call.legacy) {
    return { kind: 'final-event', task };
  }
  return { kind: 'resubscribe', task, taskId, context };
}
