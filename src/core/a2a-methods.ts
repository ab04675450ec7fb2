/**
 * @module a2a-methods
 * A2A 1.0 operation names (JSON-RPC methods, gRPC rpcs), the v0.3 aliases the SDK still serves,
 * and which operations carry a `messageId`.
 */

/**
 * Every A2A 1.0 operation, by its JSON-RPC method / gRPC rpc name.
 *
 * @example
 * ```ts
 * const policy = { methods: [A2A_METHODS.SendMessage, A2A_METHODS.SendStreamingMessage] };
 * ```
 */
export const A2A_METHODS = {
  SendMessage: 'SendMessage',
  SendStreamingMessage: 'SendStreamingMessage',
  GetTask: 'GetTask',
  ListTasks: 'ListTasks',
  CancelTask: 'CancelTask',
  SubscribeToTask: 'SubscribeToTask',
  CreateTaskPushNotificationConfig: 'CreateTaskPushNotificationConfig',
  GetTaskPushNotificationConfig: 'GetTaskPushNotificationConfig',
  ListTaskPushNotificationConfigs: 'ListTaskPushNotificationConfigs',
  DeleteTaskPushNotificationConfig: 'DeleteTaskPushNotificationConfig',
  GetExtendedAgentCard: 'GetExtendedAgentCard',
} as const;

/**
 * One A2A 1.0 operation name.
 */
export type A2AMethod = (typeof A2A_METHODS)[keyof typeof A2A_METHODS];

/**
 * All operation names in declaration order.
 *
 * @example
 * ```ts
 * ALL_A2A_METHODS.length; // 11
 * ```
 */
export const ALL_A2A_METHODS: readonly A2AMethod[] = Object.values(A2A_METHODS);

/**
 * The v0.3 method names served by the SDK's legacy mode, mapped to their 1.0 names.
 *
 * @example
 * ```ts
 * LEGACY_A2A_METHODS['message/send']; // 'SendMessage'
 * ```
 */
export const LEGACY_A2A_METHODS: Readonly<Record<string, A2AMethod>> = {
  'message/send': 'SendMessage',
  'message/stream': 'SendStreamingMessage',
  'tasks/get': 'GetTask',
  'tasks/list': 'ListTasks',
  'tasks/cancel': 'CancelTask',
  'tasks/resubscribe': 'SubscribeToTask',
  'tasks/pushNotificationConfig/set': 'CreateTaskPushNotificationConfig',
  'tasks/pushNotificationConfig/get': 'GetTaskPushNotificationConfig',
  'tasks/pushNotificationConfig/list': 'ListTaskPushNotificationConfigs',
  'tasks/pushNotificationConfig/delete': 'DeleteTaskPushNotificationConfig',
  'agent/getAuthenticatedExtendedCard': 'GetExtendedAgentCard',
};

const METHOD_SET: ReadonlySet<string> = new Set(ALL_A2A_METHODS);

/**
 * Whether `name` is an A2A 1.0 operation name.
 *
 * @example
 * ```ts
 * isA2AMethod('SendMessage'); // true
 * isA2AMethod('message/send'); // false (a legacy name; see {@link toA2AMethod})
 * ```
 */
export function isA2AMethod(name: unknown): name is A2AMethod {
  return typeof name === 'string' && METHOD_SET.has(name);
}

/**
 * The 1.0 operation for a 1.0 or legacy v0.3 method name, or `undefined` for anything else.
 *
 * @example
 * ```ts
 * toA2AMethod('tasks/get'); // 'GetTask'
 * ```
 */
export function toA2AMethod(name: unknown): A2AMethod | undefined {
  if (typeof name !== 'string') return undefined;
  if (METHOD_SET.has(name)) return name as A2AMethod;
  return Object.hasOwn(LEGACY_A2A_METHODS, name) ? LEGACY_A2A_METHODS[name] : undefined;
}

/**
 * Operations that carry a client-chosen `messageId`: only these can hold a reserved slot, and a
 * transient failure of these is retried only when the agent deduplicates by messageId.
 *
 * @example
 * ```ts
 * MESSAGE_METHODS.has('SendMessage'); // true
 * ```
 */
export const MESSAGE_METHODS: ReadonlySet<A2AMethod> = new Set<A2AMethod>([
  'SendMessage',
  'SendStreamingMessage',
]);
