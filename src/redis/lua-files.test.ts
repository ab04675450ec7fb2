import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DECISION_SCRIPT_BODY } from './decision-script.js';
import { LUA_DECISION, LUA_LEASES_AND_RECORDS, LUA_POLICY_SET } from './lua-files.js';

const sha1 = (text: string): string => createHash('sha1').update(text).digest('hex');

// The SHA-1s of the scripts as they were while they lived in template strings (computed from those
// strings before the move to .lua files): the move changed no byte, so Redis runs the same script.
// Changed since on purpose only: the cross-slot undo code carries the timestamp before the charge
// (decision.lua, mode t) and the undo puts a past one back (leases-and-records.lua, mode u); a
// lease key's hold-time estimate is kept until a released lease's expiry ('~h'), forgotten by the
// next admission past it (its undo code puts it back), and fed by no lease that already expired;
// a claimed hold's undo code carries the key's timestamp and no-show decay time before the claim;
// a charge's undo code says whether the key was read dirty ('C': written back as a rejection would).
describe('the Lua files hold the scripts byte for byte', () => {
  it('decision.lua', () => {
    expect(sha1(LUA_DECISION)).toBe('857aa2f238859aee19aebb2e95dbe39f03287137');
  });
  it('leases-and-records.lua', () => {
    expect(sha1(LUA_LEASES_AND_RECORDS)).toBe('d421c717f11d5bf9a1fda68fa8f756bcc0b87e81');
  });
  it('policy-set.lua', () => {
    expect(sha1(LUA_POLICY_SET)).toBe('45c4e909b2915f972c6245a681522bb553e0f2b9');
  });
  it('the decision script body they join into', () => {
    expect(sha1(DECISION_SCRIPT_BODY)).toBe('9fbf0ded970b8c6142bf6a996a9a21f229d40c29');
  });
});
