/**
 * @module grpc-sightings
 * What a relayed gRPC answer says about tasks (ids, states, metadata, Message answers), and the
 * `GetTaskRequest` the gateway writes.
 */

import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { grpcMessageJson } from './grpc-message.js';
import { decodeStruct } from './grpc-struct.js';
import type { TaskSighting } from './task-sightings.js';

/** How a method's answer message is laid out. */
export type GrpcAnswerShape = 'wrapped' | 'task';

/** The answer shape of the methods whose answers name tasks (others are not read). */
export const GRPC_OBSERVED: Readonly<Record<string, GrpcAnswerShape>> = {
  SendMessage: 'wrapped',
  SendStreamingMessage: 'wrapped',
  SubscribeToTask: 'wrapped',
  GetTask: 'task',
  CancelTask: 'task',
};

/** The fields of one message: length-delimited ones as sub-readers, varints as numbers. */
function readFields(
  bytes: Uint8Array,
  onField: (field: number, reader: BinaryReader, wireType: WireType) => boolean,
): void {
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (!onField(field, reader, wireType)) reader.skip(wireType, field);
  }
}

/** The state of a `TaskStatus` message. */
function stateOf(status: Uint8Array): number | undefined {
  let state: number | undefined;
  readFields(status, (field, reader, wireType) => {
    if (field !== 1 || wireType !== WireType.Varint) return false;
    state = reader.int32();
    return true;
  });
  return state;
}

/**
 * A Task's (or a status update's) id (field 1), status state (field 3) and `metadata` Struct
 * (Task: 6, status update: 4), the last in its JSON form where usage reports are read.
 */
function taskOf(bytes: Uint8Array, metadataField: 6 | 4): TaskSighting | undefined {
  let id = '';
  let state: number | undefined;
  let metadata: Record<string, unknown> | undefined;
  readFields(bytes, (field, reader, wireType) => {
    if (wireType !== WireType.LengthDelimited) return false;
    if (field === 1) id = reader.string();
    else if (field === 3) state = stateOf(reader.bytes());
    else if (field === metadataField) metadata = decodeStruct(reader.bytes());
    else return false;
    return true;
  });
  if (id === '') return undefined;
  const sighting = { kind: 'task' as const, taskId: id, state: state ?? 0 };
  return metadata === undefined
    ? sighting
    : { ...sighting, object: { id, status: { state: state ?? 0 }, metadata } };
}

/**
 * The task one answer message of a method of `shape` names, or the Message it is (its JSON form,
 * kept for copies of the request); undefined when it names neither or cannot be read.
 *
 * @example
 * ```ts
 * grpcSightingOf('task', taskBytes); // { kind: 'task', taskId: 't-1', state: 2 }
 * ```
 */
export function grpcSightingOf(
  shape: GrpcAnswerShape,
  bytes: Uint8Array,
): TaskSighting | undefined {
  try {
    if (shape === 'task') return taskOf(bytes, 6);
    let sighting: TaskSighting | undefined;
    readFields(bytes, (field, reader, wireType) => {
      if (wireType !== WireType.LengthDelimited || field < 1 || field > 3) return false;
      if (field === 2) {
        const message = grpcMessageJson(reader.bytes());
        sighting = message === undefined ? undefined : { kind: 'message', message };
      } else sighting = taskOf(reader.bytes(), field === 1 ? 6 : 4);
      return true;
    });
    return sighting;
  } catch {
    return undefined;
  }
}

/**
 * A `GetTaskRequest{tenant = 1, id = 2}`, encoded.
 *
 * @example
 * ```ts
 * encodeGetTaskRequest('t-1', undefined);
 * ```
 */
export function encodeGetTaskRequest(taskId: string, tenant: string | undefined): Uint8Array {
  const writer = new BinaryWriter();
  if (tenant !== undefined && tenant !== '') writer.tag(1, WireType.LengthDelimited).string(tenant);
  writer.tag(2, WireType.LengthDelimited).string(taskId);
  return writer.finish();
}

/**
 * A `SendMessageResponse` / `StreamResponse` whose payload is the encoded Task `task` (field 1),
 * the Task's bytes as the upstream sent them.
 *
 * @example
 * ```ts
 * stream.write(grpcFrame(wrapTask(taskBytes)));
 * ```
 */
export function wrapTask(task: Uint8Array): Uint8Array {
  return new BinaryWriter().tag(1, WireType.LengthDelimited).bytes(task).finish();
}

/** The `url` (4) of an encoded `TaskPushNotificationConfig`. */
/**
 * A field a webhook is read through, sent with another wire type: one parser's unknown field,
 * another's value (protobufjs reads by field number alone), so the request is unreadable.
 */
function mustBeLengthDelimited(wireType: WireType): void {
  if (wireType !== WireType.LengthDelimited) throw new RangeError('a field of another wire type');
}

function pushUrlOf(config: Uint8Array): string | undefined {
  let url: string | undefined;
  readFields(config, (field, reader, wireType) => {
    if (field !== 4) return false;
    mustBeLengthDelimited(wireType);
    url = reader.string();
    return true;
  });
  return url === '' ? undefined : url;
}

/**
 * The webhook URLs a request would have the agent call: a SendMessage's
 * `configuration.task_push_notification_config.url` (3 → 2 → 4) and a
 * CreateTaskPushNotificationConfig's `url` (4). Undefined when the bytes cannot be read, or one
 * of these fields comes with another wire type.
 *
 * @example
 * ```ts
 * grpcWebhookUrls('CreateTaskPushNotificationConfig', bytes); // ['https://hooks.example/a']
 * ```
 */
export function grpcWebhookUrls(method: string, bytes: Uint8Array): string[] | undefined {
  try {
    if (method === 'CreateTaskPushNotificationConfig') {
      const url = pushUrlOf(bytes);
      return url === undefined ? [] : [url];
    }
    if (method !== 'SendMessage' && method !== 'SendStreamingMessage') return [];
    const urls: string[] = [];
    readFields(bytes, (field, reader, wireType) => {
      if (field !== 3) return false;
      mustBeLengthDelimited(wireType);
      readFields(reader.bytes(), (inner, innerReader, innerType) => {
        if (inner !== 2) return false;
        mustBeLengthDelimited(innerType);
        const url = pushUrlOf(innerReader.bytes());
        if (url !== undefined) urls.push(url);
        return true;
      });
      return true;
    });
    return urls;
  } catch {
    return undefined;
  }
}
