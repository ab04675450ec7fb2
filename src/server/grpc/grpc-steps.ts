/**
 * @module server/grpc/grpc-steps
 * The gRPC side of the admission pipeline: identity from metadata, marking, Trailers-Only
 * rejections, duplicates' answers and failures.
 */

import {
  type A2ARequestHandler,
  type ServerCallContext,
  UnauthenticatedUser,
  type User,
} from '@a2a-js/sdk/server';
import type { UserBuilder } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import {
  ADMISSION_STAGE,
  admitResubscription,
  type BindingSteps,
  resolveDuplicate,
  sdkCallContext,
} from '../admission-pipeline.js';
import {
  type AddressKeyOptions,
  anonymousKeyOf,
  authenticatedCallerKey,
  createAddressKey,
} from '../caller-key.js';
import { type AdmissionTicket, type Limiter, TICKET_HEADER } from '../limiter-api.js';
import { ADMISSION_HEADER, admissionMark } from '../mediation.js';
import { WriteWatch, writeDeadlineOf } from '../write-watch.js';
import type { GrpcCall } from './grpc-call.js';
import type { GrpcAdmissionOptions, GrpcIdentify } from './grpc-options.js';

function remoteKeyOf(
  options: AddressKeyOptions,
): (call: grpc.ServerInterceptingCallInterface) => string {
  const keyOf = createAddressKey(options);
  return (call) => {
    const address = call.getConnectionInfo().remoteAddress;
    if (address) return keyOf(address);
    const peer = call.getPeer().replace(/^ipv[46]:/, '');
    return keyOf(peer.replace(/:\d+$/, '').replace(/^\[|\]$/g, ''));
  };
}

function toMetadata(values: Readonly<Record<string, string | Uint8Array>>): grpc.Metadata {
  const md = new grpc.Metadata();
  for (const [key, value] of Object.entries(values)) {
    md.set(key, typeof value === 'string' ? value : Buffer.from(value));
  }
  return md;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The `UserBuilder` argument: a call-like object (the SDK's call object does not exist yet). */
function userOf(
  builder: UserBuilder,
  metadata: grpc.Metadata,
  call: grpc.ServerInterceptingCallInterface,
): Promise<User> {
  const shim = { metadata, getPeer: () => call.getPeer() };
  return Promise.resolve(builder(shim as unknown as Parameters<UserBuilder>[0]));
}

/** The pipeline steps of one interceptor. */
export function createGrpcSteps(
  limiter: Limiter,
  options: GrpcAdmissionOptions,
): BindingSteps<GrpcCall> {
  if (limiter.dedupMethods.size > 0 && options.requestHandler === undefined) {
    throw new TypeError(
      'a2a-ratelimit: deduplication is on, so the gRPC interceptor needs `requestHandler` (the SDK handler) to answer a duplicate with its task; or create the limiter with `dedup: false`',
    );
  }
  const fallback =
    options.unauthenticatedKey === undefined
      ? remoteKeyOf(options)
      : anonymousKeyOf(options.unauthenticatedKey);
  const builder = options.userBuilder;
  const identify: GrpcIdentify =
    options.identify ??
    (builder === undefined
      ? (_md, call) => fallback(call)
      : async (metadata, call) => {
          const user = await userOf(builder, metadata, call);
          return user.isAuthenticated && user.userName
            ? authenticatedCallerKey(user.userName)
            : fallback(call);
        });
  const skill = options.skill;
  const writes = new WriteWatch(writeDeadlineOf(options.writeDeadlineMs));

  /** The SDK call context of a duplicate's lookup, from the call's metadata. */
  const contextOf = async (call: GrpcCall): Promise<ServerCallContext> => {
    const user = builder
      ? await userOf(builder, call.metadata, call.call)
      : new UnauthenticatedUser();
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(call.metadata.getMap())) headers[k] = v.toString();
    return sdkCallContext({
      user,
      headers,
      requestedVersion: headers['a2a-version'],
      tenant: call.tenant,
    });
  };

  /** Streams the live task of a duplicate stream, once its resubscription is admitted. */
  const streamTask = async (
    call: GrpcCall,
    taskId: string,
    context: ServerCallContext,
  ): Promise<void> => {
    const handler = options.requestHandler as A2ARequestHandler;
    const stream = handler.resubscribe({ id: taskId, tenant: call.tenant ?? '' }, context);
    const iterator = stream[Symbol.asyncIterator]();
    call.abort = () => void iterator.return?.(undefined);
    for (;;) {
      const next = await iterator.next();
      if (next.done || call.done) break;
      await call.send(next.value);
    }
    call.succeed();
  };

  const steps: BindingSteps<GrpcCall> = {
    limiter,
    identify: (call) => identify(call.metadata, call.call),
    skillOf: (call) => skill?.(call.message, call.metadata),
    isGone: (call) => call.done,
    run(call, ticket: AdmissionTicket, method) {
      call.ticket = ticket;
      // A call holding leases must not keep them past a response the caller never reads.
      if (ticket.needsEnd) call.watchWrites(writes);
      const resubscription = call.resubscription;
      if (resubscription !== undefined) {
        streamTask(call, resubscription.taskId, resubscription.context).catch((error: unknown) =>
          call.fail(grpc.status.INTERNAL, messageOf(error)),
        );
        return;
      }
      const undecodable = call.decodeAdmitted();
      if (undecodable !== undefined) {
        call.fail(grpc.status.INTERNAL, undecodable);
        return;
      }
      // The SDK side looks a ticket up only when it holds something.
      if (ticket.needsEnd) call.metadata.set(TICKET_HEADER, ticket.id);
      call.metadata.set(ADMISSION_HEADER, admissionMark(method));
      call.forward(call.message);
    },
    reject(call, outcome) {
      if (call.done) return;
      const encoded = limiter.encodeGrpc(outcome.rejection, outcome.limits);
      call.done = true;
      call.call.sendStatus({
        code: encoded.code,
        details: encoded.message,
        metadata: toMetadata(encoded.trailers),
      });
    },
    async duplicate(call, taskId, kept) {
      if (call.done) return;
      const handler = options.requestHandler as A2ARequestHandler;
      const answer = await resolveDuplicate(handler, call, taskId, () => contextOf(call), kept);
      switch (answer.kind) {
        case 'message':
          await call.send({ payload: { $case: 'message', value: answer.message } });
          call.succeed();
          return;
        case 'no-task':
          call.fail(grpc.status.ALREADY_EXISTS, answer.message);
          return;
        case 'lookup-failed':
          call.fail(grpc.status.NOT_FOUND, messageOf(answer.error));
          return;
        case 'task':
        case 'final-event':
          await call.send({ payload: { $case: 'task', value: answer.task } });
          call.succeed();
          return;
        case 'resubscribe':
          // The resubscription is a stream like any other: decided before it opens.
          call.resubscription = { taskId: answer.taskId, context: answer.context };
          admitResubscription(steps, call);
      }
    },
    fail(call, error, stage) {
      if (stage === ADMISSION_STAGE.identity) {
        call.fail(grpc.status.UNAUTHENTICATED, `identity failed: ${String(error)}`);
      } else if (stage === ADMISSION_STAGE.decision) {
        call.fail(grpc.status.INTERNAL, `rate limiter failed: ${String(error)}`);
      } else call.fail(grpc.status.INTERNAL, messageOf(error));
    },
  };
  return steps;
}
