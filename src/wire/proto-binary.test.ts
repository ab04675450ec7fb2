import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { base64Decode, base64Encode } from '@bufbuild/protobuf/wire';
import fc from 'fast-check';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { MAX_DURATION } from './duration.js';
import type { Detail, Status } from './google-rpc.js';
import { TYPE_URLS } from './google-rpc.js';
import { encodeGrpcRejection } from './grpc-rejection.js';
import { decodeStatus, encodeStatus, tryDecodeStatus } from './proto-binary.js';
import { statusFromJson, statusToJson } from './proto-json.js';

const STANDARDS_EXAMPLE =
  'CAgSDHJhdGUgbGltaXRlZBowCih0eXBlLmdvb2dsZWFwaXMuY29tL2dvb2dsZS5ycGMuUmV0cnlJbmZvEgQKAggM';

/**
 * An independent decoder: protobufjs over the official message definitions written out as
 * fixtures. Each file is parsed into one root explicitly, so protobufjs's bundled copies of the
 * google/protobuf files are not used.
 */
function loadOfficialSchema(): protobuf.Root {
  const root = new protobuf.Root();
  for (const file of [
    'google/protobuf/any.proto',
    'google/protobuf/duration.proto',
    'google/rpc/status.proto',
    'google/rpc/error_details.proto',
  ]) {
    const url = new URL(`../../test/fixtures/protos/${file}`, import.meta.url);
    protobuf.parse(readFileSync(fileURLToPath(url), 'utf8'), root, { keepCase: false });
  }
  root.resolveAll();
  return root;
}

const schema = loadOfficialSchema();
const StatusType = schema.lookupType('google.rpc.Status');
const typesByUrl: Record<string, protobuf.Type> = {
  [TYPE_URLS.errorInfo]: schema.lookupType('google.rpc.ErrorInfo'),
  [TYPE_URLS.retryInfo]: schema.lookupType('google.rpc.RetryInfo'),
  [TYPE_URLS.quotaFailure]: schema.lookupType('google.rpc.QuotaFailure'),
};

/** Decodes our bytes with protobufjs into plain objects (int64 as strings, all defaults present). */
function decodeIndependently(bytes: Uint8Array) {
  const message = StatusType.decode(bytes);
  const plain = StatusType.toObject(message, { longs: String, defaults: true }) as {
    code: number;
    message: string;
    details: { typeUrl: string; value: Uint8Array }[];
  };
  return {
    code: plain.code,
    message: plain.message,
    details: plain.details.map((any) => {
      const type = typesByUrl[any.typeUrl];
      if (type === undefined) throw new Error(`unexpected type ${any.typeUrl}`);
      return {
        typeUrl: any.typeUrl,
        value: type.toObject(type.decode(any.value), { longs: String, defaults: true }),
      };
    }),
  };
}

const text = fc.string({ maxLength: 30 });
const stringMap = fc.dictionary(
  fc.string({ minLength: 1, maxLength: 10 }).filter((k) => k !== '__proto__'),
  text,
  { maxKeys: 4 },
);
const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
const durationArb = fc
  .record({
    seconds: fc.bigInt({ min: 0n, max: 315_576_000_000n }),
    nanos: fc.integer({ min: 0, max: 999_999_999 }),
    negative: fc.boolean(),
  })
  .map(({ seconds, nanos, negative }) =>
    negative ? { seconds: -seconds, nanos: nanos === 0 ? 0 : -nanos } : { seconds, nanos },
  );
const detailArb: fc.Arbitrary<Detail> = fc.oneof(
  fc.record({ reason: text, domain: text, metadata: stringMap }).map((message) => ({
    type: 'ErrorInfo' as const,
    message,
  })),
  durationArb.map((retryDelay) => ({ type: 'RetryInfo' as const, message: { retryDelay } })),
  fc
    .array(
      fc
        .record({
          subject: text,
          description: text,
          apiService: text,
          quotaMetric: text,
          quotaId: text,
          quotaDimensions: stringMap,
          quotaValue: int64,
          futureQuotaValue: fc.option(int64, { nil: undefined }),
        })
        .map(({ futureQuotaValue, ...v }) =>
          futureQuotaValue === undefined ? v : { ...v, futureQuotaValue },
        ),
      { maxLength: 3 },
    )
    .map((violations) => ({ type: 'QuotaFailure' as const, message: { violations } })),
);
const statusArb: fc.Arbitrary<Status> = fc.record({
  code: fc.integer({ min: 0, max: 16 }),
  message: text,
  details: fc.array(detailArb, { maxLength: 4 }),
});

/** What protobufjs should see for one of our details. */
function expectedIndependent(detail: Detail) {
  switch (detail.type) {
    case 'ErrorInfo':
      return {
        typeUrl: TYPE_URLS.errorInfo,
        value: { ...detail.message, metadata: { ...detail.message.metadata } },
      };
    case 'RetryInfo':
      return {
        typeUrl: TYPE_URLS.retryInfo,
        value: {
          retryDelay: {
            seconds: String(detail.message.retryDelay?.seconds ?? 0n),
            nanos: detail.message.retryDelay?.nanos ?? 0,
          },
        },
      };
    case 'QuotaFailure':
      return {
        typeUrl: TYPE_URLS.quotaFailure,
        value: {
          violations: detail.message.violations.map((v) => ({
            subject: v.subject,
            description: v.description,
            apiService: v.apiService,
            quotaMetric: v.quotaMetric,
            quotaId: v.quotaId,
            quotaDimensions: { ...v.quotaDimensions },
            quotaValue: String(v.quotaValue),
            ...(v.futureQuotaValue === undefined
              ? {}
              : { futureQuotaValue: String(v.futureQuotaValue) }),
          })),
        },
      };
    default:
      throw new Error('not generated');
  }
}

describe('encodeStatus', () => {
  it('produces the byte example of the standards reference', () => {
    const status: Status = {
      code: 8,
      message: 'rate limited',
      details: [{ type: 'RetryInfo', message: { retryDelay: { seconds: 12n, nanos: 0 } } }],
    };
    const bytes = encodeStatus(status);
    expect(bytes.length).toBe(66);
    expect(base64Encode(bytes)).toBe(STANDARDS_EXAMPLE);
  });

  it('encodes a 1.5 s Duration as 08 01 10 80 ca b5 ee 01', () => {
    const bytes = encodeStatus({
      code: 0,
      message: '',
      details: [
        { type: 'RetryInfo', message: { retryDelay: { seconds: 1n, nanos: 500_000_000 } } },
      ],
    });
    const any = decodeIndependently(bytes).details[0];
    expect(any?.value).toEqual({ retryDelay: { seconds: '1', nanos: 500_000_000 } });
    const hex = [...bytes].map((b) => b.toString(16).padStart(2, '0')).join(' ');
    expect(hex.endsWith('0a 08 08 01 10 80 ca b5 ee 01')).toBe(true);
  });

  it('is read identically by protobufjs over the official definitions', () => {
    fc.assert(
      fc.property(statusArb, (status) => {
        const independent = decodeIndependently(encodeStatus(status));
        expect(independent.code).toBe(status.code);
        expect(independent.message).toBe(status.message);
        expect(independent.details).toEqual(status.details.map(expectedIndependent));
      }),
    );
  });
});

describe('grpc-status-details-bin of encodeGrpcRejection', () => {
  it('is the google.rpc.Status protobufjs reads with the official schema', () => {
    const { code, message, trailers } = encodeGrpcRejection(
      {
        kind: 'quota',
        retryAfterMs: 11_001,
        policy: 'per-caller',
        scope: 'caller',
        subject: 'caller:orchestrator-7',
        method: 'SendMessage',
        quota: { limit: 60, windowSeconds: 60, remaining: 0 },
        reserved: true,
        message: 'rate limited',
      },
      { domain: 'agents.example.com' },
    );
    const bin = trailers['grpc-status-details-bin'];
    if (!(bin instanceof Uint8Array)) throw new Error('expected bytes');
    expect(decodeIndependently(bin)).toEqual({
      code,
      message,
      details: [
        {
          typeUrl: TYPE_URLS.errorInfo,
          value: {
            reason: 'RATE_LIMIT_EXCEEDED',
            domain: 'agents.example.com',
            metadata: {
              policy: 'per-caller',
              scope: 'caller',
              method: 'SendMessage',
              reserved: 'true',
              retryDelay: '12s',
              kind: 'quota',
            },
          },
        },
        { typeUrl: TYPE_URLS.retryInfo, value: { retryDelay: { seconds: '12', nanos: 0 } } },
        {
          typeUrl: TYPE_URLS.quotaFailure,
          value: {
            violations: [
              {
                subject: 'caller:orchestrator-7',
                description: '60 requests per 60 s',
                apiService: '',
                quotaMetric: '',
                quotaId: 'per-caller',
                quotaDimensions: { method: 'SendMessage', scope: 'caller' },
                quotaValue: '60',
              },
            ],
          },
        },
      ],
    });
  });
});

describe('decodeStatus', () => {
  it('decodes the standards example', () => {
    expect(decodeStatus(base64Decode(STANDARDS_EXAMPLE))).toEqual({
      code: 8,
      message: 'rate limited',
      details: [{ type: 'RetryInfo', message: { retryDelay: { seconds: 12n, nanos: 0 } } }],
    });
  });

  it('round-trips every status', () => {
    fc.assert(
      fc.property(statusArb, (status) => {
        expect(decodeStatus(encodeStatus(status))).toEqual(status);
      }),
    );
  });

  it('is JSON-safe: JSON.stringify writes its ProtoJSON (no BigInt error), for every status', () => {
    const example = JSON.parse(JSON.stringify(decodeStatus(base64Decode(STANDARDS_EXAMPLE))));
    expect(example).toEqual({
      code: 8,
      message: 'rate limited',
      details: [{ '@type': TYPE_URLS.retryInfo, retryDelay: '12s' }],
    });
    fc.assert(
      fc.property(statusArb, (status) => {
        const decoded = decodeStatus(encodeStatus(status));
        expect(JSON.parse(JSON.stringify(decoded))).toEqual(
          JSON.parse(JSON.stringify(statusToJson(decoded))),
        );
        // The int64s read back from that JSON are the decoded ones.
        expect(statusFromJson(JSON.parse(JSON.stringify(decoded)))?.details).toEqual(
          decoded.details.filter((d) => d.type !== 'other'),
        );
      }),
    );
  });

  it('reads bytes written by protobufjs', () => {
    const errorInfo = typesByUrl[TYPE_URLS.errorInfo];
    if (errorInfo === undefined) throw new Error('schema');
    const value = errorInfo
      .encode(
        errorInfo.fromObject({
          reason: 'RATE_LIMIT_EXCEEDED',
          domain: 'x.example',
          metadata: { policy: 'p' },
        }),
      )
      .finish();
    const bytes = StatusType.encode(
      StatusType.fromObject({
        code: 8,
        message: 'm',
        details: [{ typeUrl: TYPE_URLS.errorInfo, value }],
      }),
    ).finish();
    expect(decodeStatus(bytes)).toEqual({
      code: 8,
      message: 'm',
      details: [
        {
          type: 'ErrorInfo',
          message: {
            reason: 'RATE_LIMIT_EXCEEDED',
            domain: 'x.example',
            metadata: { policy: 'p' },
          },
        },
      ],
    });
  });

  it('reads a RetryInfo past Duration range (int64-max seconds) as the longest duration, not as none', () => {
    const retryInfo = typesByUrl[TYPE_URLS.retryInfo];
    if (retryInfo === undefined) throw new Error('schema');
    for (const seconds of ['9223372036854775807', '315576000001']) {
      const value = retryInfo
        .encode(retryInfo.fromObject({ retryDelay: { seconds, nanos: 0 } }))
        .finish();
      const bytes = StatusType.encode(
        StatusType.fromObject({
          code: 8,
          message: 'm',
          details: [{ typeUrl: TYPE_URLS.retryInfo, value }],
        }),
      ).finish();
      expect(decodeStatus(bytes).details, seconds).toEqual([
        { type: 'RetryInfo', message: { retryDelay: MAX_DURATION } },
      ]);
    }
    // Below the range, or with nanos of the wrong sign: no delay at all.
    for (const retryDelay of [
      { seconds: '-9223372036854775808', nanos: 0 },
      { seconds: '9223372036854775807', nanos: -1 },
    ]) {
      const value = retryInfo.encode(retryInfo.fromObject({ retryDelay })).finish();
      const bytes = StatusType.encode(
        StatusType.fromObject({ code: 8, details: [{ typeUrl: TYPE_URLS.retryInfo, value }] }),
      ).finish();
      expect(decodeStatus(bytes).details).toEqual([{ type: 'RetryInfo', message: {} }]);
    }
  });

  it('keeps unknown detail types as bytes and passes them through on re-encoding', () => {
    const help = {
      type: 'other' as const,
      typeUrl: 'type.googleapis.com/google.rpc.Help',
      value: new Uint8Array([0x0a, 0x00]),
    };
    const status: Status = { code: 8, message: '', details: [help] };
    const decoded = decodeStatus(encodeStatus(status));
    expect(decoded.details).toEqual([help]);
  });

  it('skips unknown fields and fields of an unexpected wire type', () => {
    // field 9 varint 1, then code=8, then field 2 (message) sent as a varint (wrong type)
    const bytes = new Uint8Array([0x48, 0x01, 0x08, 0x08, 0x10, 0x05]);
    expect(decodeStatus(bytes)).toEqual({ code: 8, message: '', details: [] });
  });

  it('rejects truncated input without throwing from tryDecodeStatus', () => {
    const full = base64Decode(STANDARDS_EXAMPLE);
    for (let cut = 1; cut < full.length; cut++) {
      const truncated = full.subarray(0, cut);
      // Every prefix either decodes to a partial-but-valid message or is reported malformed.
      const status = tryDecodeStatus(truncated);
      if (status !== undefined) expect(status.code).toBe(8);
    }
    expect(tryDecodeStatus(new Uint8Array([0x1a, 0x05, 0x0a]))).toBeUndefined();
  });

  it('never throws from tryDecodeStatus on arbitrary bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), (bytes) => {
        const status = tryDecodeStatus(bytes);
        if (status !== undefined) expect(Array.isArray(status.details)).toBe(true);
      }),
    );
  });
});
