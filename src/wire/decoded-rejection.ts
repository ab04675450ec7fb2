/**
 * @module decoded-rejection
 * The one shape every binding's rejection decodes back to, and the reading of our details list
 * (ErrorInfo, RetryInfo, QuotaFailure) into it.
 */

import type { RejectionKind } from '../core/policy.js';
import { REASONS, type RejectionReason } from '../core/rejection.js';
import { durationToMs, parseJsonRetryDelay } from './duration.js';
import { A2A_DOMAIN, type Detail, type ErrorInfo, findDetail } from './google-rpc.js';

/**
 * A rejection as read back from the wire.
 *
 * @example
 * ```ts
 * const d: DecodedRejection = {
 *   kind: 'quota', reason: 'RATE_LIMIT_EXCEEDED', domain: 'agents.example.com', policy: 'per-caller',
 *   scope: 'caller', method: 'SendMessage', subject: 'caller:a', delaySeconds: 12, reserved: true,
 *   quotaValue: 60, message: 'retry in 12 s',
 * };
 * ```
 */
export interface DecodedRejection {
  readonly kind: RejectionKind;
  readonly reason: RejectionReason;
  readonly domain: string;
  readonly policy: string;
  readonly scope: string;
  readonly method: string;
  /** QuotaFailure violation subject. */
  readonly subject?: string;
  /** RetryInfo delay (or, without RetryInfo, the `retry-after` field), seconds. */
  readonly delaySeconds: number;
  /** ErrorInfo metadata `reserved`. */
  readonly reserved?: boolean;
  /** QuotaFailure violation quota value. */
  readonly quotaValue?: number;
  /** ErrorInfo metadata `tier`: the caller's tier whose limits refused it (tiered policies). */
  readonly tier?: string;
  readonly message: string;
}

const KIND_BY_REASON: Readonly<Record<string, RejectionKind>> = {
  [REASONS.quota]: 'quota',
  [REASONS.overload]: 'overload',
  [REASONS.unavailable]: 'overload',
};

/**
 * The first ErrorInfo that is a rate-limit rejection: one of our reasons, in any domain except
 * A2A's own. `undefined` when there is none.
 *
 * @example
 * ```ts
 * rateLimitErrorInfo(details)?.reason; // 'RATE_LIMIT_EXCEEDED'
 * ```
 */
export function rateLimitErrorInfo(details: readonly Detail[]): ErrorInfo | undefined {
  for (const d of details) {
    if (d.type !== 'ErrorInfo') continue;
    const { reason, domain } = d.message;
    if (Object.hasOwn(KIND_BY_REASON, reason) && domain.toLowerCase() !== A2A_DOMAIN) {
      return d.message;
    }
  }
  return undefined;
}

/**
 * The rejection kind an ErrorInfo reason stands for, if it is one of ours.
 *
 * @example
 * ```ts
 * kindOfReason('AGENT_OVERLOADED'); // 'overload'
 * ```
 */
export function kindOfReason(reason: string | undefined): RejectionKind | undefined {
  return reason !== undefined && Object.hasOwn(KIND_BY_REASON, reason)
    ? KIND_BY_REASON[reason]
    : undefined;
}

/**
 * The RetryInfo delay of a details list in milliseconds, when present and not negative.
 *
 * @example
 * ```ts
 * retryInfoDelayMs([{ type: 'RetryInfo', message: { retryDelay: { seconds: 2n, nanos: 0 } } }]); // 2000
 * ```
 */
export function retryInfoDelayMs(details: readonly Detail[]): number | undefined {
  const delay = findDetail(details, 'RetryInfo')?.retryDelay;
  if (delay === undefined) return undefined;
  const ms = durationToMs(delay);
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

/**
 * The delay an ErrorInfo's metadata repeats under `retryDelay` (Duration JSON, e.g. `"12s"`), in
 * milliseconds; `undefined` when absent, malformed or negative. A last resort: RetryInfo and the
 * delay headers come first.
 *
 * @example
 * ```ts
 * metadataDelayMs({ retryDelay: '1.500s' }); // 1500
 * ```
 */
export function metadataDelayMs(
  metadata: Readonly<Record<string, string>> | undefined,
): number | undefined {
  const delay = parseJsonRetryDelay(metadata?.retryDelay);
  if (delay === undefined) return undefined;
  const ms = durationToMs(delay);
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

/**
 * The kind an ErrorInfo's metadata repeats under `kind` (`quota` | `overload`); anything else is
 * `undefined`. A last resort: the reason comes first.
 *
 * @example
 * ```ts
 * metadataKind({ kind: 'overload' }); // 'overload'
 * ```
 */
export function metadataKind(
  metadata: Readonly<Record<string, string>> | undefined,
): RejectionKind | undefined {
  const kind = metadata?.kind;
  return kind === 'quota' || kind === 'overload' ? kind : undefined;
}

function reservedOf(value: string | undefined): { reserved?: boolean } {
  if (value === 'true') return { reserved: true };
  if (value === 'false') return { reserved: false };
  return {};
}

/**
 * Reads our rejection from a details list; `undefined` when the list does not carry one (no
 * rate-limit ErrorInfo with a `policy`, a reason of another kind than `expectedKind`, or no delay
 * in RetryInfo, `fallbackDelaySeconds` nor the ErrorInfo's metadata `retryDelay`, read last).
 *
 * @example
 * ```ts
 * readRejectionDetails(rejectionDetails(rejection, 'agents.example.com'), 'quota', rejection.message);
 * ```
 */
export function readRejectionDetails(
  details: readonly Detail[],
  expectedKind: RejectionKind | undefined,
  message: string,
  fallbackDelaySeconds?: number,
): DecodedRejection | undefined {
  const info = rateLimitErrorInfo(details);
  const kind = kindOfReason(info?.reason);
  if (info === undefined || kind === undefined) return undefined;
  if (expectedKind !== undefined && kind !== expectedKind) return undefined;
  const policy = info.metadata.policy;
  if (policy === undefined || policy === '') return undefined;
  const retryMs = retryInfoDelayMs(details);
  const metadataMs = metadataDelayMs(info.metadata);
  const delaySeconds =
    retryMs !== undefined
      ? retryMs / 1000
      : (fallbackDelaySeconds ?? (metadataMs === undefined ? undefined : metadataMs / 1000));
  if (delaySeconds === undefined) return undefined;
  const violation = findDetail(details, 'QuotaFailure')?.violations[0];
  const quotaValue = violation === undefined ? undefined : Number(violation.quotaValue);
  return {
    kind,
    reason: info.reason as RejectionReason,
    domain: info.domain,
    policy,
    scope: info.metadata.scope ?? '',
    method: info.metadata.method ?? '',
    ...(violation === undefined || violation.subject === '' ? {} : { subject: violation.subject }),
    delaySeconds,
    ...reservedOf(info.metadata.reserved),
    ...(quotaValue === undefined || quotaValue === 0 ? {} : { quotaValue }),
    ...(info.metadata.tier === undefined || info.metadata.tier === ''
      ? {}
      : { tier: info.metadata.tier }),
    message,
  };
}
