/**
 * @module rejection-of
 * The `Rejection` value and rejected decision every store builds, with an overload refusal's
 * `signal`.
 */

import type { CompiledOverloadPolicy, CompiledPolicy } from './compiled-policy.js';
import type { DecisionInput } from './decision-state.js';
import {
  describeQuota,
  type LimitState,
  type RejectedDecision,
  type Rejection,
  type RejectionSignal,
  retryAfterMsOf,
  wireDelaySeconds,
} from './rejection.js';

const QUOTA_TEXT = new WeakMap<CompiledPolicy, string>();

/** "60 requests per 60 s", cached per policy. */
function policyQuotaText(p: CompiledPolicy): string {
  let text = QUOTA_TEXT.get(p);
  if (text === undefined) {
    text = quotaText(p);
    QUOTA_TEXT.set(p, text);
  }
  return text;
}

function quotaText(p: CompiledPolicy): string {
  switch (p.kind) {
    case 'rate': {
      if (p.unit !== undefined) return `${p.limit} ${p.unit} per ${p.windowSeconds} s`;
      const text = describeQuota({ limit: p.limit, windowSeconds: p.windowSeconds, remaining: 0 });
      return p.tier === undefined ? text : `tier ${p.tier}: ${text}`;
    }
    case 'concurrency':
      return p.shareOfInFlight === undefined
        ? describeQuota({ limit: p.max, remaining: 0 })
        : `caller share: ${p.max} of ${p.shareOfInFlight} requests in flight`;
    case 'overload':
      return `${p.maxInFlight} requests in flight`;
  }
}

/**
 * The signal of overload policy `p` that refused `input`: the event-loop delay when it is above
 * the policy's threshold (it refuses whatever the count), else the requests in flight. A function
 * of the policy and the input alone, so every store names the same signal.
 */
function overloadSignalOf(p: CompiledOverloadPolicy, input: DecisionInput): RejectionSignal {
  const lag = input.eventLoopDelayMs;
  return lag !== undefined && lag > p.maxEventLoopDelayMs ? 'eventLoopDelay' : 'inFlight';
}

/** The message of an overload refusal, naming the signal that fired and its threshold. */
function overloadMessage(
  p: CompiledOverloadPolicy,
  signal: RejectionSignal,
  input: DecisionInput,
  seconds: number,
): string {
  const what =
    signal === 'eventLoopDelay'
      ? `event-loop delay ${Math.round(input.eventLoopDelayMs ?? 0)} ms over ${p.maxEventLoopDelayMs} ms`
      : policyQuotaText(p);
  return `Agent overloaded (${p.name}: ${what}); retry in ${seconds} s`;
}

/**
 * The {@link Rejection} value when policy `p` set the delay for `subject`: kind from the policy,
 * `quota` for quota rejections of rate and concurrency policies, `reserved` for rate policies.
 * Every store builds its rejections with this function.
 *
 * @example
 * ```ts
 * rejectionOf(policy, 'caller:a', input, 1000, true).message; // 'caller:a exceeded per-caller …'
 * ```
 */
export function rejectionOf(
  p: CompiledPolicy,
  subject: string,
  input: DecisionInput,
  retryAfterMs: number,
  reserved: boolean | undefined,
): Rejection {
  const seconds = wireDelaySeconds(retryAfterMs);
  const kind = p.rejectAs;
  const signal: RejectionSignal | undefined =
    p.kind === 'overload'
      ? overloadSignalOf(p, input)
      : p.kind === 'concurrency' && p.shareOfInFlight !== undefined
        ? 'callerShare'
        : undefined;
  const message =
    p.kind === 'overload' && signal !== undefined
      ? overloadMessage(p, signal, input, seconds)
      : kind === 'overload'
        ? `Agent overloaded (${p.name}: ${policyQuotaText(p)}); retry in ${seconds} s`
        : `${subject} exceeded ${p.name} (${policyQuotaText(p)}) for ${input.method}; retry in ${seconds} s`;
  const rejection: { -readonly [K in keyof Rejection]: Rejection[K] } = {
    kind,
    retryAfterMs,
    policy: p.name,
    scope: p.scopeName,
    subject,
    method: input.method,
    message,
  };
  if (kind === 'quota') {
    if (p.kind === 'rate') {
      rejection.quota = {
        limit: p.limit,
        windowSeconds: p.windowSeconds,
        remaining: 0,
        ...(p.unit === undefined ? {} : { unit: p.unit }),
      };
    } else if (p.kind === 'concurrency') {
      rejection.quota = { limit: p.max, remaining: 0 };
    }
  }
  if (reserved !== undefined) rejection.reserved = reserved;
  if (signal !== undefined) rejection.signal = signal;
  if (p.kind === 'rate' && p.tier !== undefined) rejection.tier = p.tier;
  return rejection;
}

/**
 * The rejected decision whose delay `delayUs` was set by `setter` (its policy and table key):
 * the {@link Rejection} (see {@link rejectionOf}) and the rate states for the headers. Every store
 * assembles its rejections with this function.
 *
 * @example
 * ```ts
 * rejectedDecision({ policy, key: 'a' }, input, 1_000_000, true, limits).rejection.retryAfterMs; // 1000
 * ```
 */
export function rejectedDecision(
  setter: { readonly policy: CompiledPolicy; readonly key: string },
  input: DecisionInput,
  delayUs: number,
  reserved: boolean | undefined,
  limits: readonly LimitState[],
): RejectedDecision {
  const subject = setter.policy.subjectOf(input) ?? setter.key;
  return {
    admitted: false,
    rejection: rejectionOf(setter.policy, subject, input, retryAfterMsOf(delayUs), reserved),
    limits,
  };
}
