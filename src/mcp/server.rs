//! The MCP server: rmcp's `ServerHandler` over the studio's tools. It lists the tools, runs each
//! call's handler on a blocking thread (SQLite and the solver never run on an async worker), and
//! turns the answer into a `CallToolResult` with structured content and a one-line summary.

use super::tools::{self, Ctx, ToolError, ToolSpec};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use std::sync::Arc;

/// The studio as an MCP server. Cheap to clone: HTTP makes one per request.
#[derive(Clone)]
pub struct StudioServer {
    ctx: Arc<Ctx>,
    tools: Arc<Vec<ToolSpec>>,
}

impl StudioServer {
    pub fn new(ctx: Ctx) -> Self {
        StudioServer { ctx: Arc::new(ctx), tools: Arc::new(tools::all()) }
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.tools.iter().position(|t| t.tool.name == name)
    }

    /// Runs a tool by name and shapes its answer.
    async fn run_tool(&self, index: usize, arguments: rmcp::model::JsonObject) -> Result<CallToolResult, McpError> {
        let this = self.clone();
        let name = self.tools[index].tool.name.clone();
        let outcome = tokio::task::spawn_blocking(move || (this.tools[index].run)(&this.ctx, arguments))
            .await
            .map_err(|e| McpError::internal_error(format!("the {name} handler stopped: {e}"), None))?;
        match outcome {
            Ok(reply) => {
                let mut result = CallToolResult::success(vec![ContentBlock::text(reply.summary)]);
                result.structured_content = Some(reply.structured);
                Ok(result)
            }
            Err(ToolError::Fix(message)) => Ok(CallToolResult::error(vec![ContentBlock::text(message)])),
            Err(ToolError::Internal(message)) => {
                tracing::error!(tool = %name, error = %message, "tool failed");
                Err(McpError::internal_error(format!("{name} failed inside the server: {message}"), None))
            }
        }
    }
}

impl ServerHandler for StudioServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("studioflow", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "studioflow keeps a studio's bookings. Times are RFC 3339 with an offset, or local \
                 studio time such as 2026-09-07T10:00. Quick tools answer at once; when a room goes \
                 offline, call set_room_offline and then reflow_month for each month it touches.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.iter().map(|t| t.tool.clone()).collect()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.find(name).map(|i| self.tools[i].tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let index = self
            .find(&request.name)
            .ok_or_else(|| McpError::invalid_params(format!("unknown tool {:?}: call tools/list to see the tools", request.name), None))?;
        let result = self.run_tool(index, request.arguments.unwrap_or_default()).await?;
        Ok(CallToolResponse::Complete(result))
    }
}
