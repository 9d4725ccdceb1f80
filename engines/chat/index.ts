// engines/chat/: the `chat` engine (an OpenAI-compatible model with a shell tool behind approvals).
export { createChatEngine } from './chat-engine.js';
export { isChatTurnContext, type ChatEngineContext, type ChatTurnContext, type ToolCommandOutcome } from './context.js';
export { runToolCommand } from './tool-command.js';
export { SHELL_TOOL, SHELL_TOOL_NAME, TOOL_RESULT_STATUSES, type ChatEventData, type ChatEventType, type ChatMessage, type ToolCall, type ToolResultStatus } from './messages.js';
export { MODEL_ERROR_CODES, ModelCancelledError, ModelError, chatRequestBody, scrubSecret, streamChatCompletion, type ModelErrorCode, type ModelRequest, type ModelStreamPart } from './model-stream.js';
export { proxyFromEnv, type ProxySettings } from './model-proxy.js';
export {
  CHAT_CONFIG_DEFAULTS,
  CHAT_KEY_VARIABLES,
  chatCommandEnv,
  CHAT_DEFAULT_BASE_URL,
  CHAT_DEFAULT_MAX_STEPS,
  chatApiKeyFromEnv,
  chatEngineConfig,
  normalizeBaseUrl,
  parseChatOptions,
  type ChatEngineConfig,
  type ChatSessionOptions,
} from './options.js';
export { OutputCapture, captureOutput, formatToolOutput, type CapturedOutput } from './tool-output.js';
export { DEFAULT_SYSTEM_PROMPT, INTERRUPTED_RESULT_OUTPUT, TRANSCRIPT_EVENT_TYPES, buildTranscript, interruptedToolResult, unansweredToolCalls, type RecordedEvent } from './transcript.js';
