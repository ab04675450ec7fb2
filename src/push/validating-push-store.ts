/**
 * @module validating-push-store
 * `validatingPushNotificationStore`: refusing a forbidden webhook when it is registered.
 */

import { RequestMalformedError } from '@a2a-js/sdk/errors';
import type { PushNotificationStore, ServerCallContext } from '@a2a-js/sdk/server';
import type { WebhookPolicy, WebhookPolicyOptions, WebhookRefusal } from './webhook-policy.js';
import { noAddressRefusal } from './webhook-policy.js';
import {
  systemWebhookResolver,
  toWebhookPolicy,
  type WebhookResolver,
} from './webhook-transport.js';

type PushConfig = Parameters<PushNotificationStore['save']>[2];

/**
 * Options of {@link validatingPushNotificationStore}.
 */
export interface ValidatingPushStoreOptions {
  /** The webhook policy (the sender's). @defaultValue only public addresses */
  readonly policy?: WebhookPolicy | WebhookPolicyOptions;
  /**
   * Resolves host names at registration so that a name pointing at a refused address is refused
   * now; `false` checks the URL only. A name that fails to resolve is accepted (delivery
   * decides). @defaultValue `dns.lookup`, all addresses
   */
  readonly resolve?: WebhookResolver | false;
  /** Called with each refusal (log it: it may be a probe of your network). */
  readonly onRefused?: (refusal: WebhookRefusal, url: string, context: ServerCallContext) => void;
}

/**
 * Wraps `store` so that `save` refuses a webhook the policy refuses, with the SDK's
 * `RequestMalformedError` (its `metadata`: `webhookRefusal` = the reason). Everything else is the
 * inner store's (`loadWithMetadata` only when it has one). Every way the SDK registers a webhook
 * (`CreateTaskPushNotificationConfig`, the `taskPushNotificationConfig` of `SendMessage` /
 * `SendStreamingMessage`) ends in `save`, so the caller gets the SDK's answer to any invalid
 * parameter on every binding: JSON-RPC -32602, HTTP 400 / gRPC `INVALID_ARGUMENT`. Delivery checks
 * again (DNS may change); this is the early, explicit answer.
 *
 * @example
 * ```ts
 * const policy = createWebhookPolicy();
 * const pushStore = validatingPushNotificationStore(new InMemoryPushNotificationStore(), { policy });
 * const sender = new RateLimitedPushSender(pushStore, { policy });
 * new DefaultRequestHandler(card, taskStore, executor, undefined, pushStore, sender);
 * ```
 */
export function validatingPushNotificationStore(
  store: PushNotificationStore,
  options: ValidatingPushStoreOptions = {},
): PushNotificationStore {
  const policy = toWebhookPolicy(options.policy);
  const resolve =
    options.resolve === false ? undefined : (options.resolve ?? systemWebhookResolver);

  const check = async (url: string): Promise<WebhookRefusal | undefined> => {
    const verdict = policy.checkUrl(url);
    if (!verdict.allowed) return verdict;
    if (verdict.literal !== undefined || verdict.hostAllowed || resolve === undefined)
      return undefined;
    let addresses: readonly { address: string }[];
    try {
      addresses = await resolve(verdict.hostname);
    } catch {
      return undefined; // not resolvable now: delivery decides
    }
    if (addresses.length === 0) return noAddressRefusal(verdict.hostname);
    for (const { address } of addresses) {
      const result = policy.checkAddress(verdict.hostname, address);
      if (!result.allowed) return result;
    }
    return undefined;
  };

  const validating: PushNotificationStore = {
    async save(taskId: string, context: ServerCallContext, config: PushConfig): Promise<void> {
      const url = typeof config?.url === 'string' ? config.url : '';
      const refusal = await check(url);
      if (refusal !== undefined) {
        try {
          options.onRefused?.(refusal, url, context);
        } catch {
          // A logging hook must not change the answer.
        }
        throw new RequestMalformedError({
          message: `push notification URL refused: ${refusal.message}`,
          metadata: { webhookRefusal: refusal.reason },
        });
      }
      await store.save(taskId, context, config);
    },
    load: (taskId, context) => store.load(taskId, context),
    delete: (taskId, context, configId) => store.delete(taskId, context, configId),
  };
  const withMetadata = store.loadWithMetadata;
  if (withMetadata !== undefined) {
    validating.loadWithMetadata = (taskId, context) => withMetadata.call(store, taskId, context);
  }
  return validating;
}
