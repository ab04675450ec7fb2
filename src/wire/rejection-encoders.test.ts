import { base64Encode } from '@bufbuild/protobuf/wire';
import fc from 'fast-check';
import { parseList } from 'structured-headers';
import { describe, expect, it } from 'vitest';
import { type LimitState, type Rejection, wireDelaySeconds } from '../core/rejection.js';
import { extractRetryHint } from './extract-retry-hint.js';
import { decodeGrpcRejection, encodeGrpcRejection } from './grpc-rejection.js';
import { decodeJsonRpcRejection, encodeJsonRpcRejection } from './json-rpc-rejection.js';
import { decodeStatus } from './proto-binary.js';
import { rejectionDetails } from './rejection-details.js';
import { decodeRestRejection, encodeRestRejection } from './rest-rejection.js';
import { limitsArb, rejectionArb } from './wire.test-helpers.js';

const DOMAIN = 'agents.example.com';

const seedRejection: Rejection = {
  kind: 'quota',
  retryAfterMs: 11_200,
  policy: 'per-caller',
  scope: 'caller',
  subject: 'caller:orchestrator-7',
  method: 'SendMessage',
  quota: { limit: 60, windowSeconds: 60, remaining: 0 },
  message: 'Caller orchestrator-7 exceeded 60 SendMessage calls per minute',
};
const seedLimits: LimitState[] = [
  { policy: 'per-caller', limit: 60, windowSeconds: 60, remaining: 0, resetSeconds: 1 },
];

const seedDetails = [
  {
    '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
    reason: 'RATE_LIMIT_EXCEEDED',
    domain: DOMAIN,
    metadata: {
      policy: 'per-caller',
      scope: 'caller',
      method: 'SendMessage',
      retryDelay: '12s',
      kind: 'quota',
    },
  },
  { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '12s' },
  {
    '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
    violations: [
      {
        subject: 'caller:orchestrator-7',
        description: '60 requests per 60 s',
        quotaId: 'per-caller',
        quotaDimensions: { method: 'SendMessage', scope: 'caller' },
        quotaValue: '60',
      },
    ],
  },
];

describe('encodeRestRejection', () => {
  it('produces the HTTP+JSON response of the source document', () => {
    const res = encodeRestRejection(seedRejection, { domain: DOMAIN, limits: seedLimits });
    expect(res.status).toBe(429);
    expect(res.headers).toEqual({
      'content-type': 'application/a2a+json',
      'retry-after': '12',
      'ratelimit-policy': '"per-caller";q=60;w=60',
      ratelimit: '"per-caller";r=0;t=12',
    });
    expect(JSON.parse(res.body)).toEqual({
      error: {
        code: 429,
        status: 'RESOURCE_EXHAUSTED',
        message: seedRejection.message,
        details: seedDetails,
      },
    });
  });

  it('answers overload with 503 / UNAVAILABLE, AGENT_OVERLOADED and no QuotaFailure', () => {
    const res = encodeRestRejection(
      {
        ...seedRejection,
        kind: 'overload',
        policy: 'agent-overload',
        scope: 'agent',
        subject: 'agent',
      },
      { domain: DOMAIN },
    );
    expect(res.status).toBe(503);
    expect(res.headers).toEqual({ 'content-type': 'application/a2a+json', 'retry-after': '12' });
    const body = JSON.parse(res.body);
    expect(body.error.status).toBe('UNAVAILABLE');
    expect(body.error.code).toBe(503);
    expect(body.error.details.map((d: { '@type': string }) => d['@type'])).toEqual([
      'type.googleapis.com/google.rpc.ErrorInfo',
      'type.googleapis.com/google.rpc.RetryInfo',
    ]);
    expect(body.error.details[0].reason).toBe('AGENT_OVERLOADED');
  });

  it('carries reserved in ErrorInfo metadata only when set, and describes concurrency quotas', () => {
    const [info, , quota] = rejectionDetails(
      { ...seedRejection, reserved: false, quota: { limit: 5, remaining: 0 } },
      DOMAIN,
    );
    expect(info).toMatchObject({ message: { metadata: { reserved: 'false' } } });
    expect(quota).toMatchObject({
      message: { violations: [{ description: '5 concurrent requests' }] },
    });
  });

  it('refuses the A2A domain with a clear error', () => {
    expect(() => encodeRestRejection(seedRejection, { domain: 'a2a-protocol.org' })).toThrow(
      /reserved for A2A/,
    );
    expect(() => encodeGrpcRejection(seedRejection, { domain: ' A2A-Protocol.org ' })).toThrow(
      RangeError,
    );
    expect(() => encodeJsonRpcRejection(seedRejection, { domain: '', id: 1 })).toThrow(
      /domain is required/,
    );
  });
});

describe('encodeJsonRpcRejection', () => {
  it('answers HTTP 200 with -32603 and the details in data', () => {
    const res = encodeJsonRpcRejection(seedRejection, { domain: DOMAIN, id: 'req-41' });
    expect(res.status).toBe(200);
    expect(res.headers).toEqual({ 'content-type': 'application/json', 'retry-after': '12' });
    expect(JSON.parse(res.body)).toEqual({
      jsonrpc: '2.0',
      id: 'req-41',
      error: { code: -32603, message: seedRejection.message, data: seedDetails },
    });
  });

  it('mirrors 429 / 503 when asked, and keeps a null id', () => {
    expect(
      encodeJsonRpcRejection(seedRejection, { domain: DOMAIN, id: null, mirrorHttpStatus: true })
        .status,
    ).toBe(429);
    const overload = encodeJsonRpcRejection(
      { ...seedRejection, kind: 'overload' },
      { domain: DOMAIN, id: null, mirrorHttpStatus: true },
    );
    expect(overload.status).toBe(503);
    expect(JSON.parse(overload.body).id).toBeNull();
  });
});

describe('encodeGrpcRejection', () => {
  it('sends code 8, the message, and consistent trailers', () => {
    const res = encodeGrpcRejection(seedRejection, { domain: DOMAIN });
    expect(res.code).toBe(8);
    expect(res.message).toBe(seedRejection.message);
    expect(res.trailers['grpc-retry-pushback-ms']).toBe('12000');
    expect(res.trailers['retry-after']).toBe('12');
    const bin = res.trailers['grpc-status-details-bin'];
    if (!(bin instanceof Uint8Array)) throw new Error('expected bytes');
    const status = decodeStatus(bin);
    expect(status.code).toBe(8);
    expect(status.message).toBe(seedRejection.message);
    expect(status.details.map((d) => d.type)).toEqual(['ErrorInfo', 'RetryInfo', 'QuotaFailure']);
  });
});

describe('cross-binding', () => {
  const decodeAll = (rejection: Rejection, limits: LimitState[]) => {
    const rest = encodeRestRejection(rejection, { domain: DOMAIN, limits });
    const rpc = encodeJsonRpcRejection(rejection, { domain: DOMAIN, id: 7, limits });
    const grpc = encodeGrpcRejection(rejection, { domain: DOMAIN, limits });
    return {
      rest,
      rpc,
      grpc,
      decoded: [
        decodeRestRejection(rest.status, rest.headers, rest.body),
        decodeJsonRpcRejection(rpc.status, rpc.headers, rpc.body),
        decodeGrpcRejection(grpc.code, grpc.message, grpc.trailers),
      ],
    };
  };

  it('decodes to the same rejection on REST, JSON-RPC and gRPC, with one delay everywhere', () => {
    const arb = rejectionArb.chain((rejection) =>
      fc.tuple(fc.constant(rejection), limitsArb(rejection.policy)),
    );
    fc.assert(
      fc.property(arb, ([rejection, limits]) => {
        const seconds = wireDelaySeconds(rejection.retryAfterMs);
        const { rest, rpc, grpc, decoded } = decodeAll(rejection, limits);
        for (const d of decoded) {
          expect(d).toEqual({
            kind: rejection.kind,
            reason: rejection.kind === 'quota' ? 'RATE_LIMIT_EXCEEDED' : 'AGENT_OVERLOADED',
            domain: DOMAIN,
            policy: rejection.policy,
            scope: rejection.scope,
            method: rejection.method,
            ...(rejection.kind === 'quota' && rejection.quota !== undefined
              ? { subject: rejection.subject, quotaValue: rejection.quota.limit }
              : {}),
            delaySeconds: seconds,
            ...(rejection.reserved === undefined ? {} : { reserved: rejection.reserved }),
            message: rejection.message,
          });
        }
        // retry-after == RetryInfo == RateLimit t of the rejecting item == pushback / 1000
        for (const headers of [rest.headers, rpc.headers, grpc.trailers]) {
          expect(headers['retry-after']).toBe(String(seconds));
          const item = parseList(String(headers.ratelimit)).find(
            ([name]) => name === rejection.policy,
          );
          expect(item?.[1].get('r')).toBe(0);
          expect(item?.[1].get('t')).toBe(seconds);
        }
        expect(Number(grpc.trailers['grpc-retry-pushback-ms']) / 1000).toBe(seconds);
        // The client sees the same, whichever binding it talks to.
        const hints = [
          extractRetryHint({ kind: 'http', ...rest }, 0),
          extractRetryHint({ kind: 'http', ...rpc }, 0),
          extractRetryHint(
            { kind: 'grpc', code: grpc.code, message: grpc.message, metadata: grpc.trailers },
            0,
          ),
        ];
        for (const hint of hints) {
          expect(hint).toMatchObject({
            kind: rejection.kind,
            delayMs: seconds * 1000,
            delaySource: 'retry-info',
            policy: rejection.policy,
            domain: DOMAIN,
          });
        }
      }),
    );
  });

  it('decodes gRPC details sent as base64 text, padded or not', () => {
    const grpc = encodeGrpcRejection(seedRejection, { domain: DOMAIN });
    const bin = grpc.trailers['grpc-status-details-bin'] as Uint8Array;
    for (const text of [base64Encode(bin), base64Encode(bin, 'std_raw')]) {
      const decoded = decodeGrpcRejection(8, grpc.message, { 'grpc-status-details-bin': text });
      expect(decoded?.policy).toBe('per-caller');
    }
  });

  it('says undefined for responses that are not ours', () => {
    const rest = encodeRestRejection(seedRejection, { domain: DOMAIN });
    expect(decodeRestRejection(503, rest.headers, rest.body)).toBeUndefined();
    expect(decodeRestRejection(429, rest.headers, '<html>busy</html>')).toBeUndefined();
    const a2aDomain = rest.body.replace(DOMAIN, 'a2a-protocol.org');
    expect(decodeRestRejection(429, rest.headers, a2aDomain)).toBeUndefined();
    const rpc = encodeJsonRpcRejection(seedRejection, { domain: DOMAIN, id: 1 });
    expect(decodeJsonRpcRejection(500, rpc.headers, rpc.body)).toBeUndefined();
    expect(
      decodeJsonRpcRejection(200, rpc.headers, rpc.body.replace('-32603', '-32001')),
    ).toBeUndefined();
    const grpc = encodeGrpcRejection(seedRejection, { domain: DOMAIN });
    expect(decodeGrpcRejection(14, grpc.message, grpc.trailers)).toBeUndefined();
    expect(decodeGrpcRejection(8, grpc.message, {})).toBeUndefined();
    expect(
      decodeGrpcRejection(8, grpc.message, { 'grpc-status-details-bin': '!!!' }),
    ).toBeUndefined();
  });

  it('falls back to retry-after when a gateway dropped RetryInfo', () => {
    const body = JSON.stringify({
      error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: 'm', details: [seedDetails[0]] },
    });
    expect(decodeRestRejection(429, { 'Retry-After': '7' }, body)?.delaySeconds).toBe(7);
    // Without either, the ErrorInfo's own `retryDelay` is the last resort.
    expect(decodeRestRejection(429, {}, body)?.delaySeconds).toBe(12);
    const info = seedDetails[0] as { metadata: Record<string, string> };
    const { retryDelay: _dropped, ...metadata } = info.metadata;
    const bare = JSON.stringify({
      error: { code: 429, message: 'm', details: [{ ...info, metadata }] },
    });
    expect(decodeRestRejection(429, {}, bare)).toBeUndefined();
  });

  it('repeats the delay and the kind in ErrorInfo.metadata on every binding, equal to RetryInfo', () => {
    for (const [retryAfterMs, expected] of [
      [12_000, '12s'],
      [1, '1s'],
      [61_500, '62s'],
    ] as const) {
      for (const kind of ['quota', 'overload'] as const) {
        const r = { ...seedRejection, kind, retryAfterMs };
        const decodes = [
          decodeRestRejection(
            kind === 'quota' ? 429 : 503,
            {},
            encodeRestRejection(r, { domain: DOMAIN }).body,
          ),
          decodeJsonRpcRejection(
            200,
            {},
            encodeJsonRpcRejection(r, { domain: DOMAIN, id: 1 }).body,
          ),
        ];
        const rest = JSON.parse(encodeRestRejection(r, { domain: DOMAIN }).body) as {
          error: { details: { metadata?: Record<string, string>; retryDelay?: string }[] };
        };
        const [info, retry] = rest.error.details;
        expect(info?.metadata?.retryDelay).toBe(expected);
        expect(info?.metadata?.retryDelay).toBe(retry?.retryDelay);
        expect(info?.metadata?.kind).toBe(kind);
        for (const d of decodes) expect(d?.kind).toBe(kind);
        const bin = encodeGrpcRejection(r, { domain: DOMAIN }).trailers['grpc-status-details-bin'];
        if (!(bin instanceof Uint8Array)) throw new Error('expected bytes');
        const grpcInfo = decodeStatus(bin).details.find((d) => d.type === 'ErrorInfo');
        expect(grpcInfo?.type === 'ErrorInfo' && grpcInfo.message.metadata).toMatchObject({
          retryDelay: expected,
          kind,
        });
      }
    }
  });
});
