/**
 * @module server/grpc/grpc-method
 * Which A2A operation a gRPC method path names (1.0 and v0.3 services).
 */

import { type A2AMethod, isA2AMethod } from '../../core/a2a-methods.js';

const SERVICES: ReadonlySet<string> = new Set(['lf.a2a.v1.A2AService', 'a2a.v1.A2AService']);
const LEGACY_RPC: Readonly<Record<string, A2AMethod>> = {
  TaskSubscription: 'SubscribeToTask',
  ListTaskPushNotificationConfig: 'ListTaskPushNotificationConfigs',
  GetAgentCard: 'GetExtendedAgentCard',
};

/**
 * The A2A method of a gRPC method path, or undefined for other services.
 *
 * @example
 * ```ts
 * grpcMethodOf('/lf.a2a.v1.A2AService/SendMessage'); // 'SendMessage'
 * grpcMethodOf('/a2a.v1.A2AService/TaskSubscription'); // 'SubscribeToTask'
 * ```
 */
export function grpcMethodOf(path: string): A2AMethod | undefined {
  const match = /^\/([^/]+)\/([^/]+)$/.exec(path);
  if (match === null || !SERVICES.has(match[1] as string)) return undefined;
  const name = match[2] as string;
  return isA2AMethod(name) ? name : LEGACY_RPC[name];
}
