/**
 * @module server/express/express-identity
 * Who an Express request's caller is: the agent's `UserBuilder`, an `identify` function, or the
 * client address.
 */

import type { User } from '@a2a-js/sdk/server';
import { UserBuilder } from '@a2a-js/sdk/server/express';
import type { Request } from 'express';
import {
  type AddressKeyOptions,
  anonymousKeyOf,
  authenticatedCallerKey,
  createAddressKey,
} from '../caller-key.js';
import type { ExpressAdmissionOptions } from './express-options.js';

function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/**
 * The default unauthenticated key (caller-key.ts): the client address, IPv6 by prefix. Without an
 * `X-Forwarded-For` header, Express's `req.ip` is the socket's address whatever `trust proxy`
 * says, so the socket is read directly (`req.ip` parses the header and runs the trust function; on
 * Express's request objects every property read is slow, and this runs on every request).
 */
function addressKeyOf(options: AddressKeyOptions): (req: Request) => string {
  const keyOf = createAddressKey(options);
  return (req) =>
    keyOf(
      (req.headers['x-forwarded-for'] === undefined ? undefined : req.ip) ??
        req.socket.remoteAddress,
    );
}

/**
 * The caller key of a request, from the options: `identify` when given; else `User.userName` of a
 * user the `userBuilder` authenticated; else the unauthenticated key. A string when nothing on the
 * way is asynchronous. Throws (or rejects) with what the identity functions throw.
 */
export function expressCallerKey(
  options: ExpressAdmissionOptions,
): (req: Request) => string | PromiseLike<string> {
  const unauthenticatedKey =
    options.unauthenticatedKey === undefined
      ? addressKeyOf(options)
      : anonymousKeyOf(options.unauthenticatedKey);
  const identify = options.identify;
  if (identify !== undefined) return identify;
  const builder = options.userBuilder;
  // The SDK's `noAuthentication` authenticates nobody: skip the call (and its promise).
  if (builder === undefined || builder === UserBuilder.noAuthentication) return unauthenticatedKey;
  const callerOf = (req: Request, user: User): string =>
    user.isAuthenticated && user.userName
      ? authenticatedCallerKey(user.userName)
      : unauthenticatedKey(req);
  return (req) => {
    const user = builder(req) as User | PromiseLike<User>;
    if (!isPromiseLike(user)) return callerOf(req, user);
    return user.then((resolved) => callerOf(req, resolved));
  };
}

/**
 * The agent's `UserBuilder`, run once per request for both the admission middleware and the SDK's
 * router: pass the result to both. (Given the same plain builder, each would run it: an
 * authenticator that checks a token would check it twice per request.) The SDK's
 * `noAuthentication` is returned as it is.
 *
 * @example
 * ```ts
 * const userBuilder = shareUserBuilder(async (req) => usersFromToken(req.headers.authorization));
 * app.use('/a2a/jsonrpc', jsonRpcAdmission(limiter, { userBuilder, requestHandler }), jsonRpcHandler({ requestHandler, userBuilder }));
 * ```
 */
export function shareUserBuilder(builder: UserBuilder): UserBuilder {
  if (builder === UserBuilder.noAuthentication) return builder;
  const users = new WeakMap<Request, Promise<User>>();
  return (req) => {
    let user = users.get(req);
    if (user === undefined) {
      try {
        user = Promise.resolve(builder(req));
      } catch (error) {
        user = Promise.reject(error);
      }
      users.set(req, user);
    }
    return user;
  };
}
