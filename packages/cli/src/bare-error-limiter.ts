/**
 * @module bare-error-limiter
 * `bareErrorLimiter`: the demo's spec-literal agent — the same decision, every rejection a bare
 * internal error.
 */

import type { AdmissionOutcome, AdmissionTicket, Limiter } from 'a2a-ratelimit/server';

/** What the limiter's HTTP encoders return: status, headers, body. */
type HttpRejectionResponse = ReturnType<Limiter['encodeRest']>;
/** What the limiter's gRPC encoder returns. */
type GrpcRejectionStatus = ReturnType<Limiter['encodeGrpc']>;

/** google.rpc.Code INTERNAL. */
const GRPC_INTERNAL = 13;

function withoutRateLimitHeaders(outcome: AdmissionOutcome): AdmissionOutcome {
  if (outcome.status !== 'admitted') return outcome;
  const inner = outcome.ticket;
  const ticket: AdmissionTicket = {
    id: inner.id,
    request: inner.request,
    limits: inner.limits,
    headers: {},
    claimedHold: inner.claimedHold,
    needsEnd: inner.needsEnd,
    end: () => inner.end(),
  };
  return { status: 'admitted', ticket };
}

/**
 * Wraps a limiter so that it decides exactly as before but answers like an agent that follows the
 * spec's examples literally: a bare 500 / -32603 / INTERNAL, no retry guidance at all, and no
 * `RateLimit` headers on admitted responses. It shows that the difference between the demo's runs
 * is the response format alone.
 *
 * @example
 * ```ts
 * const bare = bareErrorLimiter(createLimiter({ policies, domain: 'agents.example.com', holds: { maxHoldsPerKey: 0 } }));
 * app.use('/a2a/rest', restAdmission(bare, { userBuilder, requestHandler }));
 * ```
 */
export function bareErrorLimiter(limiter: Limiter): Limiter {
  const restBody = JSON.stringify({
    error: { code: 500, status: 'INTERNAL', message: 'Internal error', details: [] },
  });
  return {
    ...limiter,
    // Live after `updatePolicies` (a spread would copy the set of the moment).
    get policySet() {
      return limiter.policySet;
    },
    get policySetVersion() {
      return limiter.policySetVersion;
    },
    admit(request) {
      const outcome = limiter.admit(request);
      return outcome instanceof Promise
        ? outcome.then(withoutRateLimitHeaders)
        : withoutRateLimitHeaders(outcome);
    },
    encodeRest: (): HttpRejectionResponse => ({
      status: 500,
      headers: { 'content-type': 'application/a2a+json' },
      body: restBody,
    }),
    encodeJsonRpc: (_rejection, id): HttpRejectionResponse => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id,
        error: { code: -32603, message: 'Internal error' },
      }),
    }),
    // The adapters only read code, message and trailers; the type narrows code to the two
    // rejection codes, which is exactly what this deliberately non-conforming agent does not send.
    encodeGrpc: (): GrpcRejectionStatus =>
      ({
        code: GRPC_INTERNAL,
        message: 'Internal error',
        trailers: {},
      }) as unknown as GrpcRejectionStatus,
  };
}
