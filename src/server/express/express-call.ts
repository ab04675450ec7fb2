/**
 * @module server/express/express-call
 * One Express request on its way through the admission pipeline (`ExpressCall`), its steps' type,
 * and the small readers both bindings classify with.
 */

import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { A2AMethod } from '../../core/a2a-methods.js';
import type { BindingSteps, PipelineCall } from '../admission-pipeline.js';
import { TICKET_HEADER } from '../limiter-api.js';
import type { Binding } from '../limiter-options.js';
import { ADMISSION_HEADER } from '../mediation.js';
import type { ExpressAdmissionOptions } from './express-options.js';
import type { PendingBody } from './json-body.js';

/** The pipeline steps of one Express middleware, and how it hands a request on. */
export interface ExpressSteps extends BindingSteps<ExpressCall> {
  readonly options: ExpressAdmissionOptions;
  /** Hands a request on: to `options.sdkHandler` when given, else to `next()`. */
  readonly pass: RequestHandler;
}

/** What an {@link ExpressCall} is made of, as a binding classified the request. */
export interface ExpressCallInit {
  readonly req: Request;
  readonly res: Response;
  readonly next: NextFunction;
  readonly binding: Binding;
  readonly method: A2AMethod;
  readonly tenant: string | undefined;
  readonly messageId?: string | undefined;
  /** A v0.3 request (default false). */
  readonly legacy?: boolean;
  /** JSON-RPC id (default null: none, and always on REST). */
  readonly id?: string | number | null;
  /** The body left unparsed until admitted, and the paths the decision read of it. */
  readonly pending?: PendingBody | undefined;
  readonly scannedPaths?: readonly string[];
}

/**
 * One request's admission state: what the limiter is asked (`caller` and `skill` are filled in by
 * the pipeline), what the answers need (JSON-RPC id, legacy form), and the Express request,
 * response and `next` it answers on. One object per request, built whole from its
 * {@link ExpressCallInit}.
 */
export class ExpressCall implements PipelineCall {
  caller = '';
  skill: string | undefined = undefined;
  readonly req: Request;
  readonly res: Response;
  readonly next: NextFunction;
  readonly binding: Binding;
  readonly method: A2AMethod;
  readonly tenant: string | undefined;
  readonly messageId: string | undefined;
  readonly legacy: boolean;
  /** JSON-RPC id (null on REST). */
  readonly id: string | number | null;
  /**
   * The body, when it is decided on what a scan read of it and parsed only once admitted; with
   * the paths whose values the decision used (the parsed body must agree).
   */
  pending: PendingBody | undefined;
  readonly scannedPaths: readonly string[];

  constructor(init: ExpressCallInit) {
    this.req = init.req;
    this.res = init.res;
    this.next = init.next;
    this.binding = init.binding;
    this.method = init.method;
    this.tenant = init.tenant;
    this.messageId = init.messageId;
    this.legacy = init.legacy ?? false;
    this.id = init.id ?? null;
    this.pending = init.pending;
    this.scannedPaths = init.scannedPaths ?? [];
  }
}

/** A non-empty string, else undefined. */
export function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** `params.message.messageId` (JSON-RPC) or `body.message.messageId` (REST). */
export function messageIdOf(params: unknown): string | undefined {
  const message = (params as { message?: { messageId?: unknown } } | null | undefined)?.message;
  return stringOrUndefined(message?.messageId);
}

/** A JSON-RPC body's id, or null. */
export function jsonRpcId(body: unknown): string | number | null {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** The `Content-Type` without its parameters, lower case (the common spelling read as it is). */
export function mediaType(headers: Request['headers']): string | undefined {
  const raw = headers['content-type'];
  if (raw === undefined || raw === 'application/json') return raw;
  return (raw.split(';', 1)[0] ?? '').trim().toLowerCase();
}

/** Removes the ticket and admission headers a caller sent: only the adapter sets them. */
export function clearMarks(headers: Request['headers']): void {
  if (headers[TICKET_HEADER] !== undefined) delete headers[TICKET_HEADER];
  if (headers[ADMISSION_HEADER] !== undefined) delete headers[ADMISSION_HEADER];
}
