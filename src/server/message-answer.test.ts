/**
 * The stored form of a Message answer: any Message the SDK can carry comes back exactly (as the
 * SDK's own JSON encoder writes it: raw bytes, data values, metadata, roles), with its scope;
 * values JSON does not carry come back as the JSON bindings wrote them; damaged values decode to
 * nothing.
 */
import { Message } from '@a2a-js/sdk';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ANSWER_MARK,
  answerBytes,
  decodeMessageAnswer,
  encodeMessageAnswer,
  isMessageAnswer,
} from './message-answer.js';

const json = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);
const part = fc.oneof(
  fc.record({ text: fc.string() }),
  fc.record({
    raw: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('base64')),
  }),
  fc.record({ url: fc.webUrl(), mediaType: fc.constantFrom('image/png', 'text/plain') }),
  fc.record({ data: json, filename: fc.string({ maxLength: 8 }) }),
);
/** A Message in the SDK's JSON form (as a wire would carry it). */
const messageJson = fc.record(
  {
    messageId: fc.uuid(),
    contextId: fc.string({ maxLength: 12 }),
    taskId: fc.string({ maxLength: 12 }),
    role: fc.constantFrom('ROLE_USER', 'ROLE_AGENT'),
    parts: fc.array(part, { maxLength: 4 }),
    metadata: fc.dictionary(fc.string({ maxLength: 6 }), json, { maxKeys: 3 }),
    extensions: fc.array(fc.webUrl(), { maxLength: 2 }),
    referenceTaskIds: fc.array(fc.uuid(), { maxLength: 2 }),
  },
  { requiredKeys: ['messageId', 'role', 'parts'] },
);

describe('message answers', () => {
  it('property: every Message comes back as the SDK encodes it, with its scope', () => {
    fc.assert(
      fc.property(messageJson, fc.string(), fc.string(), (wire, tenant, owner) => {
        // The SDK's in-memory form, as an executor publishes it.
        const message = Message.fromJSON(wire);
        const value = encodeMessageAnswer({ message, tenant, owner });
        expect(value?.startsWith(ANSWER_MARK)).toBe(true);
        const back = decodeMessageAnswer(value as string);
        expect(back?.tenant).toBe(tenant);
        expect(back?.owner).toBe(owner);
        expect(Message.toJSON(back?.message as Message)).toEqual(Message.toJSON(message));
        expect(answerBytes(value as string)).toBe(Buffer.byteLength(value as string));
        // The check before encoding never refuses an answer that fits (it is a lower bound).
        const exact = answerBytes(value as string);
        expect(encodeMessageAnswer({ message, tenant, owner }, exact)).toBe(value);
      }),
    );
  });

  it('raw bytes come back as bytes (the gRPC encoder needs them), not as base64 text', () => {
    const message = Message.fromJSON({
      messageId: 'r-1',
      role: 'ROLE_AGENT',
      parts: [{ text: 'see file' }, { raw: Buffer.from([0, 1, 254, 255]).toString('base64') }],
    });
    const back = decodeMessageAnswer(
      encodeMessageAnswer({ message, tenant: '', owner: 'a' }) as string,
    );
    expect(back).toBeDefined();
    const content = (back as { message: Message }).message.parts[1]?.content;
    expect(content?.$case).toBe('raw');
    expect(content?.value).toBeInstanceOf(Uint8Array);
    expect([...(content as { value: Uint8Array }).value]).toEqual([0, 1, 254, 255]);
  });

  it('an answer surely over maxBytes is refused before it is encoded', () => {
    const message = Message.fromJSON({
      messageId: 'big',
      role: 'ROLE_AGENT',
      parts: [{ raw: Buffer.alloc(1_000_000).toString('base64') }, { text: 'x' }],
    });
    expect(encodeMessageAnswer({ message, tenant: '', owner: '' }, 16_384)).toBeUndefined();
    const text = Message.fromJSON({ messageId: 't', parts: [{ text: 'é'.repeat(20_000) }] });
    expect(encodeMessageAnswer({ message: text, tenant: '', owner: '' }, 16_384)).toBeUndefined();
  });

  it('values that are not JSON come back as the JSON bindings wrote them; a BigInt is not kept', () => {
    const base = { messageId: 'x', role: 2, parts: [] };
    const metadata = { when: new Date(0), nan: Number.NaN, nested: { ok: true } };
    const value = encodeMessageAnswer({ message: { ...base, metadata }, tenant: '', owner: '' });
    const back = decodeMessageAnswer(value as string)?.message as Message;
    expect(JSON.stringify(Message.toJSON(back))).toBe(
      JSON.stringify(Message.toJSON({ ...base, metadata } as unknown as Message)),
    );
    const bigint = { ...base, metadata: { n: 10n } };
    expect(encodeMessageAnswer({ message: bigint, tenant: '', owner: '' })).toBeUndefined();
    expect(encodeMessageAnswer({ message: 'hello', tenant: '', owner: '' })).toBeUndefined();
    expect(encodeMessageAnswer({ message: null, tenant: '', owner: '' })).toBeUndefined();
  });

  it('task ids and damaged or foreign values are no answer', () => {
    expect(isMessageAnswer('task-9')).toBe(false);
    expect(decodeMessageAnswer('task-9')).toBeUndefined();
    for (const body of ['{', '[]', '{"t":1,"o":"","m":{}}', '{"t":"","o":"","m":{},"r":[0]}']) {
      expect(decodeMessageAnswer(ANSWER_MARK + body)).toBeUndefined();
    }
  });
});
