import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DECISION_SCRIPT_BODY } from './decision-script.js';
import { LUA_DECISION, LUA_LEASES_AND_RECORDS, LUA_POLICY_SET } from './lua-files.js';

const sha1 = (text: string): string => createHash('sha1').update(text).digest('hex');

// The SHA-1s of the scripts as they were while they lived in template strings (computed from those
// strings before the move to .lua files): the move changed no byte, so Redis runs the same script.
// Changed since on purpose only: the cross-slot undo code carries the timestamp before the charge
// (decision.lua, mode t) and the undo puts a past one back (leases-and-records.lua, mode u).
describe('the Lua files hold the scripts byte for byte', () => {
  it('decision.lua', () => {
    expect(sha1(LUA_DECISION)).toBe('8826883c343a8ead49314147d51d43fdf216d2fe');
  });
  it('leases-and-records.lua', () => {
    expect(sha1(LUA_LEASES_AND_RECORDS)).toBe('f14f4bfd2b276920ed52bd7b52646a9ab077ea28');
  });
  it('policy-set.lua', () => {
    expect(sha1(LUA_POLICY_SET)).toBe('45c4e909b2915f972c6245a681522bb553e0f2b9');
  });
  it('the decision script body they join into', () => {
    expect(sha1(DECISION_SCRIPT_BODY)).toBe('787b9809ae310640dc4616e72d2f60797d4d6c93');
  });
});
