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
// next admission past it (its undo code puts it back), and fed by no lease that already expired.
describe('the Lua files hold the scripts byte for byte', () => {
  it('decision.lua', () => {
    expect(sha1(LUA_DECISION)).toBe('de26db4849d9919047ce9b64453179fc88fbd09f');
  });
  it('leases-and-records.lua', () => {
    expect(sha1(LUA_LEASES_AND_RECORDS)).toBe('0019f6706aa741c93df9d0a7974bb626ed2f6c28');
  });
  it('policy-set.lua', () => {
    expect(sha1(LUA_POLICY_SET)).toBe('45c4e909b2915f972c6245a681522bb553e0f2b9');
  });
  it('the decision script body they join into', () => {
    expect(sha1(DECISION_SCRIPT_BODY)).toBe('02fcd450def759c631311d330ab74659381890a8');
  });
});
