/**
 * What AI assistants read: the read-only MCP server (JSON-RPC 2.0, stateless, transport-agnostic)
 * with its nine tools, and the llms.txt overview of the public API.
 */
export { JsonRpcMessage, JsonRpcResponseBody } from './json-rpc.js';
export { type OpenApiSource, renderLlmsTxt } from './llms-txt.js';
export { customerLocale } from './locale.js';
export {
  describeTool,
  LATEST_PROTOCOL_VERSION,
  MAX_BATCH_MESSAGES,
  type McpCaller,
  type McpHttpAnswer,
  McpServer,
  negotiateProtocolVersion,
  SERVER_INFO,
  SUPPORTED_PROTOCOL_VERSIONS,
  type ToolDescription,
} from './server.js';
export { MCP_TOOLS, type McpTool } from './tools/index.js';
