/**
 * @module probe-check
 * One named check of `probe` and its verdict: status, grade, and the pass / fail makers.
 */

/**
 * A check's verdict: `fail` when a required part is missing or wrong, `warn` when a recommended
 * one is (it does not fail the probe), `skip` when there was nothing to check it on.
 *
 * @example
 * ```ts
 * const status: CheckStatus = CHECK_STATUSES.fail;
 * ```
 */
export const CHECK_STATUSES = { pass: 'pass', fail: 'fail', warn: 'warn', skip: 'skip' } as const;

/**
 * One of {@link CHECK_STATUSES}.
 */
export type CheckStatus = (typeof CHECK_STATUSES)[keyof typeof CHECK_STATUSES];

/**
 * How the response format grades a check: `required` (the rejection is not usable without it) or
 * `recommended` (a hint: `RateLimit` headers, which the format calls a draft to treat as hints,
 * and gRPC's own retry metadata).
 *
 * @example
 * ```ts
 * const level: CheckLevel = CHECK_LEVELS.recommended;
 * ```
 */
export const CHECK_LEVELS = { required: 'required', recommended: 'recommended' } as const;

/**
 * One of {@link CHECK_LEVELS}.
 */
export type CheckLevel = (typeof CHECK_LEVELS)[keyof typeof CHECK_LEVELS];

/**
 * One named check and what it found.
 */
export interface ProbeCheck {
  readonly name: string;
  readonly status: CheckStatus;
  readonly detail: string;
  /** Absent on checks made before grading (then: required). */
  readonly level?: CheckLevel;
}

/** A passed check named `name`. */
export const pass = (name: string, detail: string): ProbeCheck => ({
  name,
  status: 'pass',
  detail,
});
/** A failed check named `name`. */
export const fail = (name: string, detail: string): ProbeCheck => ({
  name,
  status: 'fail',
  detail,
});
