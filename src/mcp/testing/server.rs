//! The conformance suite's server: the real studio server with the suite's fixture tools,
//! resources, prompts and in-memory tasks beside it (`serve --conformance-fixtures`, in test
//! builds only). Everything that is not a fixture goes to the studio server unchanged, so the
//! studio server itself knows nothing of fixtures.

use super::fixture_content;
use super::fixture_rounds::Rounds;
use super::fixtures::Fixtures;
use crate::mcp::server::{mid_call, Served, StudioServer};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams, CompleteResult, GetPromptRequestParams,
    GetPromptResponse, GetTaskParams, GetTaskResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use std::sync::Arc;

/// The studio server, with the conformance fixtures beside it.
#[derive(Clone)]
pub struct FixtureServer {
    studio: StudioServer,
    fixtures: Arc<Fixtures>,
    /// The input-required fixtures (and the key of their states).
    rounds: Arc<Rounds>,
}

impl FixtureServer {
    pub fn new(studio: StudioServer) -> anyhow::Result<FixtureServer> {
        let rounds = Rounds::new().map_err(|e| anyhow::anyhow!("the input-required fixtures: {}", e.message))?;
        Ok(FixtureServer { studio, fixtures: Arc::new(Fixtures::new()), rounds: Arc::new(rounds) })
    }

    /// Whether an id is one of the fixtures' in-memory tasks (UUIDs, never a durable `tsk_` id).
    fn holds(&self, task_id: &str) -> bool {
        self.fixtures.get_task(task_id).is_ok()
    }

    /// An input-required fixture for a legacy client in a session: each round's questions are
    /// asked as real requests ([`mid_call`]) and the fixture runs again with their answers, until
    /// it completes. Any other client gets the round's result as it is.
    async fn rounds_mid_call(
        &self,
        mut request: CallToolRequestParams,
        mut result: Result<CallToolResponse, McpError>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if !mid_call::can_ask(context) {
            return result;
        }
        for _ in 0..mid_call::MAX_ROUNDS {
            let asked = match result? {
                CallToolResponse::InputRequired(asked) => asked,
                done => return Ok(done),
            };
            request.input_responses = Some(mid_call::ask(context, asked.input_requests.unwrap_or_default()).await?);
            request.request_state = asked.request_state;
            result = self.rounds.call(&request, context).unwrap_or_else(|| Err(McpError::internal_error("the fixture went away", None)));
        }
        Err(McpError::internal_error(format!("{} asked more than {} rounds of questions", request.name, mid_call::MAX_ROUNDS), None))
    }
}

impl Served for FixtureServer {
    fn studio(&self) -> &StudioServer {
        &self.studio
    }

    fn for_one_request(&self) -> FixtureServer {
        FixtureServer { studio: self.studio.for_one_request(), fixtures: self.fixtures.clone(), rounds: self.rounds.clone() }
    }
}

impl ServerHandler for FixtureServer {
    fn get_info(&self) -> ServerConfig {
        self.studio.get_info()
    }

    async fn list_tools(&self, request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> Result<ListToolsResult, McpError> {
        let mut listed = self.studio.list_tools(request, context).await?;
        listed.tools.extend(self.fixtures.tools());
        Ok(listed)
    }

    async fn list_resources(&self, request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> Result<ListResourcesResult, McpError> {
        let first_page = request.as_ref().and_then(|r| r.cursor.as_ref()).is_none();
        let mut listed = self.studio.list_resources(request, context).await?;
        if first_page {
            listed.resources.splice(0..0, fixture_content::resources());
        }
        Ok(listed)
    }

    fn accepted_subscription_filter(&self, requested: &rmcp::model::SubscriptionFilter) -> Option<rmcp::model::SubscriptionFilter> {
        self.studio.accepted_subscription_filter(requested)
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        self.studio.listen(context).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let mut templates = self.studio.list_resource_templates(request, context).await?;
        templates.resource_templates.extend(fixture_content::templates());
        Ok(templates)
    }

    async fn read_resource(&self, request: ReadResourceRequestParams, context: RequestContext<RoleServer>) -> Result<ReadResourceResponse, McpError> {
        match fixture_content::read(&request.uri) {
            Some(result) => Ok(ReadResourceResponse::from(result)),
            None => self.studio.read_resource(request, context).await,
        }
    }

    async fn list_prompts(&self, request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> Result<ListPromptsResult, McpError> {
        let mut listed = self.studio.list_prompts(request, context).await?;
        listed.prompts.extend(fixture_content::prompts());
        listed.prompts.extend(Rounds::prompts());
        Ok(listed)
    }

    async fn get_prompt(&self, request: GetPromptRequestParams, context: RequestContext<RoleServer>) -> Result<GetPromptResponse, McpError> {
        if let Some(answer) = self.rounds.prompt(&request) {
            return answer;
        }
        let arguments = request
            .arguments
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|(name, value)| (name, value.as_str().map_or_else(|| value.to_string(), str::to_owned)))
            .collect();
        match fixture_content::prompt(&request.name, &arguments) {
            Some(result) => result.map(GetPromptResponse::from),
            None => self.studio.get_prompt(request, context).await,
        }
    }

    /// The fixtures' resources never change: a subscription to one is accepted, and sends nothing.
    #[allow(deprecated)]
    async fn subscribe(&self, request: rmcp::model::SubscribeRequestParams, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        if request.uri.starts_with("test://") {
            return Ok(());
        }
        self.studio.subscribe(request, context).await
    }

    #[allow(deprecated)]
    async fn unsubscribe(&self, request: rmcp::model::UnsubscribeRequestParams, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        if request.uri.starts_with("test://") {
            return Ok(());
        }
        self.studio.unsubscribe(request, context).await
    }

    #[allow(deprecated)]
    async fn set_level(&self, request: rmcp::model::SetLevelRequestParams, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        self.studio.set_level(request, context).await
    }

    async fn complete(&self, request: CompleteRequestParams, context: RequestContext<RoleServer>) -> Result<CompleteResult, McpError> {
        match fixture_content::complete(&request.r#ref, &request.argument.value) {
            Some(result) => Ok(result),
            None => self.studio.complete(request, context).await,
        }
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.studio.get_tool(name).or_else(|| self.fixtures.tool(name))
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, McpError> {
        if self.studio.get_tool(&request.name).is_some() || self.fixtures.tool(&request.name).is_none() {
            return self.studio.call_tool(request, context).await;
        }
        if let Some(result) = fixture_content::call(&request.name, &context).await {
            return result;
        }
        if let Some(result) = self.rounds.call(&request, &context) {
            return self.rounds_mid_call(request, result, &context).await;
        }
        let wants_task = context.client_capabilities().is_some_and(|c| c.supports_tasks());
        self.fixtures.call(request, wants_task).await
    }

    async fn get_task(&self, request: GetTaskParams, context: RequestContext<RoleServer>) -> Result<GetTaskResult, McpError> {
        if self.holds(&request.task_id) {
            return Ok(GetTaskResult::new(self.fixtures.get_task(&request.task_id)?));
        }
        self.studio.get_task(request, context).await
    }

    async fn update_task(&self, request: UpdateTaskParams, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        if self.holds(&request.task_id) {
            return self.fixtures.update_task(&request.task_id, request.input_responses);
        }
        self.studio.update_task(request, context).await
    }

    async fn cancel_task(&self, request: CancelTaskParams, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        if self.holds(&request.task_id) {
            return self.fixtures.cancel_task(&request.task_id);
        }
        self.studio.cancel_task(request, context).await
    }
}
