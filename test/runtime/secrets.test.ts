import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson, digestOf, maskEvent, maskSecrets } from '../../runtime/secrets.js';

describe('maskSecrets', () => {
  it.each([
    ['echo SECRET_TOKEN=abc123', 'echo SECRET_TOKEN=***'],
    ["curl -H 'Authorization: Bearer sk-abcdefghijklmnopqrstuv' http://x", "curl -H 'Authorization: Bearer ***' http://x"],
    ['OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx node run.js', 'OPENAI_API_KEY=*** node run.js'],
    ['{"command":"echo SECRET_TOKEN=abc123 && A_PASSWORD=\\"p w\\" x"}', '{"command":"echo SECRET_TOKEN=*** && A_PASSWORD=\\"***\\" x"}'],
    ['{"api_key": "xyz", "keyboard": "us", "apiKey":"q"}', '{"api_key": "***", "keyboard": "us", "apiKey":"***"}'],
    ['mysql --password hunter2 --user bob; PWD=/tmp ls; export GITHUB_TOKEN=$OTHER', 'mysql --password *** --user bob; PWD=/tmp ls; export GITHUB_TOKEN=$OTHER'],
    ['git clone https://bob:s3cret@example.com/r.git; echo ghp_abcdefghijklmnopqrstuvwxyz0123', 'git clone https://bob:***@example.com/r.git; echo ***'],
    ["TOKEN=\"a b c\" DB_PASS='x y' ls", "TOKEN=\"***\" DB_PASS='***' ls"],
    ['X-Api-Key: abc; token: def', 'X-Api-Key: ***; token: ***'],
    ['-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----', '-----BEGIN RSA PRIVATE KEY-----***-----END RSA PRIVATE KEY-----'],
  ])('%s', (text, masked) => {
    expect(maskSecrets(text)).toBe(masked);
  });

  it('leaves text without secrets as it is', () => {
    for (const t of ['ls -la /tmp', 'echo hello; sleep 1; echo done', 'cd $PWD && make key=', 'keyboard=us monkey=1', ''])
      expect(maskSecrets(t)).toBe(t);
  });

  it('is idempotent', () => {
    const once = maskSecrets('A_TOKEN=abc Authorization: Bearer sk-abcdefghijklmnopqrstuv');
    expect(maskSecrets(once)).toBe(once);
  });
});

describe('digests', () => {
  it('canonical JSON sorts keys at every level and drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, 'x'], c: null }, u: undefined })).toBe('{"a":{"c":null,"d":[1,"x"]},"b":1}');
  });

  it('argsDigest and paramsDigest are sha-256 of the canonical form of the real values', () => {
    const sha = (s: string) => createHash('sha256').update(s).digest('hex');
    const call = maskEvent('tool.call', { turnId: 't', callId: 'c', name: 'sh', arguments: '{ "command": "echo SECRET_TOKEN=abc123" }' });
    expect(call.arguments).toBe('{ "command": "echo SECRET_TOKEN=***" }');
    expect(call.argsDigest).toBe(sha('{"command":"echo SECRET_TOKEN=abc123"}'));
    const started = maskEvent('command.started', { turnId: 't', command: 'echo SECRET_TOKEN=abc123', cwd: '/w' });
    expect(started.command).toBe('echo SECRET_TOKEN=***');
    expect(started.argsDigest).toBe(sha('{"command":"echo SECRET_TOKEN=abc123","cwd":"/w"}'));
    const approval = maskEvent('approval.requested', { turnId: 't', approvalId: 'a', command: 'echo SECRET_TOKEN=abc123', cwd: '/w', revision: 1 });
    expect(approval.command).toBe('echo SECRET_TOKEN=***');
    expect(approval.paramsDigest).toBe(digestOf({ command: 'echo SECRET_TOKEN=abc123', cwd: '/w' }));
    expect(approval.paramsDigest).toBe(sha('{"command":"echo SECRET_TOKEN=abc123","cwd":"/w"}'));
  });

  it('masks a turn\'s input, the user\'s message and titles; leaves output alone', () => {
    expect(maskEvent('turn.started', { turnId: 't', input: { text: 'A_TOKEN=x ls' } }).input.text).toBe('A_TOKEN=*** ls');
    expect(maskEvent('message.user', { turnId: 't', text: 'A_TOKEN=x ls' }).text).toBe('A_TOKEN=*** ls');
    expect(maskEvent('session.updated', { title: 'deploy with API_KEY=1' }).title).toBe('deploy with API_KEY=***');
    const out = { turnId: 't', stream: 'stdout' as const, data: Buffer.from('A_TOKEN=x') };
    expect(maskEvent('command.output', out)).toBe(out);
  });
});
