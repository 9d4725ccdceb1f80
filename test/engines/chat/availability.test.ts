// The chat engine's availability (engines/chat/availability.ts): configuration, one bounded probe of
// the default model server, its answer cached on an injected clock; nothing probed at create or
// through a proxy.
import { describe, expect, it } from 'vitest';
import { CACHE_MS, PROBE_TIMEOUT_MS, chatAvailability } from '../../../engines/chat/availability.js';

function probeOf(answers: (string | undefined)[]) {
  const calls: { host: string; port: number; timeoutMs: number }[] = [];
  const probe = async (host: string, port: number, timeoutMs: number) => {
    calls.push({ host, port, timeoutMs });
    return answers.shift();
  };
  return { calls, probe };
}

describe('chat availability', () => {
  it('is unavailable, not configured, without ASTRA_CHAT_MODEL, and probes nothing', async () => {
    const p = probeOf([]);
    const a = await chatAvailability({}, { proxied: false, probe: p.probe })();
    expect(a.available).toBe(false);
    expect(a.reason).toMatch(/^not configured: .*ASTRA_CHAT_MODEL/);
    expect(p.calls).toEqual([]);
  });

  it('a malformed ASTRA_CHAT_BASE_URL is not configured, naming it', async () => {
    const a = await chatAvailability({ ASTRA_CHAT_MODEL: 'm', ASTRA_CHAT_BASE_URL: 'ftp://x' }, { proxied: false, probe: probeOf([]).probe })();
    expect(a).toMatchObject({ available: false, reason: expect.stringMatching(/^not configured: ASTRA_CHAT_BASE_URL must be an http/) });
  });

  it('probes the default server once per CACHE_MS, bounded by PROBE_TIMEOUT_MS, and says what to do when it does not answer', async () => {
    let now = 1000;
    const p = probeOf(['ECONNREFUSED', undefined]);
    const check = chatAvailability({ ASTRA_CHAT_MODEL: 'm', ASTRA_CHAT_BASE_URL: 'http://[::1]:9999/v1/' }, { proxied: false, probe: p.probe, now: () => now });
    const first = await check();
    expect(first.available).toBe(false);
    expect(first.reason).toBe('unreachable: the model server at http://[::1]:9999/v1 does not answer (ECONNREFUSED); start it (`ollama serve`) or point the daemon at yours: ASTRA_CHAT_BASE_URL=<url> astra daemon restart');
    now += CACHE_MS - 1;
    expect(await check()).toEqual(first);
    expect(p.calls).toEqual([{ host: '::1', port: 9999, timeoutMs: PROBE_TIMEOUT_MS }]);
    now += 1;
    expect(await check()).toEqual({ available: true });
    expect(p.calls).toHaveLength(2);
  });

  it('the default base URL and https ports; concurrent checks share one probe', async () => {
    const p = probeOf([undefined]);
    const check = chatAvailability({ ASTRA_CHAT_MODEL: 'm' }, { proxied: false, probe: p.probe, now: () => 0 });
    expect(await Promise.all([check(), check()])).toEqual([{ available: true }, { available: true }]);
    expect(p.calls).toEqual([{ host: '127.0.0.1', port: 11434, timeoutMs: PROBE_TIMEOUT_MS }]);
    const s = probeOf([undefined]);
    await chatAvailability({ ASTRA_CHAT_MODEL: 'm', ASTRA_CHAT_BASE_URL: 'https://api.example.com/v1' }, { proxied: false, probe: s.probe })();
    expect(s.calls[0]).toMatchObject({ host: 'api.example.com', port: 443 });
  });

  it('at create (options given) and through a proxy, nothing is probed: available', async () => {
    const p = probeOf([]);
    expect(await chatAvailability({}, { proxied: false, probe: p.probe })({ model: 'm', baseUrl: 'http://127.0.0.1:1/v1', maxSteps: 1 })).toEqual({ available: true });
    expect(await chatAvailability({ ASTRA_CHAT_MODEL: 'm' }, { proxied: true, probe: p.probe })()).toEqual({ available: true });
    expect(p.calls).toEqual([]);
  });
});
