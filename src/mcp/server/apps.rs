//! MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865): the studio's view served as a `ui://`
//! resource of type `text/html;profile=mcp-app`, and the tool `_meta` (`ui.resourceUri`) that tells
//! a host to render the answers of the tools the table marks as drawn by the view. The document and its
//! data live in `crate::view`; this file only serves it. Clients that render no apps ignore both,
//! and see the same text and structured results as before.

use crate::view;
use rmcp::model::{JsonObject, MetaObject, ReadResourceResult, Resource, ResourceContents, Tool};
use serde_json::json;

/// The extension's name in `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The one MIME type the extension defines for HTML views.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";
/// The view's address.
pub const VIEW_URI: &str = "ui://studioflow/view.html";

/// The extension's settings, as the server declares them.
pub fn settings() -> JsonObject {
    let mut settings = JsonObject::new();
    settings.insert("mimeTypes".into(), json!([MIME_TYPE]));
    settings
}

/// Points a tool at the view (`_meta.ui.resourceUri`): a host renders its answers with it.
pub fn point_at_view(tool: &mut Tool) {
    let mut meta = tool.meta.take().unwrap_or_default();
    meta.0.insert("ui".into(), json!({"resourceUri": VIEW_URI}));
    tool.meta = Some(meta);
}

/// The resource's `_meta.ui`: a border around it, and no network at all (the host's strictest
/// content security policy applies, since no domain is declared).
fn resource_meta() -> MetaObject {
    let mut meta = MetaObject::new();
    meta.0.insert("ui".into(), json!({"prefersBorder": true}));
    meta
}

/// The view, as `resources/list` shows it.
pub fn resource() -> Resource {
    Resource::new(VIEW_URI, "studioflow-view")
        .with_title("Studio timeline and reflow review")
        .with_description(
            "The rooms' bookings on a timeline (day, week or month) and a reflow's review: moves before and after, \
             unresolved bookings with their reasons, counts, and Apply or Decline for a stored plan.",
        )
        .with_mime_type(MIME_TYPE)
        .with_size(view::HTML.len() as u64)
        .with_meta(resource_meta())
}

/// `resources/read` of `uri`: the view, or `None` for any other address.
pub fn read(uri: &str) -> Option<ReadResourceResult> {
    (uri == VIEW_URI).then(|| {
        ReadResourceResult::new(vec![
            ResourceContents::text(view::HTML, VIEW_URI).with_mime_type(MIME_TYPE).with_meta(resource_meta()),
        ])
    })
}
