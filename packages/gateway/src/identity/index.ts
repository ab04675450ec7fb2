/**
 * @module identity
 * Who is calling the gateway: the `identity:` config, the resolver (trusted header, API key, JWT,
 * client address) and the 401 answer of each binding.
 */
export {
  type ApiKeyOwner,
  type ApiKeyTable,
  createApiKeyTable,
  type TextReader,
} from './api-key-table.js';
export { type CidrSet, clientAddress, createCidrSet, normalizeAddress } from './client-address.js';
export {
  type ApiKeyEntry,
  DEFAULT_JWT_ALGORITHMS,
  type IdentityConfig,
  type JwtConfig,
  MIN_API_KEY_LENGTH,
  parseIdentityConfig,
  sha256HexOf,
  type TrustedHeaderConfig,
} from './identity-config.js';
export {
  createIdentityResolver,
  IDENTITY_FAILURE_REASONS,
  type IdentityFailure,
  type IdentityFailureReason,
  type IdentityRequest,
  type IdentityResolver,
  type IdentityResolverDeps,
  type IdentityResult,
  type IdentitySource,
} from './identity-resolver.js';
export {
  encodeGrpcUnauthenticated,
  encodeJsonRpcUnauthenticated,
  encodeRestUnauthenticated,
  JSON_RPC_UNAUTHENTICATED_CODE,
  type JsonRpcUnauthenticatedOptions,
  UNAUTHENTICATED_REASON,
  type UnauthenticatedEncodeOptions,
  type UnauthenticatedGrpcStatus,
  type UnauthenticatedHttpResponse,
  unauthenticatedStatus,
  wwwAuthenticate,
} from './unauthenticated-response.js';
