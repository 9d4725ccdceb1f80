import { describe, it, expect } from 'vitest';
import path from 'node:path';
import { checkSocketPath, endpointFor, pipeNameFor, socketPathFor } from '../../ipc/index.js';
import { AstraError } from '../../protocol/index.js';

describe('endpoints', () => {
  it('puts astra.sock in the runtime directory', () => {
    expect(socketPathFor('/run/user/1000/astra')).toBe(path.join('/run/user/1000/astra', 'astra.sock'));
    expect(endpointFor('/run/user/1000/astra', 'linux')).toBe('/run/user/1000/astra/astra.sock');
  });

  it('refuses a socket path over 103 bytes and names ASTRA_HOME as the fix', () => {
    const dir = '/tmp/' + 'd'.repeat(100);
    let caught: unknown;
    try {
      endpointFor(dir, 'darwin');
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(AstraError);
    const e = caught as AstraError;
    expect(e.reason).toBe('socket_path_too_long');
    expect(e.message).toContain('ASTRA_HOME');
    expect(e.data).toEqual({ path: path.join(dir, 'astra.sock'), bytes: Buffer.byteLength(path.join(dir, 'astra.sock')), max: 103 });
  });

  it('counts bytes, not characters, and accepts exactly 103 bytes', () => {
    expect(() => checkSocketPath('/' + 'a'.repeat(102))).not.toThrow();
    expect(() => checkSocketPath('/' + 'a'.repeat(103))).toThrow(AstraError);
    // 52 two-byte characters: 105 bytes though only 53 characters.
    expect(() => checkSocketPath('/' + 'é'.repeat(52))).toThrow(/set ASTRA_HOME/);
  });

  it('names a Windows pipe after a hash of the key', () => {
    const a = pipeNameFor('C:\\Users\\me\\AppData\\astra');
    expect(a).toMatch(/^\\\\\.\\pipe\\astra-[0-9a-f]{24}$/);
    expect(pipeNameFor('C:\\Users\\me\\AppData\\astra')).toBe(a);
    expect(pipeNameFor('C:\\Users\\other\\AppData\\astra')).not.toBe(a);
    expect(endpointFor('C:\\Users\\me\\AppData\\astra', 'win32')).toBe(a);
  });
});
