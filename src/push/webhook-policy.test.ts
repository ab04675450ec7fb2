import { describe, expect, it } from 'vitest';
import { createWebhookPolicy, type WebhookRefusal } from './webhook-policy.js';

const deny = createWebhookPolicy();

function refusalOf(result: { allowed: boolean }): WebhookRefusal {
  expect(result.allowed).toBe(false);
  return result as WebhookRefusal;
}

describe('createWebhookPolicy: the default denies every non-public destination', () => {
  it.each([
    ['http://127.0.0.1:8080/hook', 'loopback'],
    ['http://127.8.9.10/', 'loopback'],
    ['http://2130706433/', 'loopback'],
    ['http://0x7f000001/', 'loopback'],
    ['http://0177.0.0.01/', 'loopback'],
    ['http://127.1/', 'loopback'],
    ['http://[::1]:9000/', 'loopback'],
    ['http://[::ffff:127.0.0.1]/', 'loopback'],
    ['http://[0:0:0:0:0:ffff:7f00:1]/', 'loopback'],
    ['http://[64:ff9b::7f00:1]/', 'loopback'],
    ['http://[2002:7f00:1::1]/', 'loopback'],
    ['http://10.0.0.5/', 'private'],
    ['http://172.20.1.1/', 'private'],
    ['http://192.168.0.10/', 'private'],
    ['http://[::ffff:192.168.0.10]/', 'private'],
    ['http://100.64.1.1/', 'carrier-grade-nat'],
    ['http://169.254.169.254/latest/meta-data/', 'link-local'],
    ['http://0xa9fea9fe/', 'link-local'],
    ['http://[::ffff:169.254.169.254]/', 'link-local'],
    ['http://[fe80::1]/', 'link-local'],
    ['http://[fd00:ec2::254]/', 'unique-local'],
    ['http://[fc00::1]/', 'unique-local'],
    ['http://[ff02::1]/', 'multicast'],
    ['http://224.0.0.251/', 'multicast'],
    ['http://0.0.0.0/', 'unspecified'],
    ['http://0/', 'unspecified'],
    ['http://[::]/', 'unspecified'],
    ['http://255.255.255.255/', 'broadcast'],
  ])('%s → refused (%s)', (url, range) => {
    const refusal = refusalOf(deny.checkUrl(url));
    expect(refusal).toMatchObject({ reason: 'address', range });
    expect(refusal.message).toContain(range);
  });

  it.each([
    ['http://localhost:3000/hook', 'local-name'],
    ['http://LOCALHOST./hook', 'local-name'],
    ['http://hooks.localhost/', 'local-name'],
    ['file:///etc/passwd', 'scheme'],
    ['gopher://example.com/', 'scheme'],
    ['ftp://example.com/', 'scheme'],
    ['ws://example.com/', 'scheme'],
    ['http://user:secret@example.com/', 'credentials'],
    ['not a url', 'invalid-url'],
    ['/relative/hook', 'invalid-url'],
    ['http://1.2.3.4.5/', 'invalid-url'],
  ])('%s → refused (%s)', (url, reason) => {
    expect(refusalOf(deny.checkUrl(url)).reason).toBe(reason);
  });

  it('accepts public addresses and host names (names are checked again once resolved)', () => {
    expect(deny.checkUrl('https://93.184.215.14/hook')).toMatchObject({
      allowed: true,
      literal: { allowed: true, by: 'public', address: '93.184.215.14', family: 4 },
    });
    expect(deny.checkUrl('https://[2606:4700::1111]:8443/x')).toMatchObject({
      allowed: true,
      hostname: '2606:4700::1111',
      literal: { family: 6 },
    });
    const named = deny.checkUrl('https://Hooks.Example.COM/a2a');
    expect(named).toMatchObject({
      allowed: true,
      hostname: 'hooks.example.com',
      hostAllowed: false,
    });
    expect(named.allowed && named.literal).toBeUndefined();
  });

  it('checks each resolved address; the message shown to the caller never names it', () => {
    const refusal = refusalOf(deny.checkAddress('rebind.example.com', '169.254.169.254'));
    expect(refusal).toMatchObject({
      reason: 'address',
      range: 'link-local',
      address: '169.254.169.254',
    });
    expect(refusal.message).toBe('rebind.example.com resolves to an address that is not public');
    expect(refusalOf(deny.checkAddress('x.example', '::ffff:10.1.1.1')).range).toBe('private');
    expect(refusalOf(deny.checkAddress('x.example', 'not-an-ip')).reason).toBe('address');
    expect(deny.checkAddress('x.example', '8.8.4.4')).toMatchObject({
      allowed: true,
      by: 'public',
    });
    expect(deny.checkAddress('x.example', '2001:4860:4860::8888')).toMatchObject({
      allowed: true,
      family: 6,
      address: '2001:4860:4860::8888',
    });
  });
});

describe('allowPrivateNetworks', () => {
  const dev = createWebhookPolicy({ allowPrivateNetworks: true });

  it.each([
    'http://127.0.0.1:8080/hook',
    'http://localhost:3000/',
    'http://[::1]/',
    'http://10.0.0.5/',
    'http://100.64.0.1/',
    'http://169.254.169.254/',
    'http://[fd00::1]/',
  ])('opens %s', (url) => {
    expect(dev.checkUrl(url).allowed).toBe(true);
  });

  it.each([
    'http://0.0.0.0/',
    'http://[::]/',
    'http://224.0.0.1/',
    'http://[ff02::1]/',
    'http://255.255.255.255/',
    'http://240.0.0.1/',
    'file:///etc/passwd',
  ])('still refuses %s', (url) => {
    expect(dev.checkUrl(url).allowed).toBe(false);
  });

  it('says what opened an address', () => {
    expect(dev.checkAddress('localhost', '127.0.0.1')).toMatchObject({ by: 'private-networks' });
  });
});

describe('the allow list', () => {
  const policy = createWebhookPolicy({
    allow: ['hooks.internal.example', '*.corp.example', '10.20.0.0/16', 'fd00:1::/32', '127.0.0.1'],
  });

  it('an allowed host name may resolve anywhere', () => {
    expect(policy.checkUrl('http://hooks.internal.example/')).toMatchObject({ hostAllowed: true });
    expect(policy.checkAddress('hooks.internal.example', '10.9.9.9')).toMatchObject({
      allowed: true,
      by: 'allow-list',
    });
    expect(policy.checkAddress('hooks.internal.example.', '192.168.1.1').allowed).toBe(true);
    expect(policy.checkAddress('other.internal.example', '10.9.9.9').allowed).toBe(false);
  });

  it('a wildcard covers the names below it, not the name itself', () => {
    expect(policy.checkAddress('a.corp.example', '10.9.9.9').allowed).toBe(true);
    expect(policy.checkAddress('a.b.corp.example', '10.9.9.9').allowed).toBe(true);
    expect(policy.checkAddress('corp.example', '10.9.9.9').allowed).toBe(false);
    expect(policy.checkAddress('evilcorp.example', '10.9.9.9').allowed).toBe(false);
  });

  it('a CIDR covers any name resolving into it, literals in it and their IPv4-mapped forms', () => {
    expect(policy.checkAddress('any.example', '10.20.3.4')).toMatchObject({ by: 'allow-list' });
    expect(policy.checkAddress('any.example', '::ffff:10.20.3.4').allowed).toBe(true);
    expect(policy.checkAddress('any.example', '10.21.3.4').allowed).toBe(false);
    expect(policy.checkUrl('http://10.20.0.1:9000/').allowed).toBe(true);
    expect(policy.checkUrl('http://[fd00:1:2::3]/').allowed).toBe(true);
    expect(policy.checkUrl('http://[fd00:2::3]/').allowed).toBe(false);
    expect(policy.checkUrl('http://127.0.0.1:5000/').allowed).toBe(true);
    expect(policy.checkUrl('http://127.0.0.2:5000/').allowed).toBe(false);
    // Only the address, not every loopback name: localhost stays refused.
    expect(policy.checkUrl('http://localhost:5000/').allowed).toBe(false);
  });

  it('normalises its entries', () => {
    expect(
      createWebhookPolicy({
        allow: ['Hooks.Example.', ' 10.0.0.0/8 ', '[fd00::]/8', '*.A.example'],
      }).allow,
    ).toEqual(['hooks.example', '10.0.0.0/8', 'fd00::/8', '*.a.example']);
  });

  it.each([
    ['10.1.2.3/8', /host bits set/],
    ['10.0.0.0/40', /prefix length/],
    ['http://hooks.example/', /neither a host name/],
    ['hooks.example:8080', /neither a host name/],
    ['', /neither a host name/],
    ['a/b', /neither a host name/],
  ])('a bad entry (%s) throws a RangeError naming it', (entry, message) => {
    expect(() => createWebhookPolicy({ allow: [entry] })).toThrow(message);
    expect(() => createWebhookPolicy({ allow: [entry] })).toThrow(RangeError);
  });
});
