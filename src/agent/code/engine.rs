//! The interpreter a program runs in: QuickJS (through `rquickjs`) on a thread of its own.
//!
//! The thread owns the interpreter from start to end; nothing of it crosses to another
//! thread. A tool call leaves the thread as a [`ToolRequest`] on the program's event channel
//! and the thread blocks until the turn loop answers it, so the program sees its calls one
//! at a time, in the order it made them, exactly as the loop runs a turn's calls. The
//! [`Meter`] is polled by the interpreter on calls and backward jumps and stops the program
//! (an exception the program cannot catch) when it runs out of fuel or compute time, when its
//! output passes its bound, or when the loop has gone away.
//!
//! The context has no clock (no `Date`, no `performance`), no file system, no network and no
//! module loader: what a program can reach is its own heap and the tools.

use super::outcome::{ProgramError, ProgramErrorKind, ProgramOutcome};
use super::{CodeLimits, EngineEvent, ToolRequest};
use crate::agent::limits::{CODE_CALLS_MAX, CODE_FUEL_PER_POLL, CODE_RESULT_BYTES_MAX, CODE_STACK_BYTES};
use rquickjs::context::{EvalOptions, intrinsic};
use rquickjs::{CatchResultExt, CaughtError, Context, Ctx, Function, Runtime};
use serde_json::{Value, json};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The program's world: its tools as async functions, `console`, `args`.
const PRELUDE: &str = include_str!("prelude.js");

/// The file name a program's lines are reported under.
const FILE_NAME: &str = "program.js";

/// Why the meter stopped a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    Fuel,
    Time,
    Output,
    Calls,
    Abandoned,
}

/// What a program has spent, and what it has said, while it runs.
struct Meter {
    limits: CodeLimits,
    polls: Cell<u64>,
    started: Instant,
    /// Time spent waiting for tool calls, which is not compute time.
    waiting: Cell<Duration>,
    stop: Cell<Option<Stop>>,
    output: RefCell<String>,
    calls: Cell<u32>,
    /// What the program settled to: its value as JSON, or its error described as JSON.
    settled: RefCell<Option<(bool, String)>>,
    abandoned: Arc<AtomicBool>,
}

impl Meter {
    fn new(limits: CodeLimits, abandoned: Arc<AtomicBool>) -> Meter {
        Meter {
            limits,
            polls: Cell::new(0),
            started: Instant::now(),
            waiting: Cell::new(Duration::ZERO),
            stop: Cell::new(None),
            output: RefCell::new(String::new()),
            calls: Cell::new(0),
            settled: RefCell::new(None),
            abandoned,
        }
    }

    /// The interrupt poll: `true` stops the program.
    fn poll(&self) -> bool {
        if self.stop.get().is_some() {
            return true;
        }
        let polls = self.polls.get() + 1;
        self.polls.set(polls);
        let stop = if polls.saturating_mul(CODE_FUEL_PER_POLL) > self.limits.fuel {
            Some(Stop::Fuel)
        } else if self.compute_time() > Duration::from_millis(self.limits.time_ms) {
            Some(Stop::Time)
        } else if self.abandoned.load(Ordering::Relaxed) {
            Some(Stop::Abandoned)
        } else {
            None
        };
        self.stop.set(stop);
        stop.is_some()
    }

    fn compute_time(&self) -> Duration {
        self.started.elapsed().saturating_sub(self.waiting.get())
    }

    fn fuel_spent(&self) -> u64 {
        self.polls.get().saturating_mul(CODE_FUEL_PER_POLL)
    }

    /// One line of console output; past the bound the program is stopped.
    fn print(&self, line: &str) {
        let mut output = self.output.borrow_mut();
        if output.len() + line.len() + 1 > self.limits.output_bytes {
            self.stop.set(Some(Stop::Output));
            return;
        }
        output.push_str(line);
        output.push('\n');
    }

    /// A tool call, sent to the loop and waited for. The answer is JSON text the prelude
    /// reads: `{"ok": value}` or `{"error": {"code", "message"}}`.
    fn call(&self, events: &mpsc::Sender<EngineEvent>, name: String, arguments: &str) -> String {
        if let Some(stop) = self.stop.get() {
            return refusal("program_stopped", stop_message(stop, &self.limits));
        }
        let calls = self.calls.get() + 1;
        self.calls.set(calls);
        if calls > CODE_CALLS_MAX {
            self.stop.set(Some(Stop::Calls));
            return refusal("program_stopped", stop_message(Stop::Calls, &self.limits));
        }
        let arguments: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        let waited = Instant::now();
        let sent = events.blocking_send(EngineEvent::Call(ToolRequest { name, arguments, reply }));
        let answer = sent.ok().and_then(|()| answer.recv().ok());
        self.waiting.set(self.waiting.get() + waited.elapsed());
        match answer {
            Some(Ok(value)) => json!({"ok": value}).to_string(),
            Some(Err(error)) => json!({"error": {"code": error.code, "message": error.message}}).to_string(),
            None => {
                self.stop.set(Some(Stop::Abandoned));
                refusal("program_stopped", stop_message(Stop::Abandoned, &self.limits))
            }
        }
    }
}

fn refusal(code: &str, message: String) -> String {
    json!({"error": {"code": code, "message": message}}).to_string()
}

fn stop_message(stop: Stop, limits: &CodeLimits) -> String {
    match stop {
        Stop::Fuel => format!(
            "the program ran out of fuel ({} interpreter steps); do less work in one program, or \
             split it across turns",
            limits.fuel
        ),
        Stop::Time => format!(
            "the program computed for more than {} ms (time waiting for tool calls is not counted)",
            limits.time_ms
        ),
        Stop::Output => format!(
            "the program wrote more than {} bytes of console output; log less, or return the data \
             as the program's value",
            limits.output_bytes
        ),
        Stop::Calls => format!("the program made more than {CODE_CALLS_MAX} tool calls"),
        Stop::Abandoned => "the program was stopped because its agent stopped".to_string(),
    }
}

fn stop_kind(stop: Stop) -> ProgramErrorKind {
    match stop {
        Stop::Fuel => ProgramErrorKind::FuelExhausted,
        Stop::Time => ProgramErrorKind::TimeExhausted,
        Stop::Output => ProgramErrorKind::OutputTooLarge,
        Stop::Calls => ProgramErrorKind::TooManyCalls,
        Stop::Abandoned => ProgramErrorKind::Abandoned,
    }
}

/// The program thread's body: runs the program to its end and reports the outcome.
pub(super) fn run(
    source: &str,
    args: &Value,
    tools: &[String],
    limits: CodeLimits,
    events: mpsc::Sender<EngineEvent>,
    abandoned: Arc<AtomicBool>,
) {
    let meter = Rc::new(Meter::new(limits, abandoned));
    let result = execute(source, args, tools, &meter, &events);
    let output = meter.output.take();
    let outcome = ProgramOutcome { result, output, fuel: meter.fuel_spent(), calls: meter.calls.get() };
    // The loop may have gone away (its agent was stopped); then nobody is waiting for this.
    let _ = events.blocking_send(EngineEvent::Done(outcome));
}

fn execute(
    source: &str,
    args: &Value,
    tools: &[String],
    meter: &Rc<Meter>,
    events: &mpsc::Sender<EngineEvent>,
) -> Result<Value, ProgramError> {
    let runtime =
        Runtime::new().map_err(|e| ProgramError::engine(format!("cannot start the interpreter: {e}")))?;
    let memory_bytes = usize::try_from(meter.limits.memory_bytes).unwrap_or(usize::MAX);
    runtime.set_memory_limit(memory_bytes);
    runtime.set_max_stack_size(CODE_STACK_BYTES);
    let polled = Rc::clone(meter);
    runtime.set_interrupt_handler(Some(Box::new(move || polled.poll())));
    let context = Context::builder()
        .with::<intrinsic::Eval>()
        .with::<intrinsic::RegExpCompiler>()
        .with::<intrinsic::RegExp>()
        .with::<intrinsic::Json>()
        .with::<intrinsic::Proxy>()
        .with::<intrinsic::MapSet>()
        .with::<intrinsic::TypedArrays>()
        .with::<intrinsic::Promise>()
        .with::<intrinsic::WeakRef>()
        .build(&runtime)
        .map_err(|e| ProgramError::engine(format!("cannot start the interpreter: {e}")))?;
    context.with(|ctx| {
        install(&ctx, args, tools, meter, events)?;
        let wrapped = format!("__settle((async () => {{{source}\n}})())");
        let mut options = EvalOptions::default();
        options.filename = Some(FILE_NAME.to_string());
        options.strict = false;
        if let Err(caught) = ctx.eval_with_options::<(), _>(wrapped, options).catch(&ctx) {
            return Err(match meter.stop.get() {
                Some(stop) => ProgramError::new(stop_kind(stop), stop_message(stop, &meter.limits), None),
                None => caught_error(caught, memory_bytes),
            });
        }
        while ctx.execute_pending_job() {}
        Ok(())
    })?;
    if let Some(stop) = meter.stop.get() {
        return Err(ProgramError::new(stop_kind(stop), stop_message(stop, &meter.limits), None));
    }
    match meter.settled.take() {
        Some((true, json)) => settled_value(&json),
        Some((false, described)) => Err(described_error(&described, memory_bytes)),
        None if runtime.memory_usage().malloc_size >= (memory_bytes as i64) / 10 * 9 => {
            Err(out_of_memory(memory_bytes, None))
        }
        None => Err(ProgramError::new(
            ProgramErrorKind::Unsettled,
            "the program never finished: it awaits something that never settles (only tool \
             calls and promises the program itself resolves can settle)"
                .to_string(),
            None,
        )),
    }
}

/// The host functions the prelude takes, then the prelude.
fn install<'js>(
    ctx: &Ctx<'js>,
    args: &Value,
    tools: &[String],
    meter: &Rc<Meter>,
    events: &mpsc::Sender<EngineEvent>,
) -> Result<(), ProgramError> {
    let failed = |e: rquickjs::Error| ProgramError::engine(format!("cannot prepare the program: {e}"));
    let globals = ctx.globals();
    let (calling, sender) = (Rc::clone(meter), events.clone());
    let call = Function::new(ctx.clone(), move |name: String, arguments: String| {
        calling.call(&sender, name, &arguments)
    })
    .map_err(failed)?;
    let printing = Rc::clone(meter);
    let print = Function::new(ctx.clone(), move |line: String| printing.print(&line)).map_err(failed)?;
    let settling = Rc::clone(meter);
    let finish = Function::new(ctx.clone(), move |ok: bool, text: String| {
        settling.settled.replace(Some((ok, text)));
    })
    .map_err(failed)?;
    globals.set("__call", call).map_err(failed)?;
    globals.set("__print", print).map_err(failed)?;
    globals.set("__finish", finish).map_err(failed)?;
    globals.set("__tools", json!(tools).to_string()).map_err(failed)?;
    globals.set("__args", args.to_string()).map_err(failed)?;
    ctx.eval::<(), _>(PRELUDE)
        .catch(ctx)
        .map_err(|e| ProgramError::engine(format!("cannot prepare the program: {e}")))
}

/// The program's value, from the JSON the prelude wrote, bounded.
fn settled_value(json: &str) -> Result<Value, ProgramError> {
    if json.len() > CODE_RESULT_BYTES_MAX {
        return Err(ProgramError::new(
            ProgramErrorKind::ResultTooLarge,
            format!(
                "the program returned {} bytes of JSON, more than the {CODE_RESULT_BYTES_MAX} a result may \
                 have; return less, or keep the data in an object and return its id",
                json.len()
            ),
            None,
        ));
    }
    serde_json::from_str(json)
        .map_err(|e| ProgramError::engine(format!("the program's result is not readable JSON: {e}")))
}

/// An error the program threw (or a promise it rejected with), as the prelude described it.
fn described_error(described: &str, memory_bytes: usize) -> ProgramError {
    let value: Value = serde_json::from_str(described).unwrap_or(Value::Null);
    let text = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    let (name, message, stack) = (text("name"), text("message"), text("stack"));
    let line = line_of(&stack);
    if message.contains("out of memory") {
        return out_of_memory(memory_bytes, line);
    }
    let mut error = ProgramError::new(ProgramErrorKind::Exception, format!("{name}: {message}"), line);
    error.tool_code = value.get("code").and_then(Value::as_str).map(str::to_string);
    error
}

/// An exception raised while the program was read or started (a syntax error, most often).
fn caught_error(caught: CaughtError<'_>, memory_bytes: usize) -> ProgramError {
    let (text, stack) = match &caught {
        CaughtError::Exception(e) => {
            let message = e.message().unwrap_or_default();
            let name = e.get::<_, Option<String>>("name").ok().flatten().unwrap_or_else(|| "Error".into());
            (format!("{name}: {message}"), e.stack().unwrap_or_default())
        }
        other => (other.to_string(), String::new()),
    };
    let line = line_of(&stack).or_else(|| line_of(&text));
    if text.contains("out of memory") {
        return out_of_memory(memory_bytes, line);
    }
    let kind =
        if text.starts_with("SyntaxError") { ProgramErrorKind::Syntax } else { ProgramErrorKind::Exception };
    ProgramError::new(kind, text, line)
}

fn out_of_memory(memory_bytes: usize, line: Option<u32>) -> ProgramError {
    ProgramError::new(
        ProgramErrorKind::MemoryExhausted,
        format!("the program ran out of memory (its interpreter may use {memory_bytes} bytes)"),
        line,
    )
}

/// The first line of the program a stack trace names (`program.js:LINE`).
fn line_of(stack: &str) -> Option<u32> {
    let marker = format!("{FILE_NAME}:");
    let at = stack.find(&marker)? + marker.len();
    let digits: String = stack[at..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::line_of;

    #[test]
    fn a_stack_names_the_program_line() {
        assert_eq!(line_of("    at <anonymous> (program.js:3:7)\n    at <eval> (program.js:1)"), Some(3));
        assert_eq!(line_of("SyntaxError: unexpected token\n    at program.js:12:1"), Some(12));
        assert_eq!(line_of("no line here"), None);
    }
}
