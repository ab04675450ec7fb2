import { encodeStatus } from 'a2a-ratelimit';
import { describe, expect, it } from 'vitest';
import { grpcUpstreamRejection } from './grpc-upstream-rejection.js';

const NOW = 1_000_000;
const retryInfo = Buffer.from(
  encodeStatus({
    code: 14,
    message: 'busy',
    details: [{ type: 'RetryInfo', message: { retryDelay: { seconds: 2n, nanos: 500_000_000 } } }],
  }),
).toString('base64');

describe('grpcUpstreamRejection', () => {
  it('RESOURCE_EXHAUSTED / UNAVAILABLE with a delay become quota / overload with it', () => {
    expect(
      grpcUpstreamRejection('SendMessage', { 'grpc-status': '8', 'retry-after': '3' }, NOW),
    ).toMatchObject({
      kind: 'quota',
      retryAfterMs: 3000,
      policy: 'upstream',
      method: 'SendMessage',
    });
    expect(
      grpcUpstreamRejection(
        'GetTask',
        { 'grpc-status': '8', 'grpc-retry-pushback-ms': '1200' },
        NOW,
      ),
    ).toMatchObject({ kind: 'quota', retryAfterMs: 1200 });
    expect(
      grpcUpstreamRejection(
        'SendMessage',
        { 'grpc-status': '14', 'grpc-status-details-bin': retryInfo },
        NOW,
      ),
    ).toMatchObject({ kind: 'overload', retryAfterMs: 2500 });
  });

  it('passes through other codes, and these without a delay (or a pushback saying stop)', () => {
    expect(grpcUpstreamRejection('SendMessage', { 'grpc-status': '8' }, NOW)).toBeUndefined();
    expect(
      grpcUpstreamRejection('SendMessage', { 'grpc-status': '13', 'retry-after': '3' }, NOW),
    ).toBeUndefined();
    expect(
      grpcUpstreamRejection(
        'SendMessage',
        { 'grpc-status': '8', 'grpc-retry-pushback-ms': '-1' },
        NOW,
      ),
    ).toBeUndefined();
    expect(grpcUpstreamRejection('SendMessage', { 'grpc-status': '0' }, NOW)).toBeUndefined();
  });
});
