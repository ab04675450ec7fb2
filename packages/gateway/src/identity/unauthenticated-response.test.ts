import { decodeStatus, findDetail, parseErrorBody } from 'a2a-ratelimit';
import { describe, expect, it } from 'vitest';
import type { IdentityFailure } from './identity-resolver.js';
import {
  encodeGrpcUnauthenticated,
  encodeJsonRpcUnauthenticated,
  encodeRestUnauthenticated,
  JSON_RPC_UNAUTHENTICATED_CODE,
  wwwAuthenticate,
} from './unauthenticated-response.js';

const DOMAIN = 'gateway.example.com';
const expired: IdentityFailure = {
  ok: false,
  reason: 'expired-token',
  message: 'the token has expired',
};
const missing: IdentityFailure = {
  ok: false,
  reason: 'missing-credential',
  message: 'a credential is required: send an API key or a bearer token',
};
const errorInfo = {
  '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
  reason: 'UNAUTHENTICATED',
  domain: DOMAIN,
  metadata: { failure: 'expired-token' },
};

describe('encodeRestUnauthenticated', () => {
  it('is HTTP 401 with a google.rpc Status body and a Bearer challenge', () => {
    const r = encodeRestUnauthenticated(expired, { domain: DOMAIN });
    expect(r.status).toBe(401);
    expect(r.headers).toEqual({
      'content-type': 'application/a2a+json',
      'www-authenticate': 'Bearer error="invalid_token"',
    });
    expect(JSON.parse(r.body)).toEqual({
      error: {
        code: 401,
        status: 'UNAUTHENTICATED',
        message: 'the token has expired',
        details: [errorInfo],
      },
    });
    expect(parseErrorBody(r.body)).toMatchObject({ shape: 'google-rpc', code: 401 });
  });
});

describe('encodeJsonRpcUnauthenticated', () => {
  it('is HTTP 401 with a JSON-RPC error object carrying the request id and ErrorInfo', () => {
    const r = encodeJsonRpcUnauthenticated(expired, { domain: DOMAIN, id: 'req-7' });
    expect(r.status).toBe(401);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
    expect(JSON.parse(r.body)).toEqual({
      jsonrpc: '2.0',
      id: 'req-7',
      error: {
        code: JSON_RPC_UNAUTHENTICATED_CODE,
        message: 'the token has expired',
        data: [errorInfo],
      },
    });
    expect(JSON_RPC_UNAUTHENTICATED_CODE).toBe(-32603);
    expect(
      JSON.parse(encodeJsonRpcUnauthenticated(missing, { domain: DOMAIN, id: null }).body).id,
    ).toBeNull();
  });
});

describe('encodeGrpcUnauthenticated', () => {
  it('is UNAUTHENTICATED (16) with a Status in grpc-status-details-bin that decodes back', () => {
    const s = encodeGrpcUnauthenticated(expired, { domain: DOMAIN });
    expect(s.code).toBe(16);
    expect(s.message).toBe('the token has expired');
    const bin = s.trailers['grpc-status-details-bin'];
    expect(bin).toBeInstanceOf(Uint8Array);
    const status = decodeStatus(bin as Uint8Array);
    expect(status.code).toBe(16);
    expect(status.message).toBe('the token has expired');
    expect(findDetail(status.details, 'ErrorInfo')).toEqual({
      reason: 'UNAUTHENTICATED',
      domain: DOMAIN,
      metadata: { failure: 'expired-token' },
    });
  });
});

describe('wwwAuthenticate', () => {
  it('challenges plainly when nothing was sent, with invalid_token otherwise', () => {
    expect(wwwAuthenticate(missing)).toBe('Bearer');
    expect(wwwAuthenticate({ ok: false, reason: 'unknown-key', message: 'x' })).toBe(
      'Bearer error="invalid_token"',
    );
  });
});
