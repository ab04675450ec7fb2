import { A2AService } from '@a2a-js/sdk/server/grpc';
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  EncodedRequest,
  rateLimitedServiceDefinition,
  requestLayoutOf,
  scanRequestFields,
} from './encoded-request.js';

const decodeSend = A2AService.sendMessage.requestDeserialize as (b: Buffer) => {
  tenant: string;
  message?: { messageId: string };
};
const SEND = requestLayoutOf('SendMessage', 'lf.a2a.v1');

/** One encoded field of a SendMessageRequest: tenant, a Message, or an unknown field. */
const inner = fc.oneof(
  fc.string().map((id) => (w: BinaryWriter) => w.uint32(10).string(id)),
  fc.string().map((ctx) => (w: BinaryWriter) => w.uint32(18).string(ctx)),
  fc.integer({ min: 0, max: 3 }).map((role) => (w: BinaryWriter) => w.uint32(32).int32(role)),
  fc.uint8Array({ maxLength: 20 }).map((b) => (w: BinaryWriter) => w.uint32(122).bytes(b)),
);
const field = fc.oneof(
  fc.string().map((tenant) => (w: BinaryWriter) => w.uint32(10).string(tenant)),
  fc.array(inner, { maxLength: 5 }).map((parts) =>
    Object.assign(
      (w: BinaryWriter) => {
        const m = w.uint32(18).fork();
        for (const part of parts) part(m);
        m.join();
      },
      { message: true },
    ),
  ),
  fc.integer({ min: 5, max: 40 }).chain((n) =>
    fc.oneof(
      fc
        .bigInt({ min: 0n, max: 2n ** 63n })
        .map((v) => (w: BinaryWriter) => w.uint32(n * 8).uint64(v)),
      fc.integer().map((v) => (w: BinaryWriter) => w.uint32(n * 8 + 5).fixed32(v >>> 0)),
      fc.double().map((v) => (w: BinaryWriter) => w.uint32(n * 8 + 1).double(v)),
      fc
        .uint8Array({ maxLength: 40 })
        .map((b) => (w: BinaryWriter) => w.uint32(n * 8 + 2).bytes(b)),
    ),
  ),
);

describe('scanRequestFields', () => {
  it('reads tenant and messageId as the SDK decoder does (last wins); a Message sent twice is unreadable', () => {
    fc.assert(
      fc.property(fc.array(field, { maxLength: 8 }), (fields) => {
        const w = new BinaryWriter();
        for (const f of fields) f(w);
        const bytes = Buffer.from(w.finish());
        // Sent twice, a Message is merged by a conformant parser and replaced by the SDK's.
        if (fields.filter((f) => 'message' in f).length > 1) {
          expect(scanRequestFields(bytes, SEND)).toBeUndefined();
          return;
        }
        const decoded = decodeSend(bytes);
        expect(scanRequestFields(bytes, SEND)).toEqual({
          tenant: decoded.tenant === '' ? undefined : decoded.tenant,
          messageId:
            decoded.message === undefined || decoded.message.messageId === ''
              ? undefined
              : decoded.message.messageId,
        });
      }),
      { numRuns: 500 },
    );
  });

  it('skips a 100,000-field metadata Struct without decoding it', () => {
    const metadata: Record<string, string> = {};
    for (let i = 0; i < 100_000; i++) metadata[`k${i}`] = 'v';
    const bytes = A2AService.sendMessage.requestSerialize({
      tenant: 't',
      message: {
        messageId: 'm-1',
        contextId: '',
        taskId: '',
        role: 1,
        parts: [],
        extensions: [],
        referenceTaskIds: [],
      },
      metadata,
    } as never);
    expect(scanRequestFields(bytes, SEND)).toEqual({ tenant: 't', messageId: 'm-1' });
  });

  it('cannot follow truncated bytes or groups (the caller decodes first)', () => {
    const bytes = A2AService.getTask.requestSerialize({
      tenant: 'tenant-a',
      id: 'task-1',
    } as never);
    expect(scanRequestFields(bytes, requestLayoutOf('GetTask', 'lf.a2a.v1'))).toEqual({
      tenant: 'tenant-a',
      messageId: undefined,
    });
    expect(
      scanRequestFields(bytes.subarray(0, 4), requestLayoutOf('GetTask', 'lf.a2a.v1')),
    ).toBeUndefined();
    expect(scanRequestFields(Uint8Array.of(0x0b, 0x0c), SEND)).toBeUndefined();
  });

  it('reads the tenant of ListTaskPushNotificationConfigs at its own field, v0.3 sends at field 1', () => {
    expect(requestLayoutOf('ListTaskPushNotificationConfigs', 'lf.a2a.v1')).toEqual({
      tenantField: 4,
      messageField: undefined,
    });
    expect(requestLayoutOf('SendStreamingMessage', 'a2a.v1')).toEqual({
      tenantField: undefined,
      messageField: 1,
    });
  });
});

describe('rateLimitedServiceDefinition', () => {
  it('keeps request messages encoded, and no bytes past the bound', () => {
    let decodes = 0;
    const counted = {
      ...A2AService,
      getTask: {
        ...A2AService.getTask,
        requestDeserialize: (b: Buffer) => {
          decodes++;
          return A2AService.getTask.requestDeserialize(b);
        },
      },
    };
    const definition = rateLimitedServiceDefinition(counted, { maxMessageBytes: 16 });
    const small = A2AService.getTask.requestSerialize({ tenant: '', id: 'x' } as never);
    const received = definition.getTask.requestDeserialize(small);
    expect(received).toBeInstanceOf(EncodedRequest);
    expect(decodes).toBe(0);
    expect((received as unknown as EncodedRequest).decode()).toMatchObject({ id: 'x' });
    expect(decodes).toBe(1);
    const large = definition.getTask.requestDeserialize(
      Buffer.alloc(17),
    ) as unknown as EncodedRequest;
    expect(large.tooLarge).toBe(true);
    expect(large.size).toBe(17);
    expect(() => large.decode()).toThrow(RangeError);
    expect(decodes).toBe(1);
    expect(() => rateLimitedServiceDefinition(A2AService, { maxMessageBytes: 0 })).toThrow(
      RangeError,
    );
  });
});
