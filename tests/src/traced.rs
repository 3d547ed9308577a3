//! A `tracing` subscriber that keeps every event, for scenarios that check what is logged.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, Once};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
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

    /// Runs `f` with every event of this thread kept here.
    ///
    /// The events go through one global subscriber (set at the first call) that hands each to
    /// the capture of its thread. `tracing` caches whether a callsite is enabled for the whole
    /// process: with a thread-local default per test (`with_default`), a test that drops its
    /// subscriber while another sets one can leave a callsite disabled for every thread, and
    /// a test then sees no event at all. The router is always there and answers "sometimes".
    pub fn during<T>(&self, f: impl FnOnce() -> T) -> T {
        static ROUTER: Once = Once::new();
        ROUTER.call_once(|| {
            // Fails only if another global subscriber is set: then that one gets the events,
            // and the capture stays empty, which the test reports.
            let _ = tracing::subscriber::set_global_default(Router);
        });
        let previous = CURRENT.with(|c| c.replace(Some(self.clone())));
        let restore = Restore(previous);
        let out = f();
        drop(restore);
        out
    }
}

thread_local! {
    /// The capture of this thread's events, while [`Capture::during`] runs.
    static CURRENT: RefCell<Option<Capture>> = const { RefCell::new(None) };
}

/// Puts the thread's previous capture back, even if the test panics.
struct Restore(Option<Capture>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// The global subscriber: each event to its thread's capture, if any.
struct Router;

impl Subscriber for Router {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::sometimes()
    }
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        CURRENT.with(|c| c.borrow().is_some())
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let capture = CURRENT.with(|c| c.borrow().clone());
        if let Some(capture) = capture {
            capture.event(event);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
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
