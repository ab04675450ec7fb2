import { describe, expect, it } from 'vitest';
import { joinNegativeValues } from './cli-app.js';

describe('negative numbers are values', () => {
  it('joins a negative number to the long flag before it, and only there', () => {
    expect(joinNegativeValues(['simulate', '--callers', '-5'])).toEqual([
      'simulate',
      '--callers=-5',
    ]);
    expect(joinNegativeValues(['demo', '--time-scale', '-0.5', '--binding', 'rest'])).toEqual([
      'demo',
      '--time-scale=-0.5',
      '--binding',
      'rest',
    ]);
    expect(joinNegativeValues(['simulate', '-5'])).toEqual(['simulate', '-5']);
    expect(joinNegativeValues(['simulate', '--callers=3', '-5'])).toEqual([
      'simulate',
      '--callers=3',
      '-5',
    ]);
  });
});
