//! A `tracing` subscriber that keeps every event, for scenarios that check what is logged.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One `tracing` event.
#[derive(Clone, Debug)]
pub struct Line {
    /// Its target (`backstop` for backstop's own).
    pub target: String,
    /// Its level.
    pub level: Level,
    /// Its message.
    pub message: String,
    /// Its other fields, as `name=value ` text.
    pub fields: String,
    /// The fields recorded as floating-point numbers.
    pub floats: Vec<&'static str>,
}

impl Line {
    /// The target, the message and the fields, as one line of text.
    #[must_use]
    pub fn text(&self) -> String {
        format!("{} {} {}", self.target, self.message, self.fields)
    }
}

/// Keeps every event of every target, at every level.
#[derive(Clone, Default)]
pub struct Capture(Arc<Mutex<Vec<Line>>>);

impl Capture {
    /// The events so far.
    #[must_use]
    pub fn lines(&self) -> Vec<Line> {
        self.0.lock().expect("capture lock").clone()
    }
}

struct Fields<'a>(&'a mut Line);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0.message = format!("{value:?}");
        } else {
            let _ = write!(self.0.fields, "{}={value:?} ", field.name());
        }
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.floats.push(field.name());
        self.record_debug(field, &value);
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut line = Line {
            target: event.metadata().target().to_owned(),
            level: *event.metadata().level(),
            message: String::new(),
            fields: String::new(),
            floats: Vec::new(),
        };
        event.record(&mut Fields(&mut line));
        self.0.lock().expect("capture lock").push(line);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}
