//! The log subscriber's second output: every warning and error the process logs is also
//! published to this node's [`LogHub`] (`mc admin logs`), as its message and fields.

use std::sync::{Arc, LazyLock};

use strata_s3::logs::{LogEntry, LogHub, LogLevel};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::Context;

/// The process's hub: made before the subscriber, handed to the node when it starts.
pub static LOGS: LazyLock<Arc<LogHub>> = LazyLock::new(Arc::default);

/// A subscriber layer that publishes warnings and errors to [`LOGS`].
pub struct ToHub;

/// An event's message and its other fields as `name=value`.
#[derive(Default)]
struct Text {
    message: String,
    fields: Vec<String>,
}

impl Visit for Text {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message = value.to_owned(),
            name => self.fields.push(format!("{name}={value}")),
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            name => self.fields.push(format!("{name}={value:?}")),
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ToHub {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let level = match *event.metadata().level() {
            tracing::Level::ERROR => LogLevel::Error,
            tracing::Level::WARN => LogLevel::Warning,
            _ => return,
        };
        let mut text = Text::default();
        event.record(&mut text);
        let mut message = text.message;
        for f in text.fields {
            message.push(' ');
            message.push_str(&f);
        }
        LOGS.publish(LogEntry {
            time: strata_types::time::now_nanos(),
            level,
            target: event.metadata().target().to_owned(),
            message,
        });
    }
}
