// The Chat Completions shapes the engine sends (messages, the one tool) and the chat engine's own
// events in the exact shapes it emits (each a narrowing of protocol/'s EVENT_DATA entry).

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export const SHELL_TOOL_NAME = 'shell';

/** The one tool the engine offers. */
export const SHELL_TOOL = {
  type: 'function',
  function: {
    name: SHELL_TOOL_NAME,
    description:
      "Run a command line with /bin/sh -c in the session's working directory, after the user approves it. " +
      'The result gives the exit code and the head and tail of the combined stdout and stderr.',
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'string', description: 'The command line to run.' },
        cwd: { type: 'string', description: "Directory to run it in, absolute or relative to the session's (default: the session's)." },
      },
      required: ['command'],
      additionalProperties: false,
    },
  },
} as const;

export { TOOL_RESULT_STATUSES, type ToolResultStatus } from '../../protocol/index.js';
import type { ToolResultStatus } from '../../protocol/index.js';

/** The events the chat engine emits, with the fields it always sets. */
export interface ChatEventData {
  'message.delta': { turnId: string; text: string };
  'message.completed': { turnId: string; text: string; finishReason: string };
  'tool.call': { turnId: string; callId: string; name: string; arguments: string };
  'tool.result': { turnId: string; callId: string; status: ToolResultStatus; exitCode?: number | null; output: string };
  usage: { turnId: string; promptTokens: number; completionTokens: number };
  error: { turnId: string; code: string; message: string; retryable: boolean };
}
export type ChatEventType = keyof ChatEventData;
