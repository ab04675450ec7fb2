/**
 * @module push-configs
 * `PushConfigReader`: the push configs the sender reads for a task, and the POST each makes.
 */

import {
  type PushNotificationSender,
  type PushNotificationSerializer,
  type PushNotificationStore,
  type ServerCallContext,
  type StoredPushNotificationConfig,
  V1PushNotificationSerializer,
} from '@a2a-js/sdk/server';

type StreamResponse = Parameters<PushNotificationSender['send']>[0];
type Task = NonNullable<Parameters<PushNotificationSender['send']>[2]>;

/** Wire version assumed for configs of a store without `loadWithMetadata` (as the SDK). */
const LEGACY_WIRE_VERSION = '0.3';

/**
 * Reads push configs and renders notifications for them: a task's configs with the wire version
 * each was registered over (as the SDK's own sender reads them), and the POST one event makes for
 * one config — the registered serializer's body and media type, and the SDK's authentication rule
 * (`authentication` → `Authorization`, else the legacy `token`).
 *
 * @example
 * ```ts
 * const reader = new PushConfigReader(store, { tokenHeaderName: 'X-A2A-Notification-Token' });
 * for (const { config, wireVersion } of await reader.load(taskId, context)) {
 *   const { headers, body } = reader.render(config, wireVersion, event, task);
 * }
 * ```
 */
export class PushConfigReader {
  private readonly serializers = new Map<string, PushNotificationSerializer>();
  private readonly fallback: PushNotificationSerializer;

  constructor(
    private readonly store: PushNotificationStore,
    private readonly options: {
      readonly tokenHeaderName: string;
      readonly serializers?: Readonly<Record<string, PushNotificationSerializer | undefined>>;
    },
  ) {
    const v1 = new V1PushNotificationSerializer();
    this.serializers.set('1.0', v1);
    for (const [version, serializer] of Object.entries(options.serializers ?? {})) {
      if (serializer !== undefined) this.serializers.set(version, serializer);
    }
    this.fallback = this.serializers.get('1.0') ?? v1;
  }

  /** The task's configs, each with the wire version it was registered over. */
  async load(taskId: string, context: ServerCallContext): Promise<StoredPushNotificationConfig[]> {
    if (this.store.loadWithMetadata) return await this.store.loadWithMetadata(taskId, context);
    const plain = await this.store.load(taskId, context);
    const wireVersion = context.requestedVersion || LEGACY_WIRE_VERSION;
    return plain.map((config) => ({ config, wireVersion }));
  }

  /** The headers and body of the POST `event` makes for `config`. Throws what the serializer throws. */
  render(
    config: StoredPushNotificationConfig['config'],
    wireVersion: string,
    event: StreamResponse,
    task: Task | undefined,
  ): { headers: Record<string, string>; body: string } {
    const serializer = this.serializers.get(wireVersion) ?? this.fallback;
    const { body, contentType } = serializer.serialize(event, task);
    return { headers: { 'Content-Type': contentType, ...this.authHeaders(config) }, body };
  }

  /** The SDK's rule: `authentication` → `Authorization`; else `token` → the legacy header. */
  private authHeaders(config: StoredPushNotificationConfig['config']): Record<string, string> {
    const auth = config.authentication;
    if (auth?.scheme && auth.credentials) {
      return { Authorization: `${auth.scheme} ${auth.credentials}` };
    }
    return config.token ? { [this.options.tokenHeaderName]: config.token } : {};
  }
}
