/**
 * @module limiter
 * `createLimiter`: turns an identified request into one admission decision and a rejection into its
 * wire form; owns the overload signal and live policy changes.
 */

import { compilePolicies } from '../core/compile-policies.js';
import type { CompiledPolicySet } from '../core/compiled-policy.js';
import type { DecisionInput } from '../core/decision-state.js';
import type { HoldOptions } from '../core/policy.js';
import type { Decision } from '../core/rejection.js';
import { taskTapOf } from '../core/task-tap.js';
import { systemClock } from '../platform/system-clock.js';
import { MemoryStore } from '../store/memory-store.js';
import type { Store } from '../store/store.js';
import { synchronousStore } from '../store/synchronous-store.js';
import { encodeGrpcRejection, encodeJsonRpcRejection, encodeRestRejection } from '../wire/index.js';
import { Ticket, type TicketHost } from './admission-ticket.js';
import { type EventLoopDelaySource, monitorEventLoop } from './event-loop-monitor.js';
import { HoldLedger } from './hold-ledger.js';
import { LeaseBook } from './lease-book.js';
import { type AdmissionOutcome, type Limiter, TICKET_HEADER } from './limiter-api.js';
import {
  type AdmissionRequest,
  DEFAULT_LIMITER_OPTIONS,
  type LimiterOptions,
  resolveLimiterOptions,
} from './limiter-options.js';
import {
  type LimiterPolicyView,
  leaseHoldUntil,
  leaseMapping,
  limiterPolicyView,
} from './limiter-policy-view.js';
import { MessageDedup } from './message-dedup.js';
import { resolveOperatorDomain } from './operator-domain.js';
import { ShadowDecisions } from './shadow-decisions.js';
import { TaskLeaseTracker } from './task-lease-tracker.js';
import { TaskUsageBook } from './task-usage.js';

/** The hold options a compiled set was made with (to compile a new set the same way). */
function holdOptionsOf(set: CompiledPolicySet): HoldOptions {
  const h = set.holds;
  return {
    maxNoShows: h.maxNoShows,
    maxHoldsPerKey: h.maxHoldsPerKey,
    minGraceMs: h.minGraceUs / 1000,
    graceFraction: h.graceFraction,
  };
}

/**
 * Creates the limiter shared by all adapters. Policies are validated here (a `PolicyError` names
 * the bad policy and field); the domain is resolved once (`domain`, else the host of the card's
 * first interface URL; never `a2a-protocol.org`). Give `policies` (an in-process `MemoryStore` is
 * made for them) or a `store` that has its own — not both: that throws a `TypeError`.
 *
 * @example
 * ```ts
 * import { createLimiter } from 'a2a-ratelimit/server';
 * const limiter = createLimiter({
 *   card,
 *   policies: [
 *     { name: 'per-caller', kind: 'rate', scope: 'caller', methods: ['SendMessage', 'SendStreamingMessage'], limit: 60, windowSeconds: 60, burst: 10 },
 *     { name: 'tasks-per-caller', kind: 'concurrency', scope: 'caller', methods: ['SendMessage', 'SendStreamingMessage'], max: 5 },
 *     { name: 'agent-overload', kind: 'overload', maxInFlight: 500, maxEventLoopDelayMs: 250 },
 *   ],
 * });
 * const requestHandler = new DefaultRequestHandler(card, taskStore, executor, limiter.trackTasks(new DefaultExecutionEventBusManager()));
 * ```
 */
export function createLimiter(options: LimiterOptions): Limiter {
  const dedupOptions = resolveLimiterOptions(options);
  const clock = options.clock ?? systemClock;
  const store: Store =
    options.store ??
    new MemoryStore({
      policies: options.policies ?? [],
      clock,
      ...(options.holds === undefined ? {} : { holds: options.holds }),
    });
  /** The in-process path, for any store that has the capability (no class check). */
  const local = synchronousStore(store);
  const domain = resolveOperatorDomain({ domain: options.domain, card: options.card });
  const observer = options.observer;

  // What the limiter derives from the policy set; replaced as a whole on a live change.
  const holdUntilOption = options.leases?.holdUntil ?? {};
  for (const name of Object.keys(holdUntilOption)) {
    if (!store.policySet.policies.some((p) => p.name === name)) {
      throw new RangeError(`createLimiter: leases.holdUntil names unknown policy "${name}"`);
    }
  }
  const viewOf = (set: CompiledPolicySet): LimiterPolicyView =>
    limiterPolicyView(set, {
      holdUntil: holdUntilOption,
      renewEveryMs: options.leases?.renewEveryMs,
    });
  let view = viewOf(store.policySet);

  // Event-loop delay: only while an overload policy asks for it.
  let lagSource: EventLoopDelaySource | undefined;
  let lag: (() => number) | undefined;
  const wireLag = (): void => {
    if (!view.wantsEventLoopDelay || options.eventLoopDelay === false) {
      lagSource?.close();
      lagSource = undefined;
      lag = undefined;
    } else if (typeof options.eventLoopDelay === 'function') {
      lag = options.eventLoopDelay;
    } else if (lagSource === undefined) {
      const source = monitorEventLoop(options.eventLoopDelay ?? {});
      lagSource = source;
      lag = () => source.delayMs();
    }
  };
  wireLag();

  const leases = new LeaseBook(store, local, observer, () => view.set);
  /** Whether `trackTasks` wrapped the SDK's event-bus manager (task-level leases and dedup). */
  let tracking = false;
  /** Open tickets by id (until their response ends). */
  const tickets = new Map<string, Ticket>();
  const tracker = new TaskLeaseTracker(
    {
      releaseOnInterrupted:
        options.leases?.releaseOnInterrupted ?? DEFAULT_LIMITER_OPTIONS.leases.releaseOnInterrupted,
      release: (l) => leases.release(l),
      ticketOf: (id) => tickets.get(id),
      nowMs: () => clock.nowMs(),
    },
    TICKET_HEADER,
  );
  // Usage a task reports is charged to whoever's admission started it (`limiter.usageOf`).
  const usage = new TaskUsageBook({
    ticketHeader: TICKET_HEADER,
    admittedBy: (id) => tickets.get(id)?.request,
    charge: (request, units, options) => limiter.reportUsage(request, units, options),
    nowMs: () => clock.nowMs(),
  });

  // Hold bookkeeping exists only for the metrics that count holds made / claimed / expired.
  const holdLedger =
    observer?.holds === undefined
      ? undefined
      : new HoldLedger(observer, (delayMs) => {
          const h = view.set.holds;
          return Math.max(h.minGraceUs / 1000, delayMs * h.graceFraction);
        });
  const holdSweep =
    holdLedger === undefined
      ? undefined
      : setInterval(
          () => holdLedger.sweep(clock.nowMs()),
          DEFAULT_LIMITER_OPTIONS.holdSweepEveryMs,
        );
  holdSweep?.unref();

  // Renewal of live leases (open responses and tracked tasks), restarted when its period changes.
  const renewLive = (): void => {
    tracker.sweepInterrupted(clock.nowMs(), view.maxLeaseTtlMs);
    const live = tracker.liveLeases();
    for (const t of tickets.values()) live.push(...t.liveLeases());
    leases.renew(live);
  };
  let renewEveryMs = view.renewEveryMs;
  let renewTimer = setInterval(renewLive, renewEveryMs);
  renewTimer.unref();

  const shadow = new ShadowDecisions(observer, clock, options.shadowLog);

  const host: TicketHost = {
    holdUntilOf: (lease, request) => leaseHoldUntil(view, lease, request.method),
    taken: (l) => leases.taken(l),
    release: (l) => leases.release(l),
    forget: (id) => tickets.delete(id),
    tracking: () => tracking,
  };

  /**
   * `dedupKey`: `messageRecordKey` of a deduplicated message, else undefined. `set`: the policy
   * set the decision was made under (its leases are mapped onto the view's set when they differ).
   */
  const finish = (
    request: AdmissionRequest,
    made: Decision,
    dedupKey: string | undefined,
    set: CompiledPolicySet,
  ): AdmissionOutcome => {
    let decision = made;
    if (decision.admitted) {
      if (set !== view.set && decision.leases.length > 0) {
        const map = leaseMapping(set, view.set);
        if (map !== undefined) decision = { ...decision, leases: map(decision.leases) };
      }
      holdLedger?.admitted(request, decision);
      observer?.admitted?.(request, decision);
      const record =
        dedupKey === undefined || dedup === undefined ? undefined : { dedup, key: dedupKey };
      const ticket = new Ticket(host, request, decision, record);
      if (ticket.needsEnd) tickets.set(ticket.id, ticket);
      return { status: 'admitted', ticket };
    }
    holdLedger?.rejected(request, decision.rejection, clock.nowMs());
    observer?.rejected?.(request, decision.rejection);
    if (dedupKey !== undefined) dedup?.rejected(request, dedupKey);
    return { status: 'rejected', rejection: decision.rejection, limits: decision.limits };
  };

  const inputOf = (request: AdmissionRequest): DecisionInput => {
    const delayMs = lag?.();
    return delayMs === undefined ? request : { ...request, eventLoopDelayMs: delayMs };
  };

  const decideNow = (
    request: AdmissionRequest,
    dedupKey: string | undefined,
  ): AdmissionOutcome | Promise<AdmissionOutcome> => {
    const input = inputOf(request);
    // The set the store decides with (ahead of the view while a change is being adopted).
    const set = store.policySet;
    if (local !== undefined) {
      const decision = local.decideSync(input);
      const shadowInput = decision.admitted ? shadow.inputOf(input, set) : undefined;
      if (shadowInput === undefined) return finish(request, decision, dedupKey, set);
      return finish(
        request,
        shadow.merge(request, decision, local.decideSync(shadowInput)),
        dedupKey,
        set,
      );
    }
    return store.decide(input).then(
      (decision) => {
        const shadowInput = decision.admitted ? shadow.inputOf(input, set) : undefined;
        if (shadowInput === undefined) return finish(request, decision, dedupKey, set);
        return store.decide(shadowInput).then(
          (s) => finish(request, shadow.merge(request, decision, s), dedupKey, set),
          // A dry run never turns an admission into a failure.
          () => finish(request, decision, dedupKey, set),
        );
      },
      (error: unknown) => {
        // Nothing ran: the message's pending record must not outlive the failed decision.
        if (dedupKey !== undefined) dedup?.failed(request, dedupKey);
        throw error;
      },
    );
  };

  const dedup =
    dedupOptions === undefined
      ? undefined
      : new MessageDedup(store, local, dedupOptions, observer, decideNow, () => clock.nowMs());
  const dedupMethods = dedupOptions?.methods ?? new Set();

  const tierOf = options.tierOf;
  const withTier = <R extends AdmissionRequest>(request: R): R => {
    if (tierOf === undefined || request.tier !== undefined) return request;
    const tier = tierOf(request);
    return tier === undefined ? request : { ...request, tier };
  };

  const policyListeners = new Set<(set: CompiledPolicySet) => void>();
  /** Puts `set` in force here (the store already decides with it). */
  const adopt = (set: CompiledPolicySet): void => {
    if (set === view.set) return;
    const map = leaseMapping(view.set, set);
    if (map !== undefined) {
      // Before the new view is in force: dropped leases are counted by their old kinds.
      const counted = leases.counting(map);
      for (const t of tickets.values()) t.mapLeases(counted);
      tracker.mapLeases(counted);
    }
    view = viewOf(set);
    wireLag();
    if (view.renewEveryMs !== renewEveryMs) {
      renewEveryMs = view.renewEveryMs;
      clearInterval(renewTimer);
      renewTimer = setInterval(renewLive, renewEveryMs);
      renewTimer.unref();
    }
    for (const listener of policyListeners) {
      try {
        listener(set);
      } catch {
        // A listener's failure is its own: the set is in force either way.
      }
    }
  };
  const unsubscribe = store.onPoliciesChanged?.((set) => adopt(set));

  const limiter: Limiter = {
    get policySet() {
      return view.set;
    },
    get policySetVersion() {
      return view.version;
    },
    store,
    clock,
    domain,
    dedupMethods,
    async updatePolicies(next) {
      if (store.updatePolicies === undefined) {
        throw new TypeError('limiter.updatePolicies: this store cannot change its policies');
      }
      // Validates first (a PolicyError names the policy and field): nothing changes on a bad set.
      const set = compilePolicies(next, holdOptionsOf(view.set));
      const swapped = store.updatePolicies(set);
      // An in-process store swapped synchronously: put the set in force in the same step.
      if (local !== undefined && store.policySet === set) adopt(set);
      await swapped;
      adopt(set);
    },
    onPoliciesChanged(listener) {
      policyListeners.add(listener);
      return () => policyListeners.delete(listener);
    },
    tierOf: (request) => request.tier ?? tierOf?.(request),
    reportUsage(request, units, options) {
      if (!Number.isSafeInteger(units) || units < 0) {
        return Promise.reject(
          new RangeError(`reportUsage: units must be a whole number ≥ 0, got ${units}`),
        );
      }
      const settle = options?.settle === true;
      if ((units === 0 && !settle) || store.chargeUsage === undefined) return Promise.resolve();
      const tier = request.tier ?? tierOf?.(request);
      const charged = tier === undefined ? request : { ...request, tier };
      return store.chargeUsage(charged, units, { settle });
    },
    admit(raw) {
      const request = withTier(raw);
      if (dedup === undefined || !dedup.applies(request)) return decideNow(request, undefined);
      return dedup.admit(request as AdmissionRequest & { readonly messageId: string });
    },
    admitResubscription(request) {
      const resubscription: AdmissionRequest & Pick<DecisionInput, 'policyIndexes'> = {
        caller: request.caller,
        method: 'SubscribeToTask',
        binding: request.binding,
        tenant: request.tenant,
        skill: request.skill,
        tier: request.tier,
        policyIndexes: view.resubscriptionIndexes,
      };
      return decideNow(withTier(resubscription), undefined);
    },
    encodeRest: (rejection, limits) =>
      encodeRestRejection(rejection, limits === undefined ? { domain } : { domain, limits }),
    encodeJsonRpc: (rejection, id, limits, mirrorHttpStatus) =>
      encodeJsonRpcRejection(rejection, {
        domain,
        id,
        ...(limits === undefined ? {} : { limits }),
        ...(mirrorHttpStatus === undefined ? {} : { mirrorHttpStatus }),
      }),
    encodeGrpc: (rejection, limits) =>
      encodeGrpcRejection(rejection, limits === undefined ? { domain } : { domain, limits }),
    trackTasks: (inner) => {
      tracking = true;
      // One tap around the SDK's manager (joined, when `inner` is one already): the lease
      // tracker and the usage book subscribe to it.
      const tap = taskTapOf(inner);
      tap.subscribe(tracker);
      tap.subscribe(usage);
      return tap as unknown as typeof inner;
    },
    usageOf: (task) => usage.reporterOf(task),
    leasesHeld: () => leases.count(),
    tasksTracked: () => tracker.size(),
    async close() {
      clearInterval(renewTimer);
      clearInterval(holdSweep);
      lagSource?.close();
      unsubscribe?.();
      dedup?.close();
      await store.close();
    },
  };
  observer?.attached?.({
    requestsInFlight: () => leases.inFlight(),
    eventLoopDelayMs: () => lag?.(),
    store,
    policySet: () => view.set,
    policySetVersion: () => view.version,
  });
  return limiter;
}
