import { base64Encode } from '@bufbuild/protobuf/wire';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Rejection } from '../core/rejection.js';
import { extractRetryHint, type RetrySource } from './extract-retry-hint.js';
import { encodeGrpcRejection } from './grpc-rejection.js';
import { encodeJsonRpcRejection } from './json-rpc-rejection.js';
import { encodeStatus } from './proto-binary.js';
import { encodeRestRejection } from './rest-rejection.js';
import type { RetryHint } from './retry-hint.js';

const NOW = Date.UTC(2026, 0, 1, 0, 0, 0);
const DOMAIN = 'agents.example.com';
const quota: Rejection = {
  kind: 'quota',
  retryAfterMs: 12_000,
  policy: 'per-caller',
  scope: 'caller',
  subject: 'caller:a',
  method: 'SendMessage',
  quota: { limit: 60, windowSeconds: 60, remaining: 0 },
  reserved: true,
  message: 'slow down',
};
const overload: Rejection = {
  ...quota,
  kind: 'overload',
  policy: 'agent-overload',
  scope: 'agent',
  retryAfterMs: 2_500,
};
const limits = [
  { policy: 'per-caller', limit: 60, windowSeconds: 60, remaining: 0, resetSeconds: 1 },
];

const errorInfo = (reason: string, domain = DOMAIN, metadata: Record<string, string> = {}) => ({
  '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
  reason,
  domain,
  metadata,
});
const retryInfo = (delay: string) => ({
  '@type': 'type.googleapis.com/google.rpc.RetryInfo',
  retryDelay: delay,
});
const rpcBody = (error: object) => JSON.stringify({ jsonrpc: '2.0', id: 1, error });
const retryInfoBin = (code: number, seconds: bigint) =>
  base64Encode(
    encodeStatus({
      code,
      message: '',
      details: [{ type: 'RetryInfo', message: { retryDelay: { seconds, nanos: 0 } } }],
    }),
    'std_raw',
  );

const rest = encodeRestRejection(quota, { domain: DOMAIN, limits });
const rpc = encodeJsonRpcRejection(quota, { domain: DOMAIN, id: 1 });
const grpc = encodeGrpcRejection(overload, { domain: DOMAIN });

const NGINX_502 = `<html>
<head><title>502 Bad Gateway</title></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>nginx</center>
</body>
</html>`;

const table: [string, RetrySource, Partial<RetryHint>][] = [
  [
    'our REST encoding',
    { kind: 'http', ...rest },
    {
      kind: 'quota',
      delayMs: 12_000,
      delaySource: 'retry-info',
      policy: 'per-caller',
      reason: 'RATE_LIMIT_EXCEEDED',
      domain: DOMAIN,
      reserved: true,
      status: 429,
      message: 'slow down',
      policies: [{ policy: 'per-caller', limit: 60, windowSeconds: 60 }],
      states: [{ policy: 'per-caller', remaining: 0, resetSeconds: 12 }],
    },
  ],
  [
    'our JSON-RPC encoding in HTTP 200',
    { kind: 'http', ...rpc },
    { kind: 'quota', delayMs: 12_000, status: 200, policy: 'per-caller' },
  ],
  [
    'our gRPC encoding (overload)',
    { kind: 'grpc', code: grpc.code, message: grpc.message, metadata: grpc.trailers },
    {
      kind: 'overload',
      delayMs: 3_000,
      delaySource: 'retry-info',
      reason: 'AGENT_OVERLOADED',
      status: 14,
      policy: 'agent-overload',
    },
  ],
  [
    'our gRPC encoding with base64 text trailers',
    {
      kind: 'grpc',
      code: 14,
      metadata: {
        'grpc-status-details-bin': base64Encode(
          grpc.trailers['grpc-status-details-bin'] as Uint8Array,
        ),
      },
    },
    { kind: 'overload', delayMs: 3_000, message: 'slow down' },
  ],
  [
    'spec-literal HTTP 503 with Retry-After',
    { kind: 'http', status: 503, headers: { 'Retry-After': '30' } },
    { kind: 'overload', delayMs: 30_000, delaySource: 'retry-after' },
  ],
  [
    'spec-literal HTTP 500 with google.rpc.Status and RetryInfo',
    {
      kind: 'http',
      status: 500,
      headers: {},
      body: JSON.stringify({
        error: {
          code: 500,
          status: 'INTERNAL',
          message: 'rate limit exceeded',
          details: [retryInfo('5s')],
        },
      }),
    },
    // Retry guidance makes the spec's "rate limit exceeded" example a refusal with a hint.
    { kind: 'quota', delayMs: 5_000, message: 'rate limit exceeded' },
  ],
  [
    'spec-literal HTTP 500 without details',
    { kind: 'http', status: 500, headers: {}, body: '{"error":{"code":500,"message":"boom"}}' },
    { kind: 'transient-unknown', message: 'boom' },
  ],
  [
    'JSON-RPC -32603 with RATE_LIMIT_EXCEEDED in HTTP 200',
    {
      kind: 'http',
      status: 200,
      headers: {},
      body: rpcBody({
        code: -32603,
        message: 'Rate limit exceeded',
        data: [
          errorInfo('RATE_LIMIT_EXCEEDED', 'other.example', { policy: 'p' }),
          retryInfo('1.5s'),
        ],
      }),
    },
    { kind: 'quota', delayMs: 1_500, policy: 'p', domain: 'other.example' },
  ],
  [
    'JSON-RPC -32603 without details',
    {
      kind: 'http',
      status: 200,
      headers: {},
      body: rpcBody({ code: -32603, message: 'Internal error' }),
    },
    { kind: 'transient-unknown', message: 'Internal error' },
  ],
  [
    'JSON-RPC data as a single object',
    {
      kind: 'http',
      status: 200,
      headers: {},
      body: rpcBody({ code: -32603, message: 'x', data: errorInfo('AGENT_OVERLOADED') }),
    },
    { kind: 'overload', reason: 'AGENT_OVERLOADED' },
  ],
  [
    'JSON-RPC data as a free-form object',
    {
      kind: 'http',
      status: 200,
      headers: {},
      body: rpcBody({ code: -32601, message: 'Method not found', data: { method: 'x' } }),
    },
    { kind: 'not-retryable' },
  ],
  [
    'RATE_LIMIT_EXCEEDED in the A2A domain is not ours',
    {
      kind: 'http',
      status: 200,
      headers: {},
      body: rpcBody({
        code: -32603,
        message: 'x',
        data: [errorInfo('RATE_LIMIT_EXCEEDED', 'a2a-protocol.org')],
      }),
    },
    { kind: 'transient-unknown', reason: 'RATE_LIMIT_EXCEEDED', domain: 'a2a-protocol.org' },
  ],
  [
    'application/problem+json',
    {
      kind: 'http',
      status: 429,
      headers: { 'content-type': 'application/problem+json', 'retry-after': '4' },
      body: JSON.stringify({
        type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
        title: 'Too many',
        detail: 'quota hit',
        'violated-policies': ['daily'],
      }),
    },
    { kind: 'quota', delayMs: 4_000, policy: 'daily', message: 'quota hit' },
  ],
  [
    'Retry-After as IMF-fixdate',
    { kind: 'http', status: 429, headers: { 'retry-after': 'Thu, 01 Jan 2026 00:00:30 GMT' } },
    { delayMs: 30_000, delaySource: 'retry-after' },
  ],
  [
    'Retry-After as RFC 850 date',
    { kind: 'http', status: 429, headers: { 'retry-after': 'Thursday, 01-Jan-26 00:00:30 GMT' } },
    { delayMs: 30_000 },
  ],
  [
    'Retry-After as asctime date',
    { kind: 'http', status: 429, headers: { 'retry-after': 'Thu Jan  1 00:00:30 2026' } },
    { delayMs: 30_000 },
  ],
  [
    'Retry-After in the past',
    { kind: 'http', status: 429, headers: { 'retry-after': 'Wed, 31 Dec 2025 23:00:00 GMT' } },
    { delayMs: 0 },
  ],
  [
    'draft-11 RateLimit picks the exhausted item',
    { kind: 'http', status: 429, headers: { ratelimit: '"hour";r=10;t=3000, "minute";r=0;t=7' } },
    { kind: 'quota', delayMs: 7_000, delaySource: 'ratelimit', policy: 'minute' },
  ],
  [
    'legacy RateLimit dictionary',
    { kind: 'http', status: 429, headers: { ratelimit: 'limit=100, remaining=0, reset=9' } },
    { delayMs: 9_000, delaySource: 'ratelimit' },
  ],
  [
    'RateLimit-Reset (draft-06)',
    { kind: 'http', status: 429, headers: { 'ratelimit-remaining': '0', 'ratelimit-reset': '6' } },
    { delayMs: 6_000, delaySource: 'ratelimit' },
  ],
  [
    'X-RateLimit-Reset as delta',
    {
      kind: 'http',
      status: 429,
      headers: { 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': '20' },
    },
    { delayMs: 20_000, delaySource: 'x-ratelimit' },
  ],
  [
    'X-RateLimit-Reset as epoch',
    { kind: 'http', status: 429, headers: { 'x-ratelimit-reset': String(NOW / 1000 + 45) } },
    { delayMs: 45_000, delaySource: 'x-ratelimit' },
  ],
  [
    'RetryInfo beats Retry-After',
    {
      kind: 'http',
      status: 429,
      headers: { 'retry-after': '9' },
      body: JSON.stringify({ error: { code: 429, details: [retryInfo('5s')] } }),
    },
    { kind: 'quota', delayMs: 5_000, delaySource: 'retry-info' },
  ],
  [
    'X-RateLimit beats pushback',
    {
      kind: 'grpc',
      code: 8,
      metadata: { 'x-ratelimit-reset': '8', 'grpc-retry-pushback-ms': '100' },
    },
    { kind: 'quota', delayMs: 8_000, delaySource: 'x-ratelimit' },
  ],
  [
    'Retry-After beats RateLimit',
    { kind: 'http', status: 429, headers: { 'retry-after': '3', ratelimit: '"p";r=0;t=9' } },
    { delayMs: 3_000, delaySource: 'retry-after', policy: 'p' },
  ],
  [
    'pushback alone',
    { kind: 'grpc', code: 8, metadata: { 'grpc-retry-pushback-ms': '1500' } },
    { kind: 'quota', delayMs: 1_500, delaySource: 'grpc-pushback' },
  ],
  [
    'pushback -1 alone',
    { kind: 'grpc', code: 14, metadata: { 'grpc-retry-pushback-ms': '-1' } },
    { kind: 'overload', doNotRetry: true },
  ],
  [
    'pushback -1 beside RetryInfo',
    {
      kind: 'grpc',
      code: 8,
      metadata: { 'grpc-retry-pushback-ms': '-1', 'grpc-status-details-bin': retryInfoBin(8, 4n) },
    },
    { kind: 'quota', delayMs: 4_000, delaySource: 'retry-info' },
  ],
  [
    "nginx's HTML 502 page",
    { kind: 'http', status: 502, headers: { 'content-type': 'text/html' }, body: NGINX_502 },
    { kind: 'transient-unknown', status: 502 },
  ],
  [
    'HTML 503 page with Retry-After',
    {
      kind: 'http',
      status: 503,
      headers: { 'content-type': 'text/html', 'retry-after': '10' },
      body: '<html>busy</html>',
    },
    { kind: 'overload', delayMs: 10_000 },
  ],
  [
    'RESOURCE_EXHAUSTED without details',
    { kind: 'grpc', code: 8, message: 'Received message larger than max', metadata: {} },
    { kind: 'not-retryable', status: 8 },
  ],
  [
    'RESOURCE_EXHAUSTED with RetryInfo only',
    { kind: 'grpc', code: 8, metadata: { 'grpc-status-details-bin': retryInfoBin(8, 2n) } },
    { kind: 'quota', delayMs: 2_000 },
  ],
  ['INTERNAL', { kind: 'grpc', code: 13, metadata: {} }, { kind: 'transient-unknown' }],
  ['UNKNOWN', { kind: 'grpc', code: 2, metadata: {} }, { kind: 'transient-unknown' }],
  ['DEADLINE_EXCEEDED', { kind: 'grpc', code: 4, metadata: {} }, { kind: 'not-retryable' }],
  ['HTTP 404', { kind: 'http', status: 404, headers: {} }, { kind: 'not-retryable' }],
  [
    'a connection reset',
    { kind: 'error', error: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }) },
    { kind: 'transient-unknown', message: 'read ECONNRESET' },
  ],
  [
    "undici's fetch failure (code on the cause)",
    {
      kind: 'error',
      error: new TypeError('fetch failed', {
        cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
      }),
    },
    { kind: 'transient-unknown' },
  ],
  [
    'an abort',
    { kind: 'error', error: new DOMException('aborted', 'AbortError') },
    { kind: 'not-retryable' },
  ],
  [
    'a grpc-js ServiceError with Metadata-like trailers',
    {
      kind: 'error',
      error: Object.assign(new Error('8 RESOURCE_EXHAUSTED: slow down'), {
        code: 8,
        details: 'slow down',
        metadata: { get: (key: string) => (key in grpc.trailers ? [grpc.trailers[key]] : []) },
      }),
    },
    { kind: 'overload', delayMs: 3_000, message: 'slow down' },
  ],
  [
    "the SDK's REST error (statusCode + headers)",
    {
      kind: 'error',
      error: Object.assign(new Error('HTTP 429'), {
        statusCode: 429,
        headers: { 'retry-after': '5' },
      }),
    },
    { kind: 'quota', delayMs: 5_000, status: 429 },
  ],
  [
    "the SDK's JSON-RPC error (envelopeCode + data)",
    {
      kind: 'error',
      error: Object.assign(new Error('Rate limit exceeded'), {
        envelopeCode: -32603,
        data: JSON.parse(rpc.body).error.data,
      }),
    },
    { kind: 'quota', delayMs: 12_000, policy: 'per-caller' },
  ],
  [
    "the SDK's gRPC error (status + statusDetailsBin)",
    {
      kind: 'error',
      error: Object.assign(new Error('gRPC error'), {
        status: 14,
        statusDetailsBin: grpc.trailers['grpc-status-details-bin'],
      }),
    },
    { kind: 'overload', delayMs: 3_000 },
  ],
  ['a string thrown', { kind: 'error', error: 'nope' }, { kind: 'not-retryable', message: 'nope' }],
  [
    'spec-literal JSON-RPC -32603 "Rate limit exceeded" in HTTP 200 with Retry-After: a refusal',
    {
      kind: 'http',
      status: 200,
      headers: { 'Retry-After': '1' },
      body: rpcBody({ code: -32603, message: 'Rate limit exceeded' }),
    },
    { kind: 'quota', delayMs: 1_000, delaySource: 'retry-after' },
  ],
  [
    'spec-literal HTTP 500 with an exhausted RateLimit item: a refusal',
    {
      kind: 'http',
      status: 500,
      headers: { RateLimit: '"default";r=0;t=4' },
      body: '{"error":{"code":500,"message":"Internal error"}}',
    },
    { kind: 'quota', delayMs: 4_000, delaySource: 'ratelimit' },
  ],
  [
    'spec-literal HTTP 500 whose RateLimit item has quota left: no guidance',
    {
      kind: 'http',
      status: 500,
      headers: { RateLimit: '"default";r=3;t=4' },
      body: '{"error":{"code":500,"message":"Internal error"}}',
    },
    { kind: 'transient-unknown' },
  ],
  [
    'a bare UNAVAILABLE (no details, no pushback): transient-unknown',
    { kind: 'grpc', code: 14, message: 'No connection established', metadata: {} },
    { kind: 'transient-unknown' },
  ],
  [
    'UNAVAILABLE with a pushback: overload',
    { kind: 'grpc', code: 14, metadata: { 'grpc-retry-pushback-ms': '2000' } },
    { kind: 'overload', delayMs: 2_000, delaySource: 'grpc-pushback' },
  ],
  [
    'INTERNAL with retry-after: a refusal',
    { kind: 'grpc', code: 13, metadata: { 'retry-after': '3' } },
    { kind: 'quota', delayMs: 3_000, delaySource: 'retry-after' },
  ],
  [
    "JSON-RPC data that is only ErrorInfo.metadata (a2a-python's InternalError.data)",
    {
      kind: 'http',
      status: 200,
      headers: {},
      body: rpcBody({
        code: -32603,
        message: 'Agent overloaded',
        data: { policy: 'in-flight', scope: 'agent', retryDelay: '1.500s', kind: 'overload' },
      }),
    },
    { kind: 'overload', delayMs: 1_500, delaySource: 'error-info-metadata', policy: 'in-flight' },
  ],
  [
    "our metadata inside A2A's own ErrorInfo (an SDK re-wrapped the error)",
    {
      kind: 'http',
      status: 200,
      headers: {},
      body: rpcBody({
        code: -32603,
        message: 'x',
        data: [
          errorInfo('INTERNAL_ERROR', 'a2a-protocol.org', {
            policy: 'per-caller',
            retryDelay: '7s',
            kind: 'quota',
            reserved: 'true',
          }),
        ],
      }),
    },
    {
      kind: 'quota',
      delayMs: 7_000,
      policy: 'per-caller',
      reserved: true,
      reason: 'INTERNAL_ERROR',
    },
  ],
  [
    'RetryInfo stays authoritative over the metadata delay',
    {
      kind: 'http',
      status: 200,
      headers: {},
      body: rpcBody({
        code: -32603,
        message: 'x',
        data: [
          errorInfo('RATE_LIMIT_EXCEEDED', DOMAIN, {
            policy: 'p',
            retryDelay: '9s',
            kind: 'overload',
          }),
          retryInfo('2s'),
        ],
      }),
    },
    { kind: 'quota', delayMs: 2_000, delaySource: 'retry-info' },
  ],
  [
    'a metadata kind of another meaning is ignored',
    {
      kind: 'http',
      status: 200,
      headers: {},
      body: rpcBody({ code: -32603, message: 'x', data: { kind: 'database' } }),
    },
    { kind: 'transient-unknown' },
  ],
];

describe('extractRetryHint: real-world shapes', () => {
  it.each(table)('%s', (_name, source, expected) => {
    expect(extractRetryHint(source, NOW)).toMatchObject(expected);
  });

  it('a RetryInfo past Duration range is a delay longer than any budget, on every binding', () => {
    const tooLongMs = 315_576_000_000_000;
    const restBody = (delay: string) =>
      JSON.stringify({
        error: {
          code: 429,
          status: 'RESOURCE_EXHAUSTED',
          message: 'slow down',
          details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: delay }],
        },
      });
    for (const delay of ['999999999999s', '99999999999999999999s']) {
      expect(
        extractRetryHint({ kind: 'http', status: 429, headers: {}, body: restBody(delay) }, NOW),
        delay,
      ).toMatchObject({ kind: 'quota', delayMs: tooLongMs, delaySource: 'retry-info' });
    }
    const rpcBody = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      error: {
        code: -32603,
        message: 'slow down',
        data: [
          { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '999999999999s' },
        ],
      },
    });
    expect(
      extractRetryHint({ kind: 'http', status: 200, headers: {}, body: rpcBody }, NOW),
    ).toMatchObject({ delayMs: tooLongMs, delaySource: 'retry-info' });
    const bin = encodeStatus({
      code: 8,
      message: 'slow down',
      details: [
        { type: 'RetryInfo', message: { retryDelay: { seconds: 2n ** 63n - 1n, nanos: 0 } } },
      ],
    });
    expect(
      extractRetryHint(
        {
          kind: 'grpc',
          code: 8,
          message: 'slow down',
          metadata: { 'grpc-status-details-bin': base64Encode(bin, 'std_raw') },
        },
        NOW,
      ),
    ).toMatchObject({ kind: 'quota', delayMs: tooLongMs, delaySource: 'retry-info' });
  });

  it('leaves out what the response did not say', () => {
    expect(extractRetryHint({ kind: 'http', status: 404, headers: {} }, NOW)).toEqual({
      kind: 'not-retryable',
      status: 404,
    });
    expect(
      extractRetryHint(
        { kind: 'grpc', code: 14, metadata: { 'grpc-retry-pushback-ms': '-1' } },
        NOW,
      ),
    ).toEqual({
      kind: 'overload',
      doNotRetry: true,
      status: 14,
    });
  });
});

const headerName = fc.constantFrom(
  'retry-after',
  'Retry-After',
  'ratelimit',
  'RateLimit-Policy',
  'ratelimit-reset',
  'ratelimit-remaining',
  'x-ratelimit-reset',
  'X-RateLimit-Remaining',
  'content-type',
  'grpc-retry-pushback-ms',
  'grpc-status-details-bin',
);
const headerValue = fc.oneof(
  fc.string(),
  fc.constantFrom(
    '-1',
    '1e309',
    '9'.repeat(40),
    'NaN',
    'Infinity',
    '-0',
    '0',
    '  7 ',
    'Mon, 99 Foo 2026 99:99:99 GMT',
    '"p";r=-1;t=-5',
    '"p";r=0;t=999999999999999',
    'limit=1, remaining=0, reset=-3',
    '99999999999999999999',
  ),
  fc.integer().map(String),
);
const bodyArb = fc.oneof(
  fc.string(),
  fc.json(),
  fc.constantFrom(
    rest.body,
    rpc.body,
    '{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"-5s"}]}}',
    '{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1e400s"}]}}',
    '{"error":{"code":-32603,"data":{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"315576000000s"}}}',
    'null',
    '[]',
    '[null]',
    '{"error":null}',
  ),
);
const binaryValue = fc.oneof(
  fc.uint8Array({ maxLength: 60 }),
  fc.uint8Array({ maxLength: 60 }).map((b) => base64Encode(b)),
  fc.constantFrom(grpc.trailers['grpc-status-details-bin'] as Uint8Array, '!!!', 'A', 'AAAA,', ','),
);

function expectSaneHint(hint: RetryHint): void {
  expect(['quota', 'overload', 'transient-unknown', 'not-retryable']).toContain(hint.kind);
  if (hint.delayMs !== undefined) {
    expect(Number.isFinite(hint.delayMs)).toBe(true);
    expect(hint.delayMs).toBeGreaterThanOrEqual(0);
    expect(hint.delaySource).toBeDefined();
    expect(hint.doNotRetry).toBeUndefined();
  }
  for (const s of hint.states ?? []) {
    expect(Number.isFinite(s.remaining) && s.remaining >= 0).toBe(true);
    if (s.resetSeconds !== undefined)
      expect(Number.isFinite(s.resetSeconds) && s.resetSeconds >= 0).toBe(true);
  }
}

describe('extractRetryHint: properties', () => {
  it('never throws and always yields a finite, non-negative delay for arbitrary HTTP responses', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 100, max: 599 }),
        fc.dictionary(headerName, fc.oneof(headerValue, fc.array(headerValue, { maxLength: 3 }))),
        fc.option(bodyArb, { nil: undefined }),
        fc.oneof(fc.integer(), fc.double()),
        (status, headers, body, nowMs) => {
          const source: RetrySource =
            body === undefined
              ? { kind: 'http', status, headers }
              : { kind: 'http', status, headers, body };
          expectSaneHint(extractRetryHint(source, nowMs));
        },
      ),
    );
  });

  it('never throws for arbitrary gRPC statuses and binary trailers', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -1, max: 20 }),
        fc.option(fc.string(), { nil: undefined }),
        fc.record(
          {
            'grpc-status-details-bin': fc.oneof(
              binaryValue,
              fc.array(binaryValue, { maxLength: 2 }),
            ),
            'grpc-retry-pushback-ms': headerValue,
            'retry-after': headerValue,
            ratelimit: headerValue,
          },
          { requiredKeys: [] },
        ),
        (code, message, metadata) => {
          const source: RetrySource =
            message === undefined
              ? { kind: 'grpc', code, metadata }
              : { kind: 'grpc', code, message, metadata };
          expectSaneHint(extractRetryHint(source, NOW));
        },
      ),
    );
  });

  it('never throws for anything thrown', () => {
    fc.assert(
      fc.property(
        fc.anything({ withObjectString: true, withNullPrototype: true, withMap: true }),
        (error) => {
          expectSaneHint(extractRetryHint({ kind: 'error', error }, NOW));
        },
      ),
    );
    const hostile = new Proxy(
      {},
      {
        get: () => {
          throw new Error('boom');
        },
        has: () => {
          throw new Error('boom');
        },
      },
    );
    expect(extractRetryHint({ kind: 'error', error: hostile }, NOW).kind).toBe('not-retryable');
    expect(
      extractRetryHint({ kind: 'http', status: 429, headers: hostile as never }, NOW).kind,
    ).toBe('quota');
  });

  it('ignores malformed delay values rather than guessing', () => {
    fc.assert(
      fc.property(
        // (a decimal such as 1.5 is malformed for Retry-After but a valid legacy reset)
        fc.constantFrom('-1', 'soon', '', '1e3', 'Infinity', '9'.repeat(400), '0x10'),
        (bad) => {
          const hint = extractRetryHint(
            {
              kind: 'http',
              status: 429,
              headers: { 'retry-after': bad, 'x-ratelimit-reset': bad },
            },
            NOW,
          );
          expect(hint).toEqual({ kind: 'quota', status: 429 });
        },
      ),
    );
  });

  it('a garbage pushback means do-not-retry only when it is the only hint', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('-1', '-500', 'abc', '', '99999999999', '1.5'),
        fc.boolean(),
        (pushback, withRetryAfter) => {
          const metadata = withRetryAfter
            ? { 'grpc-retry-pushback-ms': pushback, 'retry-after': '2' }
            : { 'grpc-retry-pushback-ms': pushback };
          const hint = extractRetryHint({ kind: 'grpc', code: 14, metadata }, NOW);
          if (withRetryAfter) {
            expect(hint.delayMs).toBe(2_000);
            expect(hint.doNotRetry).toBeUndefined();
          } else {
            expect(hint.doNotRetry).toBe(true);
            expect(hint.delayMs).toBeUndefined();
          }
        },
      ),
    );
  });
});
