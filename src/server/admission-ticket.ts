/**
 * @module admission-ticket
 * The ticket of an admitted request: its `RateLimit` headers, its leases (ending with the response
 * or with the task) and its dedup outcome to record.
 */

import type { Admission, LeaseRef, LimitState } from '../core/rejection.js';
import { rateLimitHeaders } from '../wire/index.js';
import type { AdmissionTicket } from './limiter-api.js';
import type { AdmissionRequest, LeaseHoldUntil } from './limiter-options.js';
import type { MessageAnswer } from './message-answer.js';
import type { MessageDedup } from './message-dedup.js';

/** The lease list of a ticket that has none (shared; frozen, so never pushed to by mistake). */
const NO_LEASES = Object.freeze([]) as unknown as LeaseRef[];

/** This process in ticket ids (tickets are process-local). */
const PID36 = process.pid.toString(36);
let ticketCounter = 0;

/** What a ticket needs from its limiter. */
export interface TicketHost {
  /** How long `lease` (taken for `request`) is held, under the policies in force. */
  holdUntilOf(lease: LeaseRef, request: AdmissionRequest): LeaseHoldUntil;
  /** Counts leases taken. */
  taken(leases: readonly LeaseRef[]): void;
  /** Frees leases (in the store, and in the counts). */
  release(leases: readonly LeaseRef[]): void;
  /** Forgets an open ticket (it ended). */
  forget(id: string): void;
  /** Whether `trackTasks` wrapped the SDK's event-bus manager. */
  tracking(): boolean;
}

/** A deduplicated message's record still to write: the limiter's deduplication and the key. */
export interface TicketDedup {
  readonly dedup: MessageDedup;
  /** `messageRecordKey` of the message. */
  readonly key: string;
}

/**
 * An admitted request's ticket (see {@link AdmissionTicket}).
 *
 * @example
 * ```ts
 * const ticket = new Ticket(host, request, admission, { dedup, key });
 * res.on('close', () => ticket.end());
 * ```
 */
export class Ticket implements AdmissionTicket {
  /** Set when the ticket needs ending (it is then looked up by id); see {@link Ticket.id}. */
  private ticketId: string | undefined;
  readonly limits: readonly LimitState[];
  readonly headers: Readonly<Record<string, string>>;
  readonly claimedHold: boolean;
  readonly needsEnd: boolean;
  /** Leases held until the response ends. */
  responseLeases: LeaseRef[] = NO_LEASES;
  /** Leases held until the task ends (moved to the tracker when bound). */
  taskLeases: LeaseRef[] = NO_LEASES;
  /** Bound to a task (or a message reply) by the event-bus wrapper. */
  bound = false;
  ended = false;
  /** Dedup entry still to be written when the outcome is known. */
  dedupPending: boolean;

  /** @param record a deduplicated message's record, else undefined. */
  constructor(
    private readonly host: TicketHost,
    readonly request: AdmissionRequest,
    admission: Admission,
    private readonly record: TicketDedup | undefined,
  ) {
    this.limits = admission.limits;
    this.headers = admission.limits.length > 0 ? rateLimitHeaders(admission.limits) : {};
    this.claimedHold = admission.claimedHold;
    this.dedupPending = record !== undefined;
    record?.dedup.admitted(record.key);
    const leases = admission.leases;
    if (leases.length > 0) {
      this.responseLeases = [];
      this.taskLeases = [];
      for (const lease of leases) {
        const until = host.holdUntilOf(lease, request);
        (until === 'task' ? this.taskLeases : this.responseLeases).push(lease);
      }
      host.taken(leases);
    }
    // A usage policy's ticket is looked up by task (`limiter.usageOf`) even when it holds nothing.
    this.needsEnd = this.dedupPending || leases.length > 0 || this.limits.some((l) => l.unit);
  }

  /** Unique id (made on first use: a ticket that holds nothing is never looked up). */
  get id(): string {
    if (this.ticketId === undefined) {
      ticketCounter += 1;
      this.ticketId = `t${ticketCounter.toString(36)}.${PID36}`;
    }
    return this.ticketId;
  }

  /** Whether the SDK may start the executor (see `MessageDedup.mayStart`). */
  mayStart(): boolean {
    return this.record === undefined || this.record.dedup.mayStart(this.record.key);
  }

  /** Called by the tracker when the SDK created the task's event bus. */
  takeTaskLeases(): LeaseRef[] {
    this.bound = true;
    const leases = this.taskLeases;
    this.taskLeases = NO_LEASES;
    return leases;
  }

  /** Called by the tracker once the first event shows whether a task exists (or a Message answer). */
  settleDedup(taskId: string | undefined, answer?: MessageAnswer): void {
    if (!this.dedupPending || this.record === undefined) return;
    this.dedupPending = false;
    this.record.dedup.settled(this.request, this.record.key, taskId, answer);
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.ticketId !== undefined) this.host.forget(this.ticketId);
    this.host.release(this.responseLeases);
    this.responseLeases = NO_LEASES;
    if (!this.bound) {
      this.host.release(this.taskLeases);
      this.taskLeases = NO_LEASES;
      if (this.dedupPending && this.record !== undefined) {
        this.dedupPending = false;
        this.record.dedup.endedUnbound(this.request, this.record.key, {
          tracking: this.host.tracking(),
        });
      }
    }
  }

  /** Leases to renew: the response's, and the task's until the tracker holds them. */
  liveLeases(): LeaseRef[] {
    return this.bound ? this.responseLeases : [...this.responseLeases, ...this.taskLeases];
  }

  /** After a policy-set change: the held leases mapped onto the new set (see `leaseMapping`). */
  mapLeases(map: (leases: readonly LeaseRef[]) => LeaseRef[]): void {
    if (this.responseLeases.length > 0) this.responseLeases = map(this.responseLeases);
    if (this.taskLeases.length > 0) this.taskLeases = map(this.taskLeases);
  }
}
