/**
 * @module server/grpc/encoded-request
 * A2A request messages left encoded until admitted: the service definition that keeps the bytes,
 * the size bound, and the fields read from the bytes.
 */

import type * as grpc from '@grpc/grpc-js';

/** Default largest A2A request message accepted, in bytes: 1 MiB (grpc-js's own default is 4 MiB). */
export const DEFAULT_GRPC_MAX_MESSAGE_BYTES = 1024 * 1024;

/**
 * One request message as received, not decoded yet: the interceptor decides on the fields a
 * scan of its bytes reads (`scanRequestFields`) and decodes it (`decode()`) only once it is
 * admitted. A message larger than the bound keeps no bytes (`tooLarge`).
 */
export class EncodedRequest {
  constructor(
    /** The message's size, bytes. */
    readonly size: number,
    /** The bound it was received under, bytes. */
    readonly maxBytes: number,
    private readonly bytes: Buffer | undefined,
    private readonly decoder: (bytes: Buffer) => unknown,
  ) {}

  /** Larger than {@link EncodedRequest.maxBytes}: refused, never decoded. */
  get tooLarge(): boolean {
    return this.bytes === undefined;
  }

  /** The encoded bytes (empty when too large). */
  get encoded(): Uint8Array {
    return this.bytes ?? new Uint8Array(0);
  }

  /** Decodes the message with the service's own deserializer (throws as it throws). */
  decode(): unknown {
    if (this.bytes === undefined) throw new RangeError('message too large');
    return this.decoder(this.bytes);
  }
}

/** Options of {@link rateLimitedServiceDefinition}. */
export interface ServiceDefinitionOptions {
  /** Largest request message accepted, bytes; default {@link DEFAULT_GRPC_MAX_MESSAGE_BYTES}. */
  readonly maxMessageBytes?: number;
}

/**
 * The A2A service definition (the SDK's `A2AService`, or its v0.3 one) with every request
 * message left encoded until `grpcAdmissionInterceptor` admits it: a refused call's message is
 * never decoded, and one larger than `maxMessageBytes` (default 1 MiB) is refused with
 * RESOURCE_EXHAUSTED "message too large" before anything is read from it. Give it to
 * `server.addService` with `rateLimitedGrpcService`; without the interceptor nothing runs.
 *
 * @example
 * ```ts
 * server.addService(rateLimitedServiceDefinition(A2AService), rateLimitedGrpcService({ requestHandler, userBuilder }));
 * ```
 */
export function rateLimitedServiceDefinition<D extends grpc.ServiceDefinition>(
  definition: D,
  options: ServiceDefinitionOptions = {},
): D {
  const maxBytes = options.maxMessageBytes ?? DEFAULT_GRPC_MAX_MESSAGE_BYTES;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) {
    throw new RangeError(
      `rateLimitedServiceDefinition: maxMessageBytes must be a whole number ≥ 1, got ${maxBytes}`,
    );
  }
  const wrapped: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(definition)) {
    const decoder = method.requestDeserialize as (bytes: Buffer) => unknown;
    wrapped[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer) =>
        new EncodedRequest(
          bytes.length,
          maxBytes,
          bytes.length > maxBytes ? undefined : bytes,
          decoder,
        ),
    };
  }
  return wrapped as unknown as D;
}

/** Where a request message keeps the fields admission reads (protobuf field numbers). */
export interface RequestLayout {
  /** The `tenant` string's field, if the message has one. */
  readonly tenantField: number | undefined;
  /** The `Message` field of a send request (its `message_id` is field 1), if any. */
  readonly messageField: number | undefined;
}

/** What {@link scanRequestFields} read, as the SDK's decoder reads it. */
export interface ScannedFields {
  readonly tenant: string | undefined;
  readonly messageId: string | undefined;
}

/** The gRPC service package of an A2A request: 1.0 (`lf.a2a.v1`) or v0.3 (`a2a.v1`). */
export type A2AGrpcPackage = 'lf.a2a.v1' | 'a2a.v1';

/** Where a request of `method` in the service package `pkg` keeps its fields. */
export function requestLayoutOf(method: string, pkg: A2AGrpcPackage): RequestLayout {
  const send = method === 'SendMessage' || method === 'SendStreamingMessage';
  if (pkg === 'a2a.v1') return { tenantField: undefined, messageField: send ? 1 : undefined };
  return {
    tenantField: method === 'ListTaskPushNotificationConfigs' ? 4 : 1,
    messageField: send ? 2 : undefined,
  };
}

/** Thrown inside the scan: bytes that are not a protobuf message the scan can follow. */
const UNREADABLE = new Error('unreadable');

/**
 * Reads the tenant and the message's messageId from an encoded request, skipping every other
 * field without decoding it; the last occurrence of a field wins and a repeated `Message`
 * replaces the one before, as the SDK's decoder reads them. Undefined when the bytes cannot be
 * followed (truncated, a group): the caller then decodes the message before deciding.
 */
export function scanRequestFields(
  bytes: Uint8Array,
  layout: RequestLayout,
): ScannedFields | undefined {
  let pos = 0;
  const varint = (end: number): number => {
    let value = 0;
    let scale = 1;
    for (let k = 0; k < 10; k++) {
      if (pos >= end) throw UNREADABLE;
      const b = bytes[pos++] as number;
      value += (b & 0x7f) * scale;
      if (b < 0x80) return value;
      scale *= 128;
    }
    throw UNREADABLE;
  };
  const skip = (wireType: number, end: number): void => {
    if (wireType === 0) varint(end);
    else if (wireType === 1) pos += 8;
    else if (wireType === 2) {
      // The length first: `pos += varint(end)` would add it to `pos` as it was before the read.
      const length = varint(end);
      pos += length;
    } else if (wireType === 5) pos += 4;
    else throw UNREADABLE;
    if (pos > end) throw UNREADABLE;
  };
  const text = (end: number): string => {
    const length = varint(end);
    const from = pos;
    pos += length;
    if (pos > end) throw UNREADABLE;
    return Buffer.from(bytes.buffer, bytes.byteOffset + from, length).toString('utf8');
  };
  /** The fields of one message between `pos` and `end`; `onField` true: it read the field. */
  const fields = (end: number, onField: (field: number, wireType: number) => boolean): void => {
    while (pos < end) {
      const tag = varint(end);
      const wireType = tag % 8;
      // Tag 0, a stray end-group and a field number past 2^29 - 1 are malformed; parsers differ on
      // them (ts-proto stops reading, protobufjs reads on, truncating the tag to 32 bits).
      if (tag === 0 || wireType === 4 || tag >= 2 ** 32) throw UNREADABLE;
      if (!onField(Math.floor(tag / 8), wireType)) skip(wireType, end);
    }
  };
  let tenant = '';
  let messageId: string | undefined;
  try {
    fields(bytes.length, (field, wireType) => {
      // A field read here with another wire type is one parser's unknown field and another's
      // value (protobufjs reads by field number alone): unreadable, never decided one way.
      if (field !== layout.tenantField && field !== layout.messageField) return false;
      if (wireType !== 2) throw UNREADABLE;
      if (field === layout.tenantField) {
        tenant = text(bytes.length);
        return true;
      }
      // A message sent twice is merged by a conformant parser (its first messageId kept when the
      // second has none) and replaced by others (ts-proto, protobufjs): unreadable.
      if (messageId !== undefined) throw UNREADABLE;
      const length = varint(bytes.length);
      const end = pos + length;
      if (end > bytes.length) throw UNREADABLE;
      let id = '';
      fields(end, (inner, innerType) => {
        if (inner !== 1) return false;
        if (innerType !== 2) throw UNREADABLE;
        id = text(end);
        return true;
      });
      pos = end;
      messageId = id;
      return true;
    });
  } catch (error) {
    if (error === UNREADABLE) return undefined;
    throw error;
  }
  return {
    tenant: tenant === '' ? undefined : tenant,
    messageId: messageId === '' ? undefined : messageId,
  };
}
