import { describe, expect, it } from 'vitest';
import { TYPE_URLS } from './google-rpc.js';
import {
  detailFromJson,
  detailsFromJson,
  detailsToJson,
  parseJsonInt64,
  statusFromJson,
  statusToJson,
} from './proto-json.js';

describe('ProtoJSON details', () => {
  it('writes lowerCamelCase members, int64 as strings, durations as strings, no defaults', () => {
    expect(
      detailsToJson([
        { type: 'ErrorInfo', message: { reason: 'R', domain: 'd.example', metadata: {} } },
        { type: 'RetryInfo', message: { retryDelay: { seconds: 12n, nanos: 0 } } },
        {
          type: 'QuotaFailure',
          message: {
            violations: [
              {
                subject: 's',
                description: '',
                apiService: '',
                quotaMetric: '',
                quotaId: 'q',
                quotaDimensions: { method: 'GetTask' },
                quotaValue: 100n,
                futureQuotaValue: 0n,
              },
            ],
          },
        },
      ]),
    ).toEqual([
      { '@type': TYPE_URLS.errorInfo, reason: 'R', domain: 'd.example' },
      { '@type': TYPE_URLS.retryInfo, retryDelay: '12s' },
      {
        '@type': TYPE_URLS.quotaFailure,
        violations: [
          {
            subject: 's',
            quotaId: 'q',
            quotaDimensions: { method: 'GetTask' },
            quotaValue: '100',
            futureQuotaValue: '0',
          },
        ],
      },
    ]);
  });

  it('reads original proto field names and int64 numbers', () => {
    expect(
      detailFromJson({
        '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
        violations: [{ quota_id: 'q', quota_value: 7, quota_dimensions: { a: 'b', n: 1 } }, 'junk'],
      }),
    ).toEqual({
      type: 'QuotaFailure',
      message: {
        violations: [
          {
            subject: '',
            description: '',
            apiService: '',
            quotaMetric: '',
            quotaId: 'q',
            quotaDimensions: { a: 'b' },
            quotaValue: 7n,
          },
        ],
      },
    });
    expect(detailFromJson({ '@type': 'x/google.rpc.RetryInfo', retry_delay: '2.5s' })).toEqual({
      type: 'RetryInfo',
      message: { retryDelay: { seconds: 2n, nanos: 500_000_000 } },
    });
  });

  it('ignores members of the wrong type and an unparseable retryDelay', () => {
    expect(detailFromJson({ '@type': TYPE_URLS.retryInfo, retryDelay: 12 })).toEqual({
      type: 'RetryInfo',
      message: {},
    });
    expect(detailFromJson({ '@type': TYPE_URLS.errorInfo, reason: 5, metadata: 'x' })).toEqual({
      type: 'ErrorInfo',
      message: { reason: '', domain: '', metadata: {} },
    });
  });

  it('accepts data as an array, a single object, or anything else', () => {
    const retry = { '@type': TYPE_URLS.retryInfo, retryDelay: '1s' };
    expect(detailsFromJson([retry, { method: 'x' }, 3])).toHaveLength(1);
    expect(detailsFromJson(retry)).toHaveLength(1);
    expect(detailsFromJson({ method: 'invalid/method' })).toEqual([]);
    expect(detailsFromJson(undefined)).toEqual([]);
  });

  it('keeps unknown types as their JSON and writes them back unchanged', () => {
    const help = { '@type': 'type.googleapis.com/google.rpc.Help', links: [{ url: 'https://x' }] };
    expect(detailsToJson(detailsFromJson([help]))).toEqual([help]);
  });

  it('parses int64 strictly', () => {
    expect(parseJsonInt64('9223372036854775807')).toBe(2n ** 63n - 1n);
    expect(parseJsonInt64('9223372036854775808')).toBeUndefined();
    expect(parseJsonInt64(1.5)).toBeUndefined();
    expect(parseJsonInt64('1e3')).toBeUndefined();
  });

  it('round-trips a Status', () => {
    const json = statusToJson({
      code: 8,
      message: 'm',
      details: [{ type: 'RetryInfo', message: { retryDelay: { seconds: 3n, nanos: 0 } } }],
    });
    expect(json).toEqual({
      code: 8,
      message: 'm',
      details: [{ '@type': TYPE_URLS.retryInfo, retryDelay: '3s' }],
    });
    expect(statusFromJson(json)?.details).toEqual([
      { type: 'RetryInfo', message: { retryDelay: { seconds: 3n, nanos: 0 } } },
    ]);
    expect(statusFromJson('x')).toBeUndefined();
  });
});
