// The host side of MCP Apps from the reference SDK, bundled for the test's host page.
export { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
