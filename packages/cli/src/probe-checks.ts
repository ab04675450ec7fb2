/**
 * @module probe-checks
 * What `probe` checks about one rejection as it arrived, per binding, each check named and graded.
 * Pure.
 */

import { GRPC_CODES, parseErrorBody, parseRetryAfter, readRateLimitFields } from 'a2a-ratelimit';
import { firstErrorInfo, grpcBody, httpBody, retryInfoDelayMs } from './probe-body.js';
import { type CheckLevel, fail, type ProbeCheck, pass } from './probe-check.js';
import { describeContent, GRPC_NAMES } from './probe-response.js';
import type { CapturedResponse } from './probe-transport.js';

/** The ErrorInfo domain A2A reserves for its own errors (never a rate limit's). */
const A2A_DOMAIN = 'a2a-protocol.org';

/**
 * The level of check `name` on `binding`: `ratelimit` and gRPC's `pushback` and `retry-after`
 * metadata are recommended (the format sends `Retry-After` as an HTTP header and calls `RateLimit`
 * a hint); everything else is required.
 *
 * @example
 * ```ts
 * checkLevel('ratelimit', 'rest'); // 'recommended'
 * checkLevel('retry-info', 'rest'); // 'required'
 * ```
 */
export function checkLevel(name: string, binding: CapturedResponse['binding']): CheckLevel {
  if (name === 'ratelimit' || name === 'pushback') return 'recommended';
  if (name === 'retry-after' && binding === 'grpc') return 'recommended';
  return 'required';
}

/**
 * `check` with its level for `binding`; a failed recommended check becomes a warning.
 *
 * @example
 * ```ts
 * graded({ name: 'ratelimit', status: 'fail', detail: 'no RateLimit header' }, 'rest').status; // 'warn'
 * ```
 */
export function graded(check: ProbeCheck, binding: CapturedResponse['binding']): ProbeCheck {
  const level = checkLevel(check.name, binding);
  const status = check.status === 'fail' && level === 'recommended' ? 'warn' : check.status;
  return { ...check, status, level };
}

/**
 * What the checks found, plus the delay (seconds) a client would read from the response.
 */
export interface RejectionChecks {
  readonly checks: readonly ProbeCheck[];
  /** `quota` / `overload` as the status (or, failing that, the reason) says; undefined if neither does. */
  readonly kind?: 'quota' | 'overload';
  /** RetryInfo seconds, if RetryInfo survived. */
  readonly delaySeconds?: number;
  /** The policy ErrorInfo names, if it survived. */
  readonly policy?: string;
}

/**
 * Context of the checks.
 */
export interface CheckContext {
  /** For `Retry-After` given as an HTTP-date. */
  readonly nowMs: number;
  /** The ErrorInfo domain the agent card's rate-limit extension announces, if any. */
  readonly expectedDomain?: string;
}

const REASON_OF_KIND = { quota: 'RATE_LIMIT_EXCEEDED', overload: 'AGENT_OVERLOADED' } as const;
const KIND_OF_REASON: Readonly<Record<string, 'quota' | 'overload'>> = {
  RATE_LIMIT_EXCEEDED: 'quota',
  AGENT_OVERLOADED: 'overload',
};

function expectedHttpKind(status: number): 'quota' | 'overload' | undefined {
  return status === 429 ? 'quota' : status === 503 ? 'overload' : undefined;
}

function statusCheck(response: CapturedResponse): {
  check: ProbeCheck;
  kind?: 'quota' | 'overload';
} {
  const s = response.status;
  if (response.binding === 'grpc') {
    if (s === GRPC_CODES.RESOURCE_EXHAUSTED)
      return { check: pass('status', 'RESOURCE_EXHAUSTED (8): quota'), kind: 'quota' };
    if (s === GRPC_CODES.UNAVAILABLE && response.synthesized !== true) {
      return { check: pass('status', 'UNAVAILABLE (14): overload'), kind: 'overload' };
    }
    const name = GRPC_NAMES[s] ?? String(s);
    const made =
      response.synthesized === true ? ` made up by the client from "${response.body}"` : '';
    return {
      check: fail(
        'status',
        `expected RESOURCE_EXHAUSTED (8) or UNAVAILABLE (14), got ${name} (${s})${made}`,
      ),
    };
  }
  const kind = expectedHttpKind(s);
  if (response.binding === 'rest') {
    if (kind !== undefined) return { check: pass('status', `${s}: ${kind}`), kind };
    return {
      check: fail('status', `expected 429 (quota) or 503 (overload), got ${s}`),
    };
  }
  if (s === 200)
    return { check: pass('status', '200 (JSON-RPC default; the error is in the body)') };
  if (kind !== undefined)
    return { check: pass('status', `${s} (mirrored HTTP status: ${kind})`), kind };
  return { check: fail('status', `expected 200, or 429 / 503 when mirrored, got ${s}`) };
}

function mediaTypeCheck(response: CapturedResponse): ProbeCheck {
  if (response.binding === 'grpc') {
    return response.synthesized === true
      ? fail(
          'media type',
          `expected a gRPC response (application/grpc), got ${response.body.replace(/^Received /, '')} with no gRPC status (a gateway page?)`,
        )
      : pass('media type', 'application/grpc: a gRPC status from the far end');
  }
  const type = response.mediaType;
  if (response.binding === 'rest') {
    if (type === 'application/a2a+json') return pass('media type', type);
    if (type === 'application/json')
      return pass(
        'media type',
        'application/json (A2A names application/a2a+json; clients accept both)',
      );
    return fail('media type', `expected application/a2a+json, got ${describeContent(response)}`);
  }
  if (type === 'application/json') return pass('media type', type);
  return fail('media type', `expected application/json, got ${describeContent(response)}`);
}

/**
 * Whether the answer is no A2A answer at all: a 2xx that is no A2A answer (a refusal received as a
 * success page), or an HTTP 503 whose body is no A2A error (not an AGENT_OVERLOADED). Which of the
 * agent or something on the way wrote it, only `probe --direct` can tell. Undefined when the
 * answer is an A2A one.
 *
 * @example
 * ```ts
 * a2aAnswerCheck(captured)?.detail; // 'HTTP 200 with an HTML page (text/html): not an A2A answer …'
 * ```
 */
export function a2aAnswerCheck(response: CapturedResponse): ProbeCheck | undefined {
  if (response.binding === 'grpc') return undefined;
  if (response.notA2A !== undefined) {
    return fail(
      'a2a-answer',
      `HTTP ${response.status} with ${response.notA2A}: not an A2A answer, so no rejection was received (a success status on a page that is not the call's answer; not counted as an admission)`,
    );
  }
  if (response.status === 503 && parseErrorBody(response.body) === undefined) {
    return fail(
      'a2a-answer',
      `HTTP 503 with ${describeContent(response)}: not an A2A error, so no AGENT_OVERLOADED was received (a proxy's own 503, its upstream down or its own limit?)`,
    );
  }
  return undefined;
}

/**
 * Runs every check on a captured rejection.
 *
 * @example
 * ```ts
 * const { checks, delaySeconds } = checkRejection(captured, { nowMs: Date.now() });
 * checks.filter((c) => c.status === 'fail').map((c) => `${c.name}: ${c.detail}`);
 * ```
 */
export function checkRejection(response: CapturedResponse, context: CheckContext): RejectionChecks {
  const checks: ProbeCheck[] = [];
  const answer = a2aAnswerCheck(response);
  if (answer !== undefined) checks.push(answer);
  const status = statusCheck(response);
  checks.push(status.check, mediaTypeCheck(response));
  const body = response.binding === 'grpc' ? grpcBody(response) : httpBody(response);
  checks.push(body.check);
  const lost = body.details.length === 0 ? ' (no details received)' : '';

  // ErrorInfo reason.
  const info = firstErrorInfo(body.details);
  const reasonKind = info === undefined ? undefined : KIND_OF_REASON[info.reason];
  const kind = status.kind ?? reasonKind;
  if (info === undefined) {
    checks.push(fail('reason', `no ErrorInfo${lost}: clients cannot tell a quota from a crash`));
  } else if (reasonKind === undefined) {
    checks.push(
      fail(
        'reason',
        `ErrorInfo reason ${info.reason || '(empty)'}, expected RATE_LIMIT_EXCEEDED or AGENT_OVERLOADED`,
      ),
    );
  } else if (status.kind !== undefined && status.kind !== reasonKind) {
    checks.push(
      fail(
        'reason',
        `ErrorInfo reason ${info.reason} does not match the status (expected ${REASON_OF_KIND[status.kind]})`,
      ),
    );
  } else {
    const policy = info.metadata.policy;
    checks.push(
      pass(
        'reason',
        `${info.reason}${policy ? `, policy "${policy}"` : ''}${info.metadata.scope ? `, scope ${info.metadata.scope}` : ''}`,
      ),
    );
  }

  // ErrorInfo domain.
  if (info === undefined) {
    checks.push(fail('domain', `no ErrorInfo${lost}`));
  } else if (info.domain.trim() === '') {
    checks.push(fail('domain', 'ErrorInfo has no domain'));
  } else if (info.domain.toLowerCase() === A2A_DOMAIN) {
    checks.push(
      fail(
        'domain',
        `${info.domain} is reserved for A2A's own errors; rate limits belong in the operator's domain`,
      ),
    );
  } else if (context.expectedDomain !== undefined && context.expectedDomain !== info.domain) {
    checks.push(
      fail(
        'domain',
        `${info.domain}, but the agent card's rate-limit extension says ${context.expectedDomain}`,
      ),
    );
  } else {
    checks.push(pass('domain', info.domain));
  }

  // RetryInfo.
  const retryMs = retryInfoDelayMs(body.details);
  const delaySeconds = retryMs === undefined ? undefined : retryMs / 1000;
  if (delaySeconds === undefined) {
    checks.push(fail('retry-info', `no RetryInfo${lost}: clients must guess how long to wait`));
  } else if (!Number.isInteger(delaySeconds) || delaySeconds < 1) {
    checks.push(fail('retry-info', `RetryInfo ${delaySeconds}s: expected whole seconds ≥ 1`));
  } else {
    checks.push(pass('retry-info', `retry in ${delaySeconds} s`));
  }

  // Retry-After (header, or gRPC metadata).
  const get = (name: string): string | undefined => response.headers[name];
  const where = response.binding === 'grpc' ? 'retry-after metadata' : 'Retry-After header';
  const retryAfterText = get('retry-after');
  if (retryAfterText === undefined) {
    checks.push(
      fail(
        'retry-after',
        `no ${where} received: clients and proxies that never read bodies cannot wait`,
      ),
    );
  } else {
    const ms = parseRetryAfter(retryAfterText, context.nowMs);
    const seconds = ms === undefined ? undefined : ms / 1000;
    if (seconds === undefined)
      checks.push(
        fail('retry-after', `${where} "${retryAfterText}" is not seconds nor an HTTP-date`),
      );
    else if (
      delaySeconds !== undefined &&
      Math.abs(seconds - delaySeconds) > (/^\s*\d+\s*$/.test(retryAfterText) ? 0 : 1)
    ) {
      checks.push(
        fail('retry-after', `${where} says ${retryAfterText}, RetryInfo says ${delaySeconds} s`),
      );
    } else {
      checks.push(
        pass(
          'retry-after',
          `${retryAfterText}${delaySeconds === undefined ? '' : ' s, same as RetryInfo'}`,
        ),
      );
    }
  }

  // RateLimit / RateLimit-Policy.
  const fields = readRateLimitFields(get, context.nowMs);
  const policy = info?.metadata.policy;
  const items = fields.states.filter((s) => s.form === 'ratelimit' && s.policy !== undefined);
  const item = items.find((s) => s.policy === policy) ?? items.find((s) => s.remaining === 0);
  if (get('ratelimit') === undefined) {
    checks.push(
      fail(
        'ratelimit',
        'no RateLimit header received (a recommended hint: clients can pace themselves by it)',
      ),
    );
  } else if (item === undefined) {
    checks.push(
      fail(
        'ratelimit',
        `RateLimit "${get('ratelimit')}" has no item for${policy ? ` policy "${policy}"` : ' the rejecting policy'}`,
      ),
    );
  } else {
    const problems: string[] = [];
    if (item.remaining !== 0) problems.push(`r=${item.remaining}, expected 0`);
    if (delaySeconds !== undefined && item.resetSeconds !== delaySeconds) {
      problems.push(`t=${item.resetSeconds ?? 'missing'}, RetryInfo says ${delaySeconds} s`);
    }
    if (!fields.policies.some((p) => p.policy === item.policy))
      problems.push(`no RateLimit-Policy for "${item.policy}"`);
    checks.push(
      problems.length === 0
        ? pass(
            'ratelimit',
            `"${item.policy}";r=0;t=${item.resetSeconds}${fields.policies.length > 0 ? `, RateLimit-Policy ${get('ratelimit-policy')}` : ''}`,
          )
        : fail('ratelimit', problems.join('; ')),
    );
  }

  // gRPC pushback.
  if (response.binding === 'grpc') {
    const pushback = get('grpc-retry-pushback-ms');
    if (pushback === undefined)
      checks.push(fail('pushback', 'no grpc-retry-pushback-ms trailer received'));
    else if (delaySeconds !== undefined && Number(pushback) !== delaySeconds * 1000) {
      checks.push(
        fail(
          'pushback',
          `grpc-retry-pushback-ms ${pushback}, RetryInfo says ${delaySeconds * 1000} ms`,
        ),
      );
    } else checks.push(pass('pushback', `${pushback} ms`));
  }

  return {
    checks: checks.map((c) => graded(c, response.binding)),
    ...(kind === undefined ? {} : { kind }),
    ...(delaySeconds === undefined ? {} : { delaySeconds }),
    ...(policy === undefined ? {} : { policy }),
  };
}
