import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DECISION_SCRIPT_BODY } from './decision-script.js';
import { LUA_DECISION, LUA_LEASES_AND_RECORDS, LUA_POLICY_SET } from './lua-files.js';

const sha1 = (text: string): string => createHash('sha1').update(text).digest('hex');

// The SHA-1s of the scripts as they were while they lived in template strings (computed from those
// strings before the move to .lua files): the move changed no byte, so Redis runs the same script.
describe('the Lua files hold the scripts byte for byte', () => {
  it('decision.lua', () => {
    expect(sha1(LUA_DECISION)).toBe('6e66880d9f300bf862acf2863af0687448ae128d');
  });
  it('leases-and-records.lua', () => {
    expect(sha1(LUA_LEASES_AND_RECORDS)).toBe('83cea91b6f0e0b4e3cce1e1557b5416fd7ac7840');
  });
  it('policy-set.lua', () => {
    expect(sha1(LUA_POLICY_SET)).toBe('45c4e909b2915f972c6245a681522bb553e0f2b9');
  });
  it('the decision script body they join into', () => {
    expect(sha1(DECISION_SCRIPT_BODY)).toBe('09c2394b4739336466d557ad44339c7c91914809');
  });
});
