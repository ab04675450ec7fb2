import { describe, expect, it } from 'vitest';
import { bearerUser, demoToken } from './demo-auth.js';

describe('demo authentication with tiers', () => {
  it('reads <caller>@<tier>; a plain token is the caller with no tier', () => {
    expect(demoToken('alice@pro')).toEqual({ caller: 'alice', tier: 'pro' });
    expect(demoToken('orchestrator-7')).toEqual({ caller: 'orchestrator-7' });
    expect(demoToken('a@b@free')).toEqual({ caller: 'a@b', tier: 'free' });
    expect(demoToken('@pro')).toEqual({ caller: '@pro' });
    expect(demoToken('alice@')).toEqual({ caller: 'alice@' });
    expect(bearerUser('Bearer alice@pro')).toEqual({ isAuthenticated: true, userName: 'alice' });
    expect(bearerUser('Bearer bob')).toEqual({ isAuthenticated: true, userName: 'bob' });
    expect(bearerUser(undefined)).toEqual({ isAuthenticated: false, userName: '' });
  });
});
