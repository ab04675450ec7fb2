/**
 * @module probe-body
 * How `probe` reads a rejection's body per binding: the verdict on the body and the details it
 * carried.
 */

import {
  decodeStatus,
  type ErrorInfo,
  findDetail,
  parseErrorBody,
  type Status,
} from 'a2a-ratelimit';
import { fail, type ProbeCheck, pass } from './probe-check.js';
import { describeContent } from './probe-response.js';
import type { CapturedResponse } from './probe-transport.js';

/** One google.rpc detail, as decoded. */
type Detail = Status['details'][number];

/** The details a response carries (body or binary trailer), with how the body came out. */
export interface BodyReading {
  readonly check: ProbeCheck;
  readonly details: readonly Detail[];
}

/** The body check of an HTTP (REST or JSON-RPC) rejection, and its details. */
export function httpBody(response: CapturedResponse): BodyReading {
  const parsed = parseErrorBody(response.body);
  const got = describeContent(response);
  if (response.binding === 'rest') {
    if (parsed?.shape !== 'google-rpc') {
      return {
        check: fail(
          'body',
          `expected google.rpc.Status JSON under "error", got ${parsed === undefined ? got : `JSON of another shape (${parsed.shape})`}`,
        ),
        details: parsed?.details ?? [],
      };
    }
    const problems: string[] = [];
    if (parsed.code !== response.status)
      problems.push(
        `error.code ${parsed.code ?? 'missing'} is not the HTTP status ${response.status}`,
      );
    const expectedName =
      response.status === 429
        ? 'RESOURCE_EXHAUSTED'
        : response.status === 503
          ? 'UNAVAILABLE'
          : undefined;
    if (expectedName !== undefined && parsed.statusName !== expectedName) {
      problems.push(`error.status ${parsed.statusName ?? 'missing'}, expected ${expectedName}`);
    }
    if (parsed.details.length === 0) problems.push('error.details is empty');
    return {
      check:
        problems.length === 0
          ? pass(
              'body',
              `google.rpc.Status JSON: code ${parsed.code}, ${parsed.statusName}, ${parsed.details.length} details`,
            )
          : fail('body', problems.join('; ')),
      details: parsed.details,
    };
  }
  if (parsed?.shape !== 'json-rpc') {
    return {
      check: fail(
        'body',
        `expected a JSON-RPC error envelope, got ${parsed === undefined ? got : `JSON of another shape (${parsed.shape})`}`,
      ),
      details: parsed?.details ?? [],
    };
  }
  if (parsed.code !== -32603) {
    return {
      check: fail('body', `expected error.code -32603, got ${parsed.code ?? 'none'}`),
      details: parsed.details,
    };
  }
  if (parsed.details.length === 0) {
    return {
      check: fail(
        'body',
        'JSON-RPC error -32603 without error.data: no rejection details received',
      ),
      details: [],
    };
  }
  return {
    check: pass(
      'body',
      `JSON-RPC error -32603 with ${parsed.details.length} typed details in error.data`,
    ),
    details: parsed.details,
  };
}

/**
 * The body check of a gRPC rejection (its binary `grpc-status-details-bin` trailer, which must
 * agree with `grpc-status` and `grpc-message`), and its details.
 */
export function grpcBody(response: CapturedResponse): BodyReading {
  if (response.statusDetails === undefined) {
    return {
      check: fail(
        'body',
        'no grpc-status-details-bin trailer received: no google.rpc.Status details',
      ),
      details: [],
    };
  }
  let status: Status;
  try {
    status = decodeStatus(response.statusDetails);
  } catch {
    return {
      check: fail('body', 'grpc-status-details-bin is not a binary google.rpc.Status'),
      details: [],
    };
  }
  const problems: string[] = [];
  if (status.code !== response.status)
    problems.push(`its code ${status.code} is not the grpc-status ${response.status}`);
  if (status.message !== response.body) problems.push('its message is not the grpc-message');
  if (status.details.length === 0) problems.push('it has no details');
  return {
    check:
      problems.length === 0
        ? pass(
            'body',
            `grpc-status-details-bin: google.rpc.Status with ${status.details.length} details, matching grpc-status and grpc-message`,
          )
        : fail('body', `grpc-status-details-bin: ${problems.join('; ')}`),
    details: status.details,
  };
}

/** The first ErrorInfo among `details`. */
export function firstErrorInfo(details: readonly Detail[]): ErrorInfo | undefined {
  return findDetail(details, 'ErrorInfo');
}

/**
 * The delay RetryInfo gives among `details`, ms; undefined when there is none, or it is negative.
 *
 * @example
 * ```ts
 * retryInfoDelayMs(status.details); // 12000 for retryDelay 12 s
 * ```
 */
export function retryInfoDelayMs(details: readonly Detail[]): number | undefined {
  const delay = findDetail(details, 'RetryInfo')?.retryDelay;
  if (delay === undefined) return undefined;
  const ms = Number(delay.seconds) * 1000 + delay.nanos / 1e6;
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}
