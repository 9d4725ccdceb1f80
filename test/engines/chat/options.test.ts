import { describe, expect, it } from 'vitest';
import { isAstraError } from '../../../protocol/index.js';
import { chatApiKeyFromEnv, chatEngineConfig, parseChatOptions } from '../../../engines/chat/index.js';

function refused(raw: unknown, env: Record<string, string> = {}): { message: string; field: unknown } {
  try {
    parseChatOptions(raw, env);
  } catch (e) {
    if (isAstraError(e, 'invalid_params')) return { message: e.message, field: e.data.field };
    throw e;
  }
  throw new Error('parseChatOptions accepted it');
}

describe('chat engine options', () => {
  it('fills the base URL and maxSteps from the defaults and keeps the model given', () => {
    expect(parseChatOptions({ model: 'llama3.1' }, {})).toEqual({ model: 'llama3.1', baseUrl: 'http://127.0.0.1:11434/v1', maxSteps: 25 });
  });

  it('takes the model and base URL from ASTRA_CHAT_MODEL and ASTRA_CHAT_BASE_URL when the session gives none', () => {
    expect(parseChatOptions(undefined, { ASTRA_CHAT_MODEL: 'qwen2.5', ASTRA_CHAT_BASE_URL: 'http://gpu-box:8000/v1/' })).toEqual({
      model: 'qwen2.5',
      baseUrl: 'http://gpu-box:8000/v1',
      maxSteps: 25,
    });
  });

  it('lets the session\'s options win over the environment', () => {
    const o = parseChatOptions({ model: 'a', baseUrl: 'https://api.openai.com/v1', maxSteps: 3, systemPrompt: 'terse' }, { ASTRA_CHAT_MODEL: 'b', ASTRA_CHAT_BASE_URL: 'http://x/v1' });
    expect(o).toEqual({ model: 'a', baseUrl: 'https://api.openai.com/v1', maxSteps: 3, systemPrompt: 'terse' });
  });

  it('refuses a missing model with invalid_params saying how to give one', () => {
    const r = refused({});
    expect(r.field).toBe('engineOptions.model');
    expect(r.message).toContain('--model NAME');
    expect(r.message).toContain('ASTRA_CHAT_MODEL');
  });

  it('refuses a malformed URL, a non-http scheme, credentials in the URL and a query', () => {
    expect(refused({ model: 'm', baseUrl: 'not a url' }).message).toContain('is not a URL');
    expect(refused({ model: 'm', baseUrl: 'ftp://host/v1' }).message).toContain('http:// or https://');
    const cred = refused({ model: 'm', baseUrl: 'https://user:sk-secret@host/v1' });
    expect(cred.message).toContain('must not carry credentials');
    expect(cred.message).not.toContain('sk-secret');
    expect(refused({ model: 'm', baseUrl: 'http://host/v1?key=1' }).message).toContain('query');
    expect(refused({ model: 'm' }, { ASTRA_CHAT_BASE_URL: '::' }).field).toBe('ASTRA_CHAT_BASE_URL');
  });

  it("takes any port: the model client is Astra's own, not fetch (which refused the Fetch standard's bad ports such as 6000)", () => {
    for (const port of [1, 6000, 6666, 10080, 11434]) expect(parseChatOptions({ model: 'm', baseUrl: `http://127.0.0.1:${port}/v1` }, {}).baseUrl).toBe(`http://127.0.0.1:${port}/v1`);
  });

  it('refuses unknown options, a bad maxSteps and a non-map', () => {
    expect(refused({ model: 'm', temperature: 0 }).message).toContain('engineOptions.temperature is not an option');
    expect(refused({ model: 'm', maxSteps: 0 }).field).toBe('engineOptions.maxSteps');
    expect(refused({ model: 'm', maxSteps: 2.5 }).field).toBe('engineOptions.maxSteps');
    expect(refused({ model: '' }).field).toBe('engineOptions.model');
    expect(refused(['m']).field).toBe('engineOptions');
  });

  it('reads the key from ASTRA_CHAT_API_KEY, else OPENAI_API_KEY, and none is fine', () => {
    expect(chatApiKeyFromEnv({ ASTRA_CHAT_API_KEY: 'a', OPENAI_API_KEY: 'b' })).toBe('a');
    expect(chatApiKeyFromEnv({ OPENAI_API_KEY: 'b' })).toBe('b');
    expect(chatApiKeyFromEnv({})).toBeUndefined();
    expect(chatEngineConfig({}).apiKey).toBeUndefined();
    expect(chatEngineConfig({ OPENAI_API_KEY: 'b' }, { stallMs: 5 })).toMatchObject({ apiKey: 'b', stallMs: 5, maxRetryAfterMs: 30_000 });
  });
});
